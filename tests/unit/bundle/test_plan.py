"""The bundle plan: the roles' defaults under the inventory's variables (templated as Ansible does) give the Debian
packages and pip lock sets per role; bad settings are refused naming the node and the setting."""

from __future__ import annotations

from typing import Any

import pytest

from sccnlp.bundle import plan as p
from sccnlp.errors import SccError
from sccnlp.paths import collection_root

ROOT = collection_root()


def _plan(hostvars: dict[str, dict[str, Any]]) -> p.Plan:
    return p.plan_cluster(ROOT, hostvars)


def test_defaults_of_a_cpu_node_follow_the_roles_tables() -> None:
    plan = _plan({"n1": {"cpfs_client_backend": "glusterfs"}})
    tables = p.role_tables(ROOT)
    assert plan.debian["python36"] == tables["python36"]["Debian-12"]["pythons"]["3.11"]["packages"]
    assert plan.debian["openmpi"] == tables["openmpi"]
    assert plan.debian["cpfs_client"] == ["glusterfs-client", "glusterfs-cli", "fuse3"]  # gluster: the volume check
    assert plan.debian["bert"] == ["python3-doc"]
    assert "ib_check" not in plan.debian  # rdma is false by default
    assert plan.pip_sets == {"python36": ["python36"], "pytorch": ["pytorch-cpu"]}
    assert list(plan.debian) == [r for r in p.ROLES if r in plan.debian]  # deploy order: first role owns a dep
    assert plan.image == p.DEFAULT_IMAGE and not plan.unfetched


def test_monitoring_packages_are_the_roles_pins_unless_left_out() -> None:
    pins = p.role_tables(ROOT)["monitoring"]
    plan = _plan({"n1": {"cpfs_client_backend": "glusterfs"}, "n2": {"cpfs_client_backend": "glusterfs"}})
    assert plan.debian["monitoring"] == [pins["_monitoring_node_exporter_package"], pins["_monitoring_server_package"]]
    assert pins["_monitoring_node_exporter_package"].startswith("prometheus-node-exporter=1.5.0")
    own = _plan({"n1": {"cpfs_client_backend": "glusterfs", "monitoring_node_exporter_install": False,
                        "monitoring_server_version": "2.42.0+ds-5"}})
    assert own.debian["monitoring"] == ["prometheus=2.42.0+ds-5"]
    off = _plan({"n1": {"cpfs_client_backend": "glusterfs", "scc_monitoring_enabled": False}})
    assert "monitoring" not in off.debian


def test_gpu_and_rdma_nodes_add_their_sets_and_packages_once() -> None:
    plan = _plan({"n1": {"cpfs_client_backend": "glusterfs", "gpu_count": 0},
                  "n2": {"cpfs_client_backend": "glusterfs", "gpu_count": 8, "rdma": True},
                  "n3": {"cpfs_client_backend": "glusterfs", "gpu_count": 8, "rdma": True}})
    assert plan.pip_sets["pytorch"] == ["pytorch-cpu", "pytorch-cuda"]
    assert plan.debian["ib_check"] == p.role_tables(ROOT)["ib_check"]


def test_templated_inventory_values_are_rendered() -> None:
    plan = _plan({"n1": {"cpfs_client_backend": "{{ my_backend }}", "my_backend": "nfs",
                         "bert_corpus_debian_package": "debian-reference-en",
                         "bert_corpus_debian_package_version": "2.{{ 70 + 9 }}"}})
    assert plan.debian["cpfs_client"] == ["nfs-common"]
    assert plan.debian["bert"] == ["debian-reference-en=2.79"]


def test_a_subset_of_roles_makes_a_small_bundle() -> None:
    plan = _plan({"n1": {"cpfs_client_backend": "glusterfs", "scc_bundle_roles": ["python36"]}})
    assert list(plan.debian) == ["python36"] and plan.pip_sets == {"python36": ["python36"]}


def test_what_cannot_be_bundled_is_listed_with_the_reason() -> None:
    plan = _plan({"n1": {"cpfs_client_backend": "cpfs_lustre", "cuda_method": "package",
                         "aiacc_wheel_url": "https://user:secret@example.invalid/a.whl?sig=x"}})
    assert any("linux-headers" in k for k in plan.unfetched)
    assert "cuda (package)" in plan.unfetched
    assert "aiacc_wheel_sha256" in plan.unfetched["aiacc_wheel_url"]
    assert "secret" not in str(plan.unfetched) and "sig=x" not in str(plan.unfetched)
    assert "build-essential" in plan.debian["cpfs_client"]


def test_urls_with_their_sha256_are_planned_once() -> None:
    sha = "ab" * 32
    node = {"cpfs_client_backend": "nfs", "openmpi_method": "source", "openmpi_source_checksum": sha,
            "openmpi_source_url": "https://mirror.example/openmpi-4.1.6.tar.bz2",
            "cuda_method": "runfile", "cuda_runfile_url": "/srv/local/cuda.run", "cuda_runfile_checksum": sha,
            "bert_corpus_source": "url", "bert_corpus_url": "https://x.example/c.txt", "bert_corpus_sha256": "f00"}
    plan = _plan({"n1": node, "n2": dict(node)})
    assert [(u.role, u.setting, u.file, u.sha256) for u in plan.urls] == [
        ("openmpi", "openmpi_source_url", "files/openmpi-4.1.6.tar.bz2", sha)]
    assert "openmpi" not in plan.debian  # a source build, not the packages
    assert "bert_corpus_sha256" in plan.unfetched["bert_corpus_url"]  # not a sha256: named, not fetched


@pytest.mark.parametrize(("hostvars", "words"), [
    ({"n1": {"cpfs_client_backend": "ceph"}}, ["n1", "cpfs_client_backend", "'ceph'", "glusterfs"]),
    ({"n1": {"cpfs_client_backend": "nfs", "scc_bundle_roles": ["python36", "nvidia"]}},
     ["n1", "scc_bundle_roles", "nvidia", "python36"]),
    ({"n1": {"cpfs_client_backend": "nfs", "python36_version": "3.9"}}, ["n1", "python36_version 3.9", "3.11"]),
    ({"n1": {"cpfs_client_backend": "nfs", "gpu_count": "eight"}}, ["n1", "pytorch_gpu_count", "eight"]),
    ({"n1": {"cpfs_client_backend": "nfs"}, "n2": {"cpfs_client_backend": "nfs", "scc_bundle_image": "other:1"}},
     ["n2", "scc_bundle_image", "other:1", "n1"]),
    ({"n1": {"cpfs_client_backend": "{{ undefined_thing }}"}}, ["n1", "cpfs_client_backend", "templated"]),
])
def test_bad_settings_are_refused_naming_node_and_setting(hostvars: dict[str, dict[str, Any]],
                                                          words: list[str]) -> None:
    with pytest.raises(SccError) as err:
        _plan(hostvars)
    for word in words:
        assert word in str(err.value)
