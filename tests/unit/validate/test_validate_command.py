"""`sccnlp validate`: extra vars, --from-fragments, exit status."""

from __future__ import annotations

import argparse
import io
import json

import pytest

from sccnlp.commands import validate as cmd
from sccnlp.errors import SccError
from sccnlp.gates.evaluate import build_fragment

RUN = {"started": "2026-12-02T10:00:00Z", "cluster": "scc_cluster", "inventory": "inv.yml"}


def _write(report_dir, host, value, floor):
    frag = build_fragment({"host": host, "run": RUN, "floors": {"mpi_nodes_answering": floor},
                           "measurements": [{"name": "mpi_nodes_answering", "value": value, "unit": "nodes"}]})
    (report_dir / "fragments").mkdir(parents=True, exist_ok=True)
    (report_dir / "fragments" / f"{host}.json").write_text(json.dumps(frag))


def _args(report_dir, **kw):
    base = {"inventory": None, "limit": None, "report_dir": str(report_dir), "extra_var": [],
            "from_fragments": True, "verbose": False}
    base.update(kw)
    return argparse.Namespace(**base)


def test_extravars_json_values():
    got = cmd._extravars(['validate_floors_override={"cluster": {"shared_storage_write_mbps": 1e9}}', "a=b"])
    assert got == {"validate_floors_override": {"cluster": {"shared_storage_write_mbps": 1e9}}, "a": "b"}


@pytest.mark.parametrize("bad", ["novalue", "=x", "x={not json"])
def test_extravars_errors(bad):
    with pytest.raises(SccError):
        cmd._extravars([bad])


def test_from_fragments_pass_and_fail(tmp_path):
    _write(tmp_path, "node-1", 3, 3)
    out = io.StringIO()
    assert cmd.run(_args(tmp_path), stream=out) == 0
    assert (tmp_path / "report.json").exists() and (tmp_path / "report.html").exists()
    _write(tmp_path, "node-2", 2, 3)
    out = io.StringIO()
    assert cmd.run(_args(tmp_path), stream=out) == 1
    assert "node-2: mpi_nodes_answering 2 < floor 3" in out.getvalue()


def test_no_fragments_is_one_clear_error(tmp_path):
    with pytest.raises(SccError, match="no result fragments"):
        cmd.run(_args(tmp_path))


def test_inventory_required_without_from_fragments(tmp_path):
    with pytest.raises(SccError, match="needs -i INVENTORY"):
        cmd.run(_args(tmp_path, from_fragments=False))
