from __future__ import annotations

from ansible_collections.scc.nlp_training.plugins.module_utils.parsers.nccl_tests import parse_nccl_tests


def test_h100_two_nodes_wrong_column(fixture_text):
    out = parse_nccl_tests(fixture_text("nccl_tests", "h100_2node_all_reduce_wrong_column.txt"))
    assert out["header"]["nGpus"] == 1 and out["header"]["maxBytes"] == 8589934592 and out["header"]["iters"] == 20
    assert len(out["ranks"]) == 16
    assert {r["host"] for r in out["ranks"]} == {"ztan-mig-235z", "ztan-mig-gq73"}
    assert out["ranks"][15] == {"rank": 15, "group": 0, "pid": 6740, "host": "ztan-mig-gq73", "device": 7,
                                "bus_id": "0000:8c:00", "name": "NVIDIA H100 80GB HBM3"}
    assert len(out["rows"]) == 31
    last = out["rows"][-1]
    assert last["size"] == 8589934592 and last["type"] == "float" and last["redop"] == "sum" and last["root"] == -1
    assert last["out_of_place"] == {"time_us": 47535, "algbw": 180.71, "busbw": 338.82, "wrong": 0, "error": None}
    assert last["in_place"]["busbw"] == 337.35
    assert out["avg_busbw"] == 70.742
    assert out["out_of_bounds"] == {"count": 0, "ok": True}
    assert out["max_busbw"] == 338.82
    assert len(out["runs"]) == 1


def test_old_error_column_and_info_lines(fixture_text):
    out = parse_nccl_tests(fixture_text("nccl_tests", "k80_all_reduce_error_column.txt"))
    assert len(out["ranks"]) == 4 and out["ranks"][0]["group"] is None and out["ranks"][0]["name"] == "Tesla K80"
    assert len(out["rows"]) == 7  # the "NCCL INFO Launch mode Parallel" line is not a row
    row = out["rows"][0]
    assert row["root"] is None and row["out_of_place"]["error"] == 2e-07 and row["out_of_place"]["wrong"] is None
    assert out["avg_busbw"] == 2.54225


def test_na_wrong_and_no_summary(fixture_text):
    out = parse_nccl_tests(fixture_text("nccl_tests", "a100_sendrecv_na_wrong.txt"))
    assert len(out["rows"]) == 4
    assert all(r["in_place"]["wrong"] is None and r["out_of_place"]["wrong"] == 0 for r in out["rows"])
    assert out["avg_busbw"] is None and out["out_of_bounds"] is None
    assert out["max_busbw"] == 195.56


def test_mpirun_prefixed_lines_and_failed_bounds():
    text = "\n".join([
        "[1,0]<stdout>:#       size         count      type   redop    root     time   algbw   busbw #wrong"
        "     time   algbw   busbw #wrong",
        "[1,0]<stdout>:           8             2     float     sum      -1    12.90    0.00    0.00      0"
        "    12.87    0.00    0.00      0",
        "[1,0]<stdout>:# Out of bounds values : 4 FAILED",
        "[1,0]<stdout>:# Avg bus bandwidth    : 92.3405 ",
    ])
    out = parse_nccl_tests(text)
    assert len(out["rows"]) == 1 and out["rows"][0]["in_place"]["time_us"] == 12.87
    assert out["out_of_bounds"] == {"count": 4, "ok": False}
    assert out["avg_busbw"] == 92.3405


def test_empty():
    out = parse_nccl_tests("")
    assert out["rows"] == [] and out["runs"] == [] and out["avg_busbw"] is None
