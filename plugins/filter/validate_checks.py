# -*- coding: utf-8 -*-
# Copyright: scc.nlp_training contributors
# Apache License 2.0
"""Filters of the validate role's measurements and checks (thin wrappers over plugin_utils.validate_checks)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

# Each filter is documented in its own file beside this one (<name>.yml): ansible-doc reads those.

from ansible.errors import AnsibleFilterError

from ansible_collections.scc.nlp_training.plugins.plugin_utils import validate_checks as checks


def _mapping(value, name, what="its input"):
    if not isinstance(value, dict):
        raise AnsibleFilterError("%s expects %s as a dictionary, got %s" % (name, what, type(value).__name__))
    return value


def validate_floors_problems(floors):
    return checks.floors_problems(_mapping(floors, "validate_floors_problems", "the floors"))


def validate_floor_key(gpu_name, gpu_floors, explicit=""):
    return checks.floor_key(str(gpu_name or ""), _mapping(gpu_floors, "validate_floor_key", "the GPU floors"),
                            str(explicit or ""))


def validate_floor_values(gpu_floors, key, gpu_count):
    return checks.floor_values(_mapping(gpu_floors, "validate_floor_values", "the GPU floors"), str(key or ""),
                               gpu_count)


def validate_gpu_health(smi, smi_q, dmesg, xid_codes, gpu_count, require_persistence):
    return checks.gpu_health(_mapping(smi, "validate_gpu_health", "the parsed nvidia-smi -q"), dict(smi_q or {}),
                             dict(dmesg or {}), list(xid_codes or []), int(gpu_count), bool(require_persistence))


def validate_nccl_node(parsed, run, fallback, gpu_count, min_bytes):
    return checks.nccl_node(_mapping(parsed, "validate_nccl_node", "the parsed all_reduce_perf output"),
                            dict(run or {}), dict(fallback or {}), int(gpu_count), int(min_bytes))


def validate_nccl_transport(text, node, conf_path, exists, rdma_devices):
    return checks.nccl_transport_check(str(node), str(conf_path), bool(exists), str(text or ""),
                                       [str(d) for d in rdma_devices or []])


def validate_mpi_answers(mpi, hosts, hostnames, answered, hostfile, unreached, failure=""):
    return checks.mpi_answers(list(hosts), dict(hostnames or {}), list(answered or []),
                              None if mpi is None else dict(mpi), str(failure or ""), str(hostfile),
                              list(unreached or []))


def validate_peers_check(found, node):
    return checks.peers_check(str(node), _mapping(found, "validate_peers_check", "cluster_peers_found"))


def validate_venv_identity(hashes, first, venv, unreached):
    return checks.venv_identity(_mapping(hashes, "validate_venv_identity", "the hashes by node"), str(first),
                                str(venv), list(unreached or []))


class FilterModule(object):
    """scc.nlp_training validate checks"""

    def filters(self):
        return {
            "validate_floors_problems": validate_floors_problems,
            "validate_floor_key": validate_floor_key,
            "validate_floor_values": validate_floor_values,
            "validate_gpu_health": validate_gpu_health,
            "validate_nccl_node": validate_nccl_node,
            "validate_nccl_transport": validate_nccl_transport,
            "validate_mpi_answers": validate_mpi_answers,
            "validate_peers_check": validate_peers_check,
            "validate_venv_identity": validate_venv_identity,
        }
