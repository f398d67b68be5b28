"""The bert role's launch and follow (tasks/train.yml) through a real ansible-playbook run on localhost, with a
stand-in for mpirun that fails the way a full storage makes the trainer fail: the role learns the exit status from
the first node's own disk, its message leads with the storage line, and the shared storage gets copies."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "tool_outputs" / "mpirun"

STORAGE_LINE = ("checkpoint {run}/ckpt-30.pt not written ([Errno 28] No space left on device); storage {run}: 0.00 "
                "GiB free of 20.00 GiB. The previous checkpoint is kept.")
MPIRUN = """#!/bin/bash
echo "[1,0]<stdout>:step=30 loss=7.1"
echo "[1,1]<stderr>:[rank 1] heartbeat not written ([Errno 28] No space left on device)"
echo "[1,0]<stderr>:sccnlp.node.bert.train: error: {line}"
exit 78
"""


def _run_role(bert_tasks: Any, tmp_path: Path, mpirun_script: str) -> list[str]:
    """The role's train tasks on localhost with `mpirun_script` standing in for mpirun: the failure messages."""
    mpirun = tmp_path / "mpirun"
    mpirun.write_text(mpirun_script)
    mpirun.chmod(0o755)
    data = tmp_path / "shared" / "data" / "phase1_seq128"
    settings = {
        "bert_venv": str(Path(sys.executable).parent.parent), "bert_runs_root": str(tmp_path / "shared" / "runs"),
        "bert_run_name": "r", "bert_local_state_dir": str(tmp_path / "local"), "bert_mpirun": str(mpirun),
        "bert_env_file": str(tmp_path / "none.env"), "bert_mpi_hostfile": str(tmp_path / "mpihosts"),
        "bert_model": "tiny", "bert_min_free_gib": 0.001, "bert_poll_interval": 1, "bert_train_timeout": 120,
        "_bert_plan": {"data_dir": str(data.parent), "phase_dirs": {"1": str(data)}},
        "_bert_slot_hosts": ["localhost", "localhost"], "_bert_slot_counts": [1, 1],
        # what readiness decides on the first node (plugins/plugin_utils/bert_launch.py): two ranks, torch
        "_bert_launch": {"framework": "pytorch", "backend": "torch", "reason": "bert_comm_backend is torch", "np": 2,
                         "map_by": "slot", "rank_hosts": ["localhost", "localhost"], "problems": []},
    }
    got, msgs = bert_tasks("train", settings)
    assert got.returncode == 2, got.stdout[-3000:] + got.stderr[-2000:]
    return list(msgs)


def test_storage_failure_is_reported_from_the_node_local_outcome(bert_tasks: Any, tmp_path: Path) -> None:
    run_dir = tmp_path / "shared" / "runs" / "r"
    msgs = _run_role(bert_tasks, tmp_path, MPIRUN.format(line=STORAGE_LINE.format(run=run_dir)))
    assert len(msgs) == 1, msgs
    local_log = next((tmp_path / "local" / "r").glob("train-*.log"))
    assert msgs[0].startswith("BERT training failed (mpirun exit 78) on localhost: "
                              + STORAGE_LINE.format(run=run_dir)), msgs[0]
    assert f"-- log {local_log} on localhost" in msgs[0]
    assert next((tmp_path / "local" / "r").glob("train-*.exit")).read_text().strip() == "78"
    # copies on the shared storage, for whoever reads the run afterwards
    assert (run_dir / "logs" / local_log.name).read_text() == local_log.read_text()
    assert (run_dir / "logs" / local_log.name.replace(".log", ".exit")).read_text().strip() == "78"


def test_an_mpirun_launch_failure_leads_with_its_cause(bert_tasks: Any, tmp_path: Path) -> None:
    """A real recorded mpirun output (a node whose host key the launching node does not know): the message leads with
    host key verification, not with the end of Open MPI's help text."""
    recorded = FIXTURES / "hostkey_unknown.txt"
    msgs = _run_role(bert_tasks, tmp_path, f"#!/bin/bash\ncat {recorded}\nexit 255\n")
    assert len(msgs) == 1, msgs
    assert msgs[0].startswith("BERT training failed (mpirun exit 255) launched from localhost: host key verification "
                              "failed: no ED25519 host key of node2 is known on the node that launched mpirun. Fix: "
                              "run the cluster phase on every node"), msgs[0]
