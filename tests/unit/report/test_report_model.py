from __future__ import annotations

import json

import pytest

from sccnlp.errors import SccError
from sccnlp.report import model


def test_valid_results_load_from_dict_and_file(results, tmp_path):
    assert model.load(results) is results
    path = tmp_path / "results.json"
    path.write_text(json.dumps(results))
    assert model.load(path) == results


@pytest.mark.parametrize(("mutate", "message"), [
    (lambda r: r.pop("run"), "results: 'run' is missing or malformed"),
    (lambda r: r["run"].pop("inventory"), "run.inventory is missing or malformed; expected a string"),
    (lambda r: r.update(nodes={}), "'nodes' is missing or malformed; expected an object with at least one node"),
    (lambda r: r["nodes"]["gpu2"].pop("facts"), "nodes['gpu2'].facts is missing"),
    (lambda r: r["nodes"]["gpu1"]["checks"][1].update(status="ok"),
     "nodes['gpu1'].checks[1] (rdma_ports_active).status is missing or malformed; expected one of pass|fail|skip"),
    (lambda r: r["nodes"]["gpu1"]["checks"][0].update(measured="360"),
     "nodes['gpu1'].checks[0] (nccl_all_reduce_busbw).measured is missing or malformed; expected a number or null"),
    (lambda r: r["nodes"]["gpu1"]["checks"][0].update(floor=True), "checks[0] (nccl_all_reduce_busbw).floor"),
    (lambda r: r["nodes"]["gpu1"]["checks"][2].pop("detail"), "checks[2] (ib_write_bw_loopback).detail"),
    (lambda r: r["nodes"]["gpu2"]["curves"]["nccl_all_reduce"][0].pop("size"),
     "nodes['gpu2'].curves['nccl_all_reduce'][0].size is missing or malformed; expected a byte count"),
    (lambda r: r["cluster"]["checks"][0].pop("name"), "cluster.checks[0].name is missing"),
])
def test_malformed_results_name_the_place(results, mutate, message):
    mutate(results)
    with pytest.raises(SccError) as err:
        model.load(results)
    assert message in str(err.value)
    assert "re-run" in str(err.value)  # says how to fix it


def test_unreadable_files(tmp_path):
    with pytest.raises(SccError, match="does not exist: run `sccnlp validate` first"):
        model.load(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(SccError, match=r"bad.json is not valid JSON \(line 1"):
        model.load(bad)


def test_status_rules(results):
    assert model.node_status(results["nodes"]["gpu1"]) == "fail"
    assert model.node_status(results["nodes"]["gpu2"]) == "pass"
    assert model.overall_status(results) == "fail"
    results["nodes"]["gpu1"]["checks"][0]["status"] = "pass"
    assert model.overall_status(results) == "pass"
    only_skips = [{"name": "x", "status": "skip", "measured": None, "floor": 1, "unit": "", "detail": ""}]
    assert model.status_of(only_skips) == "skip"  # a skip is never a pass
    assert model.status_of([]) == "skip"
    results["cluster"]["checks"][0]["status"] = "fail"
    assert model.overall_status(results) == "fail"  # a cluster failure fails the run
