# -*- coding: utf-8 -*-
# Copyright: scc.nlp_training contributors
# Apache License 2.0 (see galaxy.yml)
"""ECS instance (raw API dict) -> inventory name, host variables and default groups. Pure functions, no Ansible."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

GPU_ARCHES = ("none", "kepler", "pascal", "volta", "turing", "ampere", "ada", "hopper", "blackwell")
HOSTNAME_SOURCES = ("hostname", "instance_name", "instance_id", "private_ip")
_GROUP_UNSAFE = re.compile(r"[^A-Za-z0-9_]")


class NodeError(Exception):
    """Bad configuration of the node table; the message names the setting and the fix."""


def group_name(prefix: str, value: str) -> str:
    """`zone_cn_hangzhou_h` from ('zone', 'cn-hangzhou-h'): every character outside [A-Za-z0-9_] becomes '_'."""
    return _GROUP_UNSAFE.sub("_", f"{prefix}_{value}" if prefix else value)


def family_of(instance_type: str) -> str:
    return ".".join(instance_type.split(".")[:2])


# ---------------------------------------------------------------------------------------------------------------
# Instance type table


def merge_types(table: Mapping[str, Any], overrides: Mapping[str, Any] | None) -> dict[str, dict[str, Any]]:
    """The built-in table with the user's `instance_types` merged over it, key by key, each entry validated."""
    merged: dict[str, dict[str, Any]] = {k: dict(v or {}) for k, v in (table or {}).items()}
    for key, entry in (overrides or {}).items():
        if not isinstance(entry, Mapping):
            raise NodeError(f"instance_types.{key} must be a mapping such as {{gpu_count: 8, gpu_arch: volta, "
                            f"rdma: true}}, got {type(entry).__name__}")
        merged[str(key)] = {**merged.get(str(key), {}), **entry}
    for key, entry in merged.items():
        validate_type_entry(key, entry)
    return merged


def validate_type_entry(key: str, entry: Mapping[str, Any]) -> None:
    count = entry.get("gpu_count", 0)
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise NodeError(f"instance_types.{key}.gpu_count must be a whole number >= 0, got {count!r}")
    arch = entry.get("gpu_arch", "none")
    if arch not in GPU_ARCHES:
        raise NodeError(f"instance_types.{key}.gpu_arch must be one of {', '.join(GPU_ARCHES)}, got {arch!r}")
    if not isinstance(entry.get("rdma", False), bool):
        raise NodeError(f"instance_types.{key}.rdma must be true or false, got {entry.get('rdma')!r}")


def type_facts(instance_type: str, table: Mapping[str, Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The table entry for an instance type: exact type first, then its family; None when unknown."""
    return table.get(instance_type) or table.get(family_of(instance_type))


_SPEC_ARCH = (("V100", "volta"), ("T4", "turing"), ("A100", "ampere"), ("A10", "ampere"), ("A800", "ampere"),
              ("L20", "ada"), ("L40", "ada"), ("L4", "ada"), ("H100", "hopper"), ("H800", "hopper"),
              ("H20", "hopper"), ("H200", "hopper"), ("B200", "blackwell"), ("P100", "pascal"),
              ("P4", "pascal"))


def arch_from_spec(spec: str) -> str:
    upper = spec.upper()
    for needle, arch in _SPEC_ARCH:
        if needle in upper:
            return arch
    return "none"


# ---------------------------------------------------------------------------------------------------------------
# Host variables


def _ips(block: Any) -> list[str]:
    return [str(ip) for ip in ((block or {}).get("IpAddress") or []) if ip]


def private_ips(instance: Mapping[str, Any]) -> list[str]:
    """Private IPv4 addresses, primary first, without duplicates (VPC, then ENIs, then classic inner IPs)."""
    found: list[str] = _ips((instance.get("VpcAttributes") or {}).get("PrivateIpAddress"))
    for eni in ((instance.get("NetworkInterfaces") or {}).get("NetworkInterface") or []):
        found.append(str(eni.get("PrimaryIpAddress") or ""))
        for ipset in ((eni.get("PrivateIpSets") or {}).get("PrivateIpSet") or []):
            found.append(str(ipset.get("PrivateIpAddress") or ""))
    found += _ips(instance.get("InnerIpAddress"))
    seen: dict[str, None] = {}
    for ip in found:
        if ip and ip not in seen:
            seen[ip] = None
    return list(seen)


def tags_of(instance: Mapping[str, Any]) -> dict[str, str]:
    return {str(t.get("TagKey")): str(t.get("TagValue") or "")
            for t in ((instance.get("Tags") or {}).get("Tag") or []) if t.get("TagKey") is not None}


def host_vars(instance: Mapping[str, Any], region: str, table: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Every host variable the plugin sets for one instance (values still raw: the caller makes them unsafe)."""
    itype = str(instance.get("InstanceType") or "")
    ips = private_ips(instance)
    rdma_ips = _ips(instance.get("RdmaIpAddress"))
    facts = type_facts(itype, table)
    if facts is not None:
        gpu_count = int(facts.get("gpu_count", 0))
        gpu_model = str(facts.get("gpu_model", ""))
        gpu_arch = str(facts.get("gpu_arch", "none" if gpu_count == 0 else ""))
        rdma = bool(facts.get("rdma", False))
    else:  # not in the table: fall back on what the API reports
        gpu_count = int(instance.get("GPUAmount") or 0)
        gpu_model = str(instance.get("GPUSpec") or "")
        gpu_arch = arch_from_spec(gpu_model)
        rdma = bool(rdma_ips)
    hv: dict[str, Any] = {
        "ansible_host": ips[0] if ips else None,
        "scc_instance_id": instance.get("InstanceId"),
        "scc_instance_name": instance.get("InstanceName"),
        "scc_hostname": instance.get("HostName"),
        "scc_instance_type": itype,
        "scc_instance_type_known": facts is not None,
        "scc_zone": instance.get("ZoneId"),
        "scc_region": instance.get("RegionId") or region,
        "scc_vpc_id": (instance.get("VpcAttributes") or {}).get("VpcId"),
        "scc_vswitch_id": (instance.get("VpcAttributes") or {}).get("VSwitchId"),
        "scc_tags": tags_of(instance),
        "scc_status": instance.get("Status"),
        "gpu_count": gpu_count,
        "gpu_model": gpu_model,
        "gpu_arch": gpu_arch if gpu_count else "none",
        "rdma": rdma,
        "mpi_slots": gpu_count if gpu_count > 0 else 1,
    }
    rdma_ip = rdma_ips[0] if rdma_ips else (ips[1] if len(ips) > 1 else None)
    if rdma_ip:
        hv["rdma_ip"] = rdma_ip
    return hv


# ---------------------------------------------------------------------------------------------------------------
# Inventory names


def name_candidates(instance: Mapping[str, Any], preferences: Sequence[str]) -> list[str]:
    """Inventory names for an instance in order of preference; empty values are skipped."""
    out: list[str] = []
    tags: dict[str, str] | None = None
    for pref in preferences:
        if pref == "hostname":
            value = instance.get("HostName")
        elif pref == "instance_name":
            value = instance.get("InstanceName")
        elif pref == "instance_id":
            value = instance.get("InstanceId")
        elif pref == "private_ip":
            ips = private_ips(instance)
            value = ips[0] if ips else None
        elif pref.startswith("tag:"):
            tags = tags if tags is not None else tags_of(instance)
            value = tags.get(pref[4:])
        else:
            raise NodeError(f"hostnames entry {pref!r} is not one of {', '.join(HOSTNAME_SOURCES)} or tag:KEY")
        if value:
            out.append(str(value))
    return out


def assign_names(instances: Iterable[Mapping[str, Any]], preferences: Sequence[str]) -> list[tuple[str, Any]]:
    """(inventory name, instance) pairs: the first preferred name not taken by another instance, else the id."""
    taken: set[str] = set()
    seen_ids: set[str] = set()
    pairs: list[tuple[str, Any]] = []
    for inst in instances:
        iid = str(inst.get("InstanceId") or "")
        if iid and iid in seen_ids:
            continue  # listed twice (e.g. overlapping filters): one host
        seen_ids.add(iid)
        name = next((c for c in name_candidates(inst, preferences) if c not in taken), iid)
        if not name:
            continue
        taken.add(name)
        pairs.append((name, inst))
    return pairs


def default_groups(hv: Mapping[str, Any]) -> list[str]:
    """The keyed groups every node gets: by zone and by instance type."""
    groups = []
    if hv.get("scc_zone"):
        groups.append(group_name("zone", str(hv["scc_zone"])))
    if hv.get("scc_instance_type"):
        groups.append(group_name("type", str(hv["scc_instance_type"])))
    return groups
