"""The test bed discovered through the plugin: the loopback ECS API describes the test-bed nodes as instances, the
plugin builds the inventory, and the cluster playbook runs on it unchanged (the plugin's variables are the ones the
roles read). Needs a converged test bed: SCCNLP_TESTBED_INVENTORY (set by `scripts/test.sh e2e`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from sccnlp.runner import _collections_path, run_playbook
from sccnlp.testbed.ecs_api import DEFAULT_KEYS, make_instance, running

pytestmark = pytest.mark.testbed


@pytest.fixture(scope="module")
def testbed(testbed_inventory: str) -> dict:
    return yaml.safe_load(Path(testbed_inventory).read_text())["all"]["children"]["scc_cluster"]


def test_discovered_testbed_runs_the_cluster_playbook_unchanged(testbed: dict, tmp_path: Path) -> None:
    hosts = testbed["hosts"]
    # A general-purpose type with no GPU, as the API reports it (GPUAmount 0).
    instances = [{**make_instance(i, instance_type="ecs.g7.2xlarge", private_ip=h["ansible_host"], name=name),
                  "GPUAmount": 0}
                 for i, (name, h) in enumerate(hosts.items(), start=1)]
    key_id, secret = next(iter(DEFAULT_KEYS.items()))
    with running(instances) as server:
        config = tmp_path / "testbed.scc.yml"
        config.write_text(yaml.safe_dump({
            "plugin": "scc.nlp_training.scc", "regions": ["cn-hangzhou"], "endpoint": server.url,
            "access_key_id": key_id, "access_key_secret": secret, "hostnames": ["instance_name"],
        }))
        # Connection settings of the test bed travel as group_vars beside the discovery config.
        (tmp_path / "group_vars").mkdir()
        connection = dict(testbed["vars"])
        (tmp_path / "group_vars" / "scc_cluster.yml").write_text(yaml.safe_dump(connection))

        env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": _collections_path()}
        listed = subprocess.run([str(Path(sys.executable).parent / "ansible-inventory"), "-i", str(config),
                                 "--list"], capture_output=True, text=True, env=env, check=False)
        assert listed.returncode == 0, listed.stderr
        data = json.loads(listed.stdout)
        assert sorted(data["scc_cluster"]["hosts"]) == sorted(hosts)
        hostvars = data["_meta"]["hostvars"]
        for name, h in hosts.items():
            got = hostvars[name]
            ip = got["ansible_host"]
            ip = ip.get("__ansible_unsafe", ip) if isinstance(ip, dict) else ip
            assert ip == h["ansible_host"]
            assert got["gpu_count"] == 0 and got["mpi_slots"] == 1 and got["rdma"] is False

        result = run_playbook("cluster", config)
    assert result.ok, result.bad_hosts()
    assert sorted(h for h in result.hosts if h != "localhost") == sorted(hosts)
    changed = {h: s.changed for h, s in result.hosts.items() if s.changed}
    assert not changed, f"the cluster playbook changed something on the discovered inventory: {changed}"
