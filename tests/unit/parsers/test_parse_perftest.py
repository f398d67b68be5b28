from __future__ import annotations

import pytest
from ansible_collections.scc.nlp_training.plugins.module_utils.parsers.perftest import parse_perftest


def test_write_bw_gbits_sweep(fixture_text):
    out = parse_perftest(fixture_text("perftest", "ib_write_bw_gbits_sweep_roce.txt"))
    assert out["test"] == "RDMA_Write BW Test" and out["kind"] == "bw" and out["unit"] == "Gb/sec"
    assert out["device"] == "mlx5_0" and out["link_type"] == "Ethernet" and out["gid_index"] == 5
    assert len(out["rows"]) == 23
    assert [r["bytes"] for r in out["rows"]][:3] == [2, 4, 8]
    assert out["rows"][-1] == {"bytes": 8388608, "iterations": 5000, "bw_peak": 92.39, "bw_avg": 92.39,
                               "msg_rate_mpps": 0.001377, "bw_avg_gbps": 92.39}
    assert out["summary"]["max_bw_avg_gbps"] == 92.46


def test_send_bw_mb_per_sec_is_mebibytes(fixture_text):
    out = parse_perftest(fixture_text("perftest", "ib_send_bw_mbsec_rdma_cm.txt"))
    assert out["unit"] == "MB/sec" and out["test"] == "Send BW Test"
    row = out["rows"][0]
    assert row["bw_avg"] == 11714.10 and row["bw_peak"] == 0.0
    # perftest's MB is 2^20 bytes: 11714.10 * 1048576 * 8 / 1e9
    assert row["bw_avg_gbps"] == pytest.approx(98.265, abs=0.001)


def test_send_bw_mib_sweep_with_elision(fixture_text):
    out = parse_perftest(fixture_text("perftest", "ib_send_bw_mibsec_sweep_client.txt"))
    assert out["unit"] == "MiB/sec" and len(out["rows"]) == 14
    assert out["summary"]["max_bw_avg_gbps"] == pytest.approx(23547.97 * 1048576 * 8 / 1e9, rel=1e-4)


def test_write_lat_with_cpu_frequency_warnings(fixture_text):
    out = parse_perftest(fixture_text("perftest", "ib_write_lat_mlx4_cpufreq_warnings.txt"))
    assert out["kind"] == "lat" and out["test"] == "RDMA_Write Latency Test" and out["device"] == "mlx4_0"
    assert out["rows"] == [{"bytes": 2, "iterations": 1000, "t_min": 1.76, "t_max": 7.68, "t_typical": 1.88,
                            "t_avg": 1.96, "t_stdev": 0.49, "p99": 5.28, "p99_9": 7.68}]


def test_send_lat_sweep(fixture_text):
    out = parse_perftest(fixture_text("perftest", "ib_send_lat_sweep_client.txt"))
    assert len(out["rows"]) == 14
    assert out["summary"]["min_t_typical_usec"] == 1.58
    assert out["rows"][-1]["bytes"] == 16384 and out["rows"][-1]["p99_9"] == 5.58


def test_no_results_table():
    out = parse_perftest(" Couldn't connect to 10.0.0.1:18515\n")
    assert out["rows"] == [] and out["kind"] is None and out["summary"] == {"rows": 0}
