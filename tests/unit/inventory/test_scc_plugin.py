"""The plugin with a real InventoryData, DataLoader and Templar; the API replaced by a payload keyed by region."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from ansible.errors import AnsibleError
from ansible.inventory.data import InventoryData
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar

from sccnlp.testbed.ecs_api import make_instance

try:  # ansible-core >= 2.19: templates must be trusted explicitly
    from ansible.template import trust_as_template
except ImportError:  # pragma: no cover - older ansible-core trusts every plain string
    def trust_as_template(value: str) -> str:
        return value

EVIL = "{{ lookup('pipe', 'id') }}"
CREDS = "access_key_id: AKtest\naccess_key_secret: SKtest\nregions: [cn-hangzhou]\n"


class FakeApi:
    """Answers `_fetch` by region and counts the calls."""

    def __init__(self, payload: dict[str, list[dict[str, Any]]]) -> None:
        self.payload = payload
        self.calls = 0

    def __call__(self, regions, filters, creds):
        self.calls += 1
        return {r: list(self.payload.get(r, [])) for r in regions}


def run(plugin_factory: Callable[[], Any], path: str, api: FakeApi, cache: bool = True) -> tuple[Any, InventoryData]:
    plugin = plugin_factory()
    plugin._fetch = api
    inventory = InventoryData()
    plugin.parse(inventory, DataLoader(), path, cache=cache)
    return plugin, inventory


def nodes() -> list[dict[str, Any]]:
    return [make_instance(1, zone="cn-hangzhou-h", tags={"role": "master", "owner": EVIL}, hostname="iZa1Z"),
            make_instance(2, zone="cn-hangzhou-i", instance_type="ecs.ebmgn8v.48xlarge", hostname="iZa2Z",
                          tags={"role": "worker"})]


def test_hosts_vars_and_default_groups(plugin_factory, write_config) -> None:
    _unused, inv = run(plugin_factory, write_config(CREDS), FakeApi({"cn-hangzhou": nodes()}))
    assert sorted(inv.groups["scc_cluster"].host_names) == ["iZa1Z", "iZa2Z"]
    assert [h.name for h in inv.groups["zone_cn_hangzhou_h"].get_hosts()] == ["iZa1Z"]
    assert [h.name for h in inv.groups["type_ecs_ebmgn8v_48xlarge"].get_hosts()] == ["iZa2Z"]
    a2 = inv.get_host("iZa2Z").vars
    assert (a2["gpu_count"], a2["gpu_arch"], a2["mpi_slots"], a2["rdma"]) == (8, "hopper", 8, True)
    assert a2["ansible_host"] == "10.0.0.2"


def test_jinja_in_a_tag_stays_text(plugin_factory, write_config) -> None:
    cfg = write_config(CREDS + "compose:\n  owner: scc_tags.owner\n"
                               "groups:\n  masters: scc_tags.role == 'master'\n")
    _unused, inv = run(plugin_factory, cfg, FakeApi({"cn-hangzhou": nodes()}))
    host = inv.get_host("iZa1Z")
    assert host.vars["owner"] == EVIL
    assert host.vars["scc_tags"]["owner"] == EVIL
    templar = Templar(loader=DataLoader(), variables=host.vars)
    # rendered as data: the pipe lookup never runs (it would print uid=...)
    assert templar.template(trust_as_template("{{ owner }}")) == EVIL
    assert templar.template(trust_as_template("{{ scc_tags.owner }}")) == EVIL
    assert templar.template(trust_as_template("{{ scc_tags }}"))["owner"] == EVIL
    assert [h.name for h in inv.groups["masters"].get_hosts()] == ["iZa1Z"]


def test_keyed_groups_and_cluster_group_name(plugin_factory, write_config) -> None:
    cfg = write_config(CREDS + "cluster_group: bert_nodes\ndefault_groups: false\n"
                               "keyed_groups:\n  - key: scc_tags.role\n    prefix: role\n"
                               "  - key: gpu_arch\n    prefix: arch\n")
    _unused, inv = run(plugin_factory, cfg, FakeApi({"cn-hangzhou": nodes()}))
    assert "scc_cluster" not in inv.groups and sorted(inv.groups["bert_nodes"].host_names) == ["iZa1Z", "iZa2Z"]
    assert inv.groups["role_master"].host_names == {"iZa1Z"}
    assert inv.groups["role_worker"].host_names == {"iZa2Z"}
    assert inv.groups["arch_volta"].host_names == {"iZa1Z"}
    assert not any(g.startswith("zone_") for g in inv.groups)


def test_hostnames_fallback(plugin_factory, write_config) -> None:
    insts = [make_instance(1, name="", hostname="", tags={"node": "gpu-a"}),
             make_instance(2, name="", hostname=""),
             make_instance(3, name="dup"), make_instance(4, name="dup")]
    cfg = write_config(CREDS + "hostnames: [instance_name, 'tag:node', private_ip]\n")
    _unused, inv = run(plugin_factory, cfg, FakeApi({"cn-hangzhou": insts}))
    assert sorted(inv.hosts) == ["10.0.0.2", "10.0.0.4", "dup", "gpu-a"]


def test_instance_types_option_overrides_the_table(plugin_factory, write_config) -> None:
    cfg = write_config(CREDS + "instance_types:\n  ecs.sccgn6.24xlarge: {gpu_count: 4}\n")
    _unused, inv = run(plugin_factory, cfg, FakeApi({"cn-hangzhou": nodes()}))
    assert (inv.get_host("iZa1Z").vars["gpu_count"], inv.get_host("iZa1Z").vars["mpi_slots"]) == (4, 4)


def test_empty_result_gives_an_empty_cluster(plugin_factory, write_config) -> None:
    _unused, inv = run(plugin_factory, write_config(CREDS), FakeApi({}))
    assert "scc_cluster" in inv.groups and not inv.hosts


def test_cache_hit_makes_no_request(plugin_factory, write_config, tmp_path) -> None:
    cfg = write_config(CREDS + f"cache: true\ncache_plugin: ansible.builtin.jsonfile\n"
                               f"cache_connection: {tmp_path / 'cache'}\n")
    api = FakeApi({"cn-hangzhou": nodes()})
    plugin, _unused = run(plugin_factory, cfg, api, cache=False)  # --flush-cache: fetch and store
    plugin._cache.update_cache_if_changed()
    assert api.calls == 1
    _unused, inv = run(plugin_factory, cfg, api, cache=True)
    assert api.calls == 1, "cache hit went to the API"
    assert sorted(inv.hosts) == ["iZa1Z", "iZa2Z"]
    assert inv.get_host("iZa1Z").vars["scc_tags"]["owner"] == EVIL


@pytest.mark.parametrize(("extra", "message"), [
    ("filters: {colour: red}\n", "unknown key(s) colour under `filters`"),
    ("hostnames: [fqdn]\n", "`hostnames` entry 'fqdn' is not one of"),
    ("instance_types: {ecs.x: {gpu_count: many}}\n", "instance_types.ecs.x.gpu_count must be a whole number"),
])
def test_bad_settings_give_one_line(plugin_factory, write_config, extra: str, message: str) -> None:
    with pytest.raises(AnsibleError) as info:
        run(plugin_factory, write_config(CREDS + extra), FakeApi({"cn-hangzhou": nodes()}))
    assert message in str(info.value)


def test_no_region(plugin_factory, write_config, monkeypatch) -> None:
    for var in ("ALICLOUD_REGION", "ALIBABA_CLOUD_REGION_ID"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(AnsibleError, match=r"no region to list: set `regions`"):
        run(plugin_factory, write_config("access_key_id: A\naccess_key_secret: B\n"), FakeApi({}))


def test_file_names(plugin_factory, tmp_path) -> None:
    plugin = plugin_factory()
    # a.yml naming this plugin is taken, so that parse can say the name must end in .scc.yml (integration test)
    for name, ok in (("a.scc.yml", True), ("a.scc.yaml", True), ("a.yml", True), ("scc.yml.bak", False)):
        (tmp_path / name).write_text("plugin: scc.nlp_training.scc\n")
        assert plugin.verify_file(str(tmp_path / name)) is ok, name
    (tmp_path / "other.yml").write_text("plugin: amazon.aws.aws_ec2\n")
    assert plugin.verify_file(str(tmp_path / "other.yml")) is False
