"""The plugin and the real SDK against the loopback ECS API (sccnlp.testbed.ecs_api), in process and through
`ansible-inventory` as a subprocess."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from ansible.errors import AnsibleError
from ansible.inventory.data import InventoryData
from ansible.parsing.dataloader import DataLoader

from sccnlp.testbed.ecs_api import EcsApiServer, Faults, generate_instances, make_instance, running

KEY, SECRET = "LTAItestkey0001", "test-secret-value"
ANSIBLE_INVENTORY = str(Path(sys.executable).parent / "ansible-inventory")
EVIL = "{{ lookup('pipe', 'id') }}"


@pytest.fixture
def api() -> Iterator[EcsApiServer]:
    insts = generate_instances(250, instance_types=("ecs.sccgn6.24xlarge", "ecs.ebmgn8v.48xlarge"))
    insts.append(make_instance(9001, instance_type="ecs.sccgn6.24xlarge", name="tagged", hostname="iZtaggedZ",
                               tags={"owner": EVIL, "cluster": "other"}))
    with running(insts, keys={KEY: SECRET, "LTAIforbidden01": "s"}, regions=["cn-shanghai"],
                 faults=Faults(forbidden_keys={"LTAIforbidden01"})) as server:
        yield server


def config(api: EcsApiServer, extra: str = "", key: str = KEY, secret: str = SECRET) -> str:
    return (f"regions: [cn-hangzhou]\nendpoint: {api.url}\naccess_key_id: {key}\naccess_key_secret: {secret}\n"
            f"retry_delay: 0.01\ntimeout: 3\n{extra}")


def parse(plugin_factory: Callable[[], Any], path: str, cache: bool = True) -> InventoryData:
    inventory = InventoryData()
    plugin_factory().parse(inventory, DataLoader(), path, cache=cache)
    return inventory


def test_every_page_is_read(api, plugin_factory, write_config) -> None:
    inv = parse(plugin_factory, write_config(config(api)))
    assert len(inv.groups["scc_cluster"].hosts) == 251
    assert api.state.request_count == 3  # 251 instances, 100 a page
    assert all(r["MaxResults"] == "100" for r in api.state.requests)
    assert [r.get("NextToken") is None for r in api.state.requests] == [True, False, False]
    assert all(r["Status"] == "Running" for r in api.state.requests)
    node = inv.get_host("iZtaggedZ").vars
    assert (node["gpu_count"], node["rdma"], node["scc_tags"]["owner"]) == (8, True, EVIL)


def test_server_side_filters(api, plugin_factory, write_config) -> None:
    cfg = config(api, "filters:\n  instance_type_family: ecs.ebmgn8v\n  tags: {cluster: bert}\n"
                      "  zone_id: cn-hangzhou-i\n")
    inv = parse(plugin_factory, write_config(cfg))
    hosts = [inv.get_host(h).vars for h in inv.hosts]
    assert hosts and all(h["scc_instance_type"] == "ecs.ebmgn8v.48xlarge" and h["scc_zone"] == "cn-hangzhou-i"
                         for h in hosts)
    sent = api.state.requests[0]
    assert (sent["InstanceTypeFamily"], sent["Tag.1.Key"], sent["Tag.1.Value"]) == ("ecs.ebmgn8v", "cluster", "bert")


def test_empty_region(api, plugin_factory, write_config) -> None:
    inv = parse(plugin_factory, write_config(config(api).replace("[cn-hangzhou]", "[cn-shanghai]")))
    assert not inv.hosts and "scc_cluster" in inv.groups


def test_throttling_then_success(api, plugin_factory, write_config) -> None:
    api.state.faults.throttle = 2
    api.state.faults.server_errors = 1
    inv = parse(plugin_factory, write_config(config(api)))
    assert len(inv.hosts) == 251
    assert api.state.request_count == 3 + 3


def error_of(plugin_factory, path: str) -> str:
    with pytest.raises(AnsibleError) as info:
        parse(plugin_factory, path)
    text = str(info.value)
    assert "\n" not in text and SECRET not in text and "Traceback" not in text
    return text


def test_throttling_forever(api, plugin_factory, write_config) -> None:
    api.state.faults.throttle = 100
    text = error_of(plugin_factory, write_config(config(api, "retries: 2\n")))
    assert text.startswith("ECS kept throttling DescribeInstances in region cn-hangzhou at http://127.0.0.1:")
    assert "(Throttling.User) after 3 attempts: raise `retries`" in text
    assert api.state.request_count == 3


@pytest.mark.parametrize(("key", "secret", "region", "expected"), [
    ("LTAIunknown9999", SECRET, "cn-hangzhou",
     "ECS does not know access key ...9999 (from options) (InvalidAccessKeyId.NotFound, region cn-hangzhou at "),
    (KEY, "wrong-secret", "cn-hangzhou",
     "the secret does not match access key ...0001 (from options) (SignatureDoesNotMatch, region cn-hangzhou at "),
    ("LTAIforbidden01", "s", "cn-hangzhou",
     "access key ...en01 (from options) may not call ecs:DescribeInstances (Forbidden.RAM, region cn-hangzhou at "),
    (KEY, SECRET, "cn-atlantis-1", "ECS has no region 'cn-atlantis-1' (InvalidRegionId.NotFound, endpoint "),
])
def test_api_errors_map_to_one_line(api, plugin_factory, write_config, key, secret, region, expected) -> None:
    cfg = config(api, key=key, secret=secret).replace("[cn-hangzhou]", f"[{region}]")
    text = error_of(plugin_factory, write_config(cfg))
    assert text.startswith(expected), text
    assert api.state.request_count == 1  # final errors are not retried


def test_unreachable_endpoint(plugin_factory, write_config) -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    cfg = (f"regions: [cn-hangzhou]\nendpoint: http://127.0.0.1:{port}\naccess_key_id: {KEY}\n"
           f"access_key_secret: {SECRET}\nretries: 1\nretry_delay: 0.01\ntimeout: 2\n")
    assert error_of(plugin_factory, write_config(cfg)) == (
        f"cannot reach the ECS API for region cn-hangzhou at http://127.0.0.1:{port}: connection refused after 2 "
        "attempt(s) with a 2s timeout: check `endpoint` and the network/proxy from this controller, or raise "
        "`timeout`")


def test_connection_reset_is_retried(api, plugin_factory, write_config) -> None:
    api.state.faults.resets = 1
    assert len(parse(plugin_factory, write_config(config(api))).hosts) == 251


def test_timeout(api, plugin_factory, write_config) -> None:
    api.state.faults.delay_s = 1.5
    text = error_of(plugin_factory, write_config(config(api, "retries: 0\n").replace("timeout: 3", "timeout: 0.5")))
    assert "timed out after 1 attempt(s) with a 0.5s timeout" in text


def test_missing_credentials(api, plugin_factory, write_config, monkeypatch, tmp_path, no_default_credentials) -> None:
    for var in ("ALIBABA_CLOUD_ACCESS_KEY_ID", "ALIBABA_CLOUD_ACCESS_KEY_SECRET", "ALICLOUD_ACCESS_KEY",
                "ALICLOUD_SECRET_KEY", "ALICLOUD_PROFILE", "ALIBABA_CLOUD_PROFILE"):
        monkeypatch.delenv(var, raising=False)
    cfg = f"regions: [cn-hangzhou]\nendpoint: {api.url}\nprofile_file: {tmp_path / 'none.json'}\n"
    text = error_of(plugin_factory, write_config(cfg))
    assert text.startswith("no Alibaba Cloud credentials found: set access_key_id and access_key_secret"), text
    assert "nor did the SDK's default chain (RAM role of this ECS instance through the instance metadata" in text
    assert api.state.request_count == 0


def test_credentials_from_environment(api, plugin_factory, write_config, monkeypatch) -> None:
    monkeypatch.setenv("ALIBABA_CLOUD_ACCESS_KEY_ID", KEY)
    monkeypatch.setenv("ALIBABA_CLOUD_ACCESS_KEY_SECRET", SECRET)
    monkeypatch.setenv("ALICLOUD_REGION", "cn-hangzhou")
    inv = parse(plugin_factory, write_config(f"endpoint: {api.url}\n"))
    assert len(inv.hosts) == 251


# -- ansible-inventory as a user runs it -------------------------------------------------------------------------


def ansible_inventory(path: str, *args: str, collections_path: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ANSIBLE_COLLECTIONS_PATH": collections_path, "ANSIBLE_INVENTORY_UNPARSED_FAILED": "1",
           "ANSIBLE_INVENTORY_ENABLED": "scc.nlp_training.scc", "NO_COLOR": "1"}
    return subprocess.run([ANSIBLE_INVENTORY, "-i", path, *args], env=env, capture_output=True, text=True,
                          check=False, timeout=120)


def test_ansible_inventory_list_graph_and_cache(api, write_config, collections_path, tmp_path) -> None:
    cfg = write_config(config(api, f"cache: true\ncache_plugin: ansible.builtin.jsonfile\n"
                                   f"cache_connection: {tmp_path / 'cache'}\ncache_timeout: 600\n"
                                   "keyed_groups:\n  - key: scc_tags.rack\n    prefix: rack\n"))
    listed = ansible_inventory(cfg, "--list", "--flush-cache", collections_path=collections_path)
    assert listed.returncode == 0, listed.stderr
    data = json.loads(listed.stdout)
    assert len(data["scc_cluster"]["hosts"]) == 251
    assert {"zone_cn_hangzhou_h", "type_ecs_sccgn6_24xlarge", "type_ecs_ebmgn8v_48xlarge", "rack_r1"} <= set(data)
    # ansible-inventory writes data marked unsafe in its unsafe envelope: never a template
    assert data["_meta"]["hostvars"]["iZtaggedZ"]["scc_tags"]["owner"] == {"__ansible_unsafe": EVIL}
    assert KEY not in listed.stdout + listed.stderr and SECRET not in listed.stdout + listed.stderr
    assert api.state.request_count == 3

    api.state.reset_requests()
    graph = ansible_inventory(cfg, "--graph", collections_path=collections_path)
    assert graph.returncode == 0, graph.stderr
    assert "@scc_cluster:" in graph.stdout and "iZtaggedZ" in graph.stdout
    assert api.state.request_count == 0, "cache hit went to the API"


def test_ansible_inventory_error_is_one_line(api, write_config, collections_path) -> None:
    res = ansible_inventory(write_config(config(api, secret="wrong")), "--list", collections_path=collections_path)
    assert res.returncode != 0
    assert "the secret does not match access key ...0001 (from options) (SignatureDoesNotMatch" in res.stderr
    assert "Traceback" not in res.stderr and "wrong" not in res.stderr.replace("wrong-", "")


def test_unknown_option_is_refused_before_the_api(api, plugin_factory, write_config) -> None:
    text = error_of(plugin_factory, write_config(config(api, "colour: blue\n")))
    assert "unknown option(s) colour for the scc inventory: fix the spelling or remove them" in text, text
    assert "regions" in text and "ansible-doc -t inventory scc.nlp_training.scc" in text
    assert api.state.request_count == 0


def test_ansible_inventory_names_the_unknown_option(api, write_config, collections_path) -> None:
    res = ansible_inventory(write_config(config(api, "colour: blue\n")), "--list", collections_path=collections_path)
    assert res.returncode != 0
    assert "unknown option(s) colour for the scc inventory" in res.stderr, res.stderr
    assert "Traceback" not in res.stderr and SECRET not in res.stderr
    assert api.state.request_count == 0


@pytest.mark.parametrize("name", ["discovery.yml", "discovery.scc.yml.bak.yaml", "scc.yaml"])
def test_ansible_inventory_says_the_file_name_must_end_in_scc_yml(api, write_config, collections_path,
                                                                  name) -> None:
    """A config of this plugin under another name: Ansible alone says only "unable to parse"; the plugin names the
    rule and the new name."""
    res = ansible_inventory(write_config(config(api), name=name), "--list", collections_path=collections_path)
    assert res.returncode != 0
    assert "file name must end in .scc.yml or .scc.yaml" in res.stderr, res.stderr
    assert f"rename it, e.g. to {name.rsplit('.', 1)[0]}.scc.yml" in res.stderr, res.stderr
    assert api.state.request_count == 0
