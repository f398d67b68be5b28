from __future__ import annotations

from ansible_collections.scc.nlp_training.plugins.module_utils.parsers.ibstat import parse_ibstat


def test_a100_hdr_all_active(fixture_text):
    cas = parse_ibstat(fixture_text("ibstat", "a100_ib_all_active.txt"))
    assert len(cas) == 9
    ib = [ca for ca in cas.values() if ca["ports"][0]["link_layer"] == "InfiniBand"]
    assert len(ib) == 8
    assert all(ca["ports"][0]["state"] == "Active" and ca["ports"][0]["rate"] == 200 for ca in ib)
    first = cas["mlx5_0"]
    assert first["type"] == "MT4126" and first["port_count"] == 1
    assert first["firmware_version"] == "22.35.2302"
    assert first["ports"][0]["port_guid"] == "0x1c918efffe7a03a0"
    assert isinstance(first["ports"][0]["base_lid"], int)


def test_h100_ndr_with_bond_space_indented(fixture_text):
    cas = parse_ibstat(fixture_text("ibstat", "h100_ndr_bond_all_active.txt"))
    assert "mlx5_bond_0" in cas
    assert cas["mlx5_bond_0"]["ports"][0]["link_layer"] == "Ethernet"
    rates = sorted(ca["ports"][0]["rate"] for ca in cas.values())
    assert rates.count(400) == 8 and rates[0] == 200
    lids = [ca["ports"][0]["base_lid"] for name, ca in cas.items() if name != "mlx5_bond_0"]
    assert all(isinstance(lid, int) and lid > 0 for lid in lids)


def test_roce_some_ports_down(fixture_text):
    cas = parse_ibstat(fixture_text("ibstat", "h100_roce_some_down.txt"))
    assert len(cas) == 12
    down = sorted(name for name, ca in cas.items() if ca["ports"][0]["state"] == "Down")
    assert len(down) == 2
    assert all(cas[name]["ports"][0]["physical_state"] != "LinkUp" for name in down)
    assert {ca["ports"][0]["link_layer"] for ca in cas.values()} == {"Ethernet"}


def test_fractional_rate_and_noise_lines():
    text = "ibpanic: [1] main: stat of IB device 'mlx5_8' failed\nCA 'mlx5_2'\n\tCA type: MT4125\n" \
           "\tNumber of ports: 1\n\tPort 1:\n\t\tState: Active\n\t\tRate: 2.5\n\t\tSomething new: x\n"
    cas = parse_ibstat(text)
    assert cas["mlx5_2"]["ports"][0]["rate"] == 2.5
    assert "something_new" not in cas["mlx5_2"]["ports"][0]


def test_empty_input():
    assert parse_ibstat("") == {}
