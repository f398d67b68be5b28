"""Role ib_check converged for real on this machine (local connection) against the RDMA test double.

The double is tests/fixtures/rdma_sysfs/: a recorded-style sysfs tree (ConnectX-6, RoCE) and a fake ibv_devinfo that
prints the REAL recorded `ibv_devinfo -v` of that port. Every file the role writes goes under tmp_path.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sccnlp.runner import _collections_path

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "fixtures"

PLAYBOOK = """
- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - ansible.builtin.include_role:
        name: scc.nlp_training.ib_check
"""


def _ansible_playbook() -> str:
    """ansible-playbook next to this interpreter (the dev venv), else on PATH."""
    local = Path(sys.executable).parent / "ansible-playbook"
    return str(local) if local.exists() else (shutil.which("ansible-playbook") or "ansible-playbook")


@pytest.fixture
def double(tmp_path: Path) -> Path:
    root = tmp_path / "double"
    shutil.copytree(FIXTURES / "rdma_sysfs" / "cx6_roce" / "sys", root / "sys")
    (root / "outputs").mkdir()
    shutil.copy(FIXTURES / "tool_outputs/ibv_devinfo/mlx5_cx6_roce_v2_gid_types.txt", root / "outputs/ibv_devinfo.txt")
    return root


def _run(tmp_path: Path, double: Path, sysfs_root: Path, prefix: list[str] | None = None,
         **extra: str) -> subprocess.CompletedProcess[str]:
    book = tmp_path / "ib.yml"
    book.write_text(PLAYBOOK)
    args = {"ib_check_sysfs_root": str(sysfs_root), "ib_check_install_packages": "false",
            "ib_check_nccl_conf_path": str(tmp_path / "nccl.conf"), "ib_check_env_file": str(tmp_path / "scc.env"),
            "_ib_check_fact_path": str(tmp_path / "facts.d" / "scc_ib_check.fact"),
            "ansible_python_interpreter": sys.executable, **extra}
    (tmp_path / "facts.d").mkdir(exist_ok=True)
    cmd = [*(prefix or []), _ansible_playbook(), "-i", "localhost,", str(book)]
    for key, value in args.items():
        cmd += ["-e", f"{key}={value}"]
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=_collections_path(), ANSIBLE_NOCOLOR="1",
               SCC_RDMA_DOUBLE_DIR=str(double),
               PATH=f"{FIXTURES / 'rdma_sysfs' / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}")
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600, check=False)


def test_roce_double_derives_nccl_settings(tmp_path, double):
    result = _run(tmp_path, double, double)
    assert result.returncode == 0, result.stdout[-3000:]
    conf = (tmp_path / "nccl.conf").read_text().splitlines()
    for line in ("NCCL_IB_HCA=mlx5_0:1", "NCCL_IB_GID_INDEX=3", "NCCL_IB_DISABLE=0", "NCCL_IB_TC=106",
                 "NCCL_IB_TIMEOUT=22"):
        assert line in conf
    env = (tmp_path / "scc.env").read_text()
    assert "# BEGIN scc.nlp_training ib_check\n" in env and "NCCL_IB_GID_INDEX=3\n" in env
    assert '"active_ports": [\n        "mlx5_0:1"' in (tmp_path / "facts.d/scc_ib_check.fact").read_text()
    again = _run(tmp_path, double, double)
    assert "changed=0" in again.stdout, again.stdout[-2000:]


def test_slow_port_fails_with_node_port_and_fix(tmp_path, double):
    result = _run(tmp_path, double, double, ib_check_min_rate_gbps="200")
    assert result.returncode != 0
    assert ("localhost: RDMA port below ib_check_min_rate_gbps 200 Gb/s: mlx5_0 port 1: ACTIVE (LinkUp), "
            "100 Gb/sec (4X EDR)") in result.stdout


def test_down_port_fails(tmp_path, double):
    (double / "sys/class/infiniband/mlx5_0/ports/1/state").write_text("1: DOWN\n")
    (double / "sys/class/infiniband/mlx5_0/ports/1/phys_state").write_text("2: Polling\n")
    result = _run(tmp_path, double, double)
    assert result.returncode != 0
    assert "localhost: RDMA port not ACTIVE: mlx5_0 port 1: DOWN (Polling)" in result.stdout


def test_no_rdma_required_fails_before_changes(tmp_path, double):
    result = _run(tmp_path, double, tmp_path / "empty", ib_check_required="true")
    assert result.returncode != 0
    assert "localhost: no RDMA devices under" in result.stdout and "ib_check_required is true" in result.stdout
    assert not (tmp_path / "nccl.conf").exists()


def test_no_rdma_falls_back_to_tcp_with_notice(tmp_path, double):
    result = _run(tmp_path, double, tmp_path / "empty")
    assert result.returncode == 0, result.stdout[-3000:]
    assert "localhost: no RDMA devices, NCCL will use TCP over " in result.stdout
    conf = (tmp_path / "nccl.conf").read_text()
    assert "NCCL_IB_DISABLE=1" in conf and "NCCL_SOCKET_IFNAME=" in conf and "NCCL_IB_HCA" not in conf


def test_firmware_update_needs_a_source(tmp_path, double):
    result = _run(tmp_path, double, double, ib_check_firmware_update="true")
    assert result.returncode != 0
    assert "ib_check_firmware_update is true but the source is incomplete" in result.stdout
    assert not (tmp_path / "nccl.conf").exists()


def test_loopback_only_node_uses_lo(tmp_path, double):
    """A lone node whose only interface is loopback (the lent GPU VM): NCCL's socket goes over lo, not an empty name.

    The role runs inside a fresh network namespace (`unshare --net`), where `lo` is the only interface, as on the
    lent GPU machine, where the gates once failed on an empty NCCL_SOCKET_IFNAME.
    """
    unshare = shutil.which("unshare")
    assert unshare, "unshare (util-linux) is needed for this test"
    # A new network and mount namespace; sysfs mounted again so /sys/class/net shows this namespace's interfaces.
    prefix = [unshare, "--net", "--mount", "--map-root-user", "sh", "-c", 'mount -t sysfs sysfs /sys && exec "$@"', "-"]
    probe = subprocess.run([*prefix, "ls", "/sys/class/net"], capture_output=True, text=True, check=False)
    assert probe.returncode == 0, f"cannot create a network namespace here: {probe.stderr.strip()}"
    assert probe.stdout.split() == ["lo"], f"the namespace shows more than loopback: {probe.stdout}"
    result = _run(tmp_path, double, tmp_path / "empty", prefix=prefix)
    assert result.returncode == 0, result.stdout[-3000:]
    assert "localhost: no RDMA devices, NCCL will use TCP over lo" in result.stdout
    conf = (tmp_path / "nccl.conf").read_text().splitlines()
    assert "NCCL_SOCKET_IFNAME=lo" in conf and "NCCL_IB_DISABLE=1" in conf
