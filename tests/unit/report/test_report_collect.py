from __future__ import annotations

import json

import pytest

from sccnlp.errors import SccError
from sccnlp.report.collect import merge


def write(path, data):
    path.write_text(json.dumps(data))
    return path


def fragments(results, tmp_path):
    run = dict(results["run"])
    first = write(tmp_path / "gpu1.json", {"run": {**run, "finished": "2026-12-02T10:20:00+00:00"},
                                           "nodes": {"gpu1": results["nodes"]["gpu1"]}})
    # a later finish written in another time zone: 11:21:30+01:00 == 10:21:30Z
    second = write(tmp_path / "gpu2.json", {"run": {**run, "started": "2026-12-02T11:05:00+01:00",
                                                    "finished": "2026-12-02T11:21:30+01:00"},
                                            "nodes": {"gpu2": results["nodes"]["gpu2"]},
                                            "cluster": results["cluster"]})
    return [first, second]


def test_merge_fragments(results, tmp_path):
    merged = merge(fragments(results, tmp_path))
    assert sorted(merged["nodes"]) == ["gpu1", "gpu2"]
    assert merged["run"]["started"] == "2026-12-02T10:00:00+00:00"
    assert merged["run"]["finished"] == "2026-12-02T11:21:30+01:00"
    assert merged["cluster"]["checks"] == results["cluster"]["checks"]
    assert list(merged["cluster"]["curves"]) == ["nccl_all_reduce_2_nodes"]


def test_duplicate_host_names_both_files(results, tmp_path):
    files = fragments(results, tmp_path)
    dup = write(tmp_path / "gpu1-old.json", {"run": results["run"], "nodes": {"gpu1": results["nodes"]["gpu1"]}})
    with pytest.raises(SccError, match=r"node 'gpu1' appears in both .*gpu1-old.json and .*gpu1.json"):
        merge([*files, dup])


def test_fragments_from_different_runs(results, tmp_path):
    files = fragments(results, tmp_path)
    other = write(tmp_path / "gpu3.json", {"run": {**results["run"], "cluster": "other"},
                                           "nodes": {"gpu3": results["nodes"]["gpu2"]}})
    with pytest.raises(SccError, match=r"run\.cluster is 'other' but another fragment says 'scc-demo'"):
        merge([*files, other])


def test_bad_fragments(results, tmp_path):
    with pytest.raises(SccError, match="no result fragments to merge"):
        merge([])
    broken = tmp_path / "gpu9.json"
    broken.write_text('{"nodes": ')
    with pytest.raises(SccError, match=r"gpu9\.json is not valid JSON"):
        merge([broken])
    no_run = write(tmp_path / "gpu8.json", {"nodes": {"gpu8": results["nodes"]["gpu2"]}})
    with pytest.raises(SccError, match=r"merged results \(.*gpu8.json\): run.started is missing"):
        merge([no_run])
