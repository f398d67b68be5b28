"""The training runtime on a deployed test bed, as a user reads it from one validation report (issue 5's "done").

Needs a converged test bed (`sccnlp up`, i.e. site.yml deployed) whose inventory is in SCCNLP_TESTBED_INVENTORY;
`scripts/test.sh e2e` does both. Runs `sccnlp validate` into a temporary report directory and checks that every
node has the same venv, and that the report and the printed summary name each node's Python, framework, CUDA
libraries and communication backends.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.testbed


@pytest.fixture(scope="module")
def validated(testbed_inventory: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict]:
    report_dir = tmp_path_factory.mktemp("validate-report")
    done = subprocess.run([sys.executable, "-m", "sccnlp.cli", "validate", "-i", testbed_inventory,
                           "--report-dir", str(report_dir)], capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, f"sccnlp validate failed:\n{done.stdout[-4000:]}\n{done.stderr[-2000:]}"
    return done.stdout, json.loads((report_dir / "report.json").read_text())


def test_every_node_reports_its_training_stack(validated: tuple[str, dict]) -> None:
    _out, report = validated
    nodes = report["nodes"]
    assert len(nodes) >= 2
    for host, node in nodes.items():
        facts = node["facts"]
        assert re.fullmatch(r"3\.\d+\.\d+", facts["python"] or ""), (host, facts.get("python"))
        assert re.fullmatch(r"torch==\d+\.\d+\.\d+\+cpu", facts["framework"] or ""), (host, facts.get("framework"))
        # No GPU on the test bed: no CUDA libraries in the venv, and the reason the backend is native.
        assert (facts["nccl"], facts["cudnn"]) == (None, None), host
        assert facts["training_backend"].startswith("native ("), (host, facts["training_backend"])
        assert facts["comm_backend"].startswith("nccl/socket ("), (host, facts["comm_backend"])
        assert facts["venv"] == "/opt/scc/venv", host


def test_every_node_has_the_same_venv(validated: tuple[str, dict]) -> None:
    _out, report = validated
    hashes = {host: node["facts"]["venv_packages_sha256"] for host, node in report["nodes"].items()}
    assert len(set(hashes.values())) == 1 and None not in hashes.values(), hashes
    check = next(c for c in report["cluster"]["checks"] if c["name"] == "venv_packages_identical")
    assert check["status"] == "pass" and check["measured"] in (1, "1"), check


def test_summary_prints_one_software_line_for_identical_nodes(validated: tuple[str, dict]) -> None:
    out, report = validated
    lines = out.splitlines()
    head = lines.index("Software: the same on every node")
    stack = lines[head + 1]
    assert stack.startswith("  " + ", ".join(sorted(report["nodes"])) + ": Python 3."), stack
    assert ", framework torch==" in stack and ", backend native, NCCL transport nccl/socket (" in stack, stack
