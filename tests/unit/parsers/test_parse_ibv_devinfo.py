from __future__ import annotations

from ansible_collections.scc.nlp_training.plugins.module_utils.parsers.ibv_devinfo import parse_ibv_devinfo


def test_mlx5_roce_v2_gid_table(fixture_text):
    hcas = parse_ibv_devinfo(fixture_text("ibv_devinfo", "mlx5_cx6_roce_v2_gid_types.txt"))
    hca = hcas["mlx5_0"]
    assert hca["transport"] == "InfiniBand"
    assert hca["fw_ver"] == "20.24.4702" and hca["vendor_part_id"] == 4123 and hca["phys_port_cnt"] == 1
    assert hca["board_id"] == "MT_0000000225" and hca["vendor_id"] == "0x02c9"
    port = hca["ports"][0]
    assert port["state"] == "PORT_ACTIVE" and port["state_code"] == 4
    assert port["max_mtu"] == 4096 and port["active_mtu"] == 4096
    assert port["link_layer"] == "Ethernet"
    assert port["active_width"] == "4X" and port["active_speed_gbps"] == 25.0
    assert port["phys_state"] == "LINK_UP"
    v2 = [g for g in port["gids"] if g.get("type") == "RoCE v2"]
    assert [g["index"] for g in v2] == [1, 3]
    assert v2[-1]["gid"] == "::ffff:192.168.1.11"


def test_softroce_without_gid_types(fixture_text):
    hca = parse_ibv_devinfo(fixture_text("ibv_devinfo", "rxe_softroce_verbose.txt"))["rxe0"]
    port = hca["ports"][0]
    assert port["active_mtu"] == 1024 and port["active_speed"] == "2.5 Gbps"
    assert [g["index"] for g in port["gids"]] == [0, 1]
    assert all("type" not in g for g in port["gids"])
    # device attributes that follow the capability lists (rss_caps, ...) must not leak into the port
    assert "max_rwq_indirection_tables" not in port


def test_mlx4_two_hcas_plain(fixture_text):
    hcas = parse_ibv_devinfo(fixture_text("ibv_devinfo", "mlx4_two_hcas_plain.txt"))
    assert list(hcas) == ["mlx4_1", "mlx4_0"]
    for hca in hcas.values():
        states = [p["state"] for p in hca["ports"]]
        assert states == ["PORT_ACTIVE", "PORT_DOWN"]
        assert hca["phys_port_cnt"] == 2
    assert hcas["mlx4_0"]["ports"][0]["port_lid"] == 32


def test_mlx4_verbose_single_port(fixture_text):
    hca = parse_ibv_devinfo(fixture_text("ibv_devinfo", "mlx4_port2_verbose.txt"))["mlx4_1"]
    assert [p["port"] for p in hca["ports"]] == [2]
    port = hca["ports"][0]
    assert port["phys_state"] == "POLLING" and port["phys_state_code"] == 2
    assert port["gid_tbl_len"] == 128 and len(port["gids"]) == 1
