# -*- coding: utf-8 -*-
# Copyright: scc.nlp_training contributors
# Apache License 2.0
"""Filters of the ib_check role's decisions (thin wrappers over plugin_utils.ib_check)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

# Each filter is documented in its own file beside this one (<name>.yml): ansible-doc reads those.

from ansible.errors import AnsibleFilterError

from ansible_collections.scc.nlp_training.plugins.plugin_utils import ib_check


def _devices(devices, name):
    if not isinstance(devices, list):
        raise AnsibleFilterError("%s expects the RDMA devices of the sysfs view (a list), got %s"
                                 % (name, type(devices).__name__))
    return devices


def ib_port_problems(devices, node, min_rate_gbps, link_layer=""):
    return ib_check.port_problems(str(node), _devices(devices, "ib_port_problems"), min_rate_gbps,
                                  str(link_layer or ""))


def ib_firmware_problems(devices_by_host):
    if not isinstance(devices_by_host, dict):
        raise AnsibleFilterError("ib_firmware_problems expects the devices by host (a dictionary)")
    return ib_check.firmware_problems({str(h): d or [] for h, d in devices_by_host.items()})


def ib_nccl_settings(devices, present, settings, default_ifname=""):
    if not isinstance(settings, dict):
        raise AnsibleFilterError("ib_nccl_settings expects the ib_check_nccl_* settings as a dictionary")
    return ib_check.nccl_settings(bool(present), _devices(devices, "ib_nccl_settings"), settings,
                                  str(default_ifname or ""))


def ib_devinfo_disagreements(devices, ibv_devinfo):
    return ib_check.devinfo_disagreements(_devices(devices, "ib_devinfo_disagreements"), dict(ibv_devinfo or {}))


class FilterModule(object):
    """scc.nlp_training ib_check decisions"""

    def filters(self):
        return {
            "ib_port_problems": ib_port_problems,
            "ib_firmware_problems": ib_firmware_problems,
            "ib_nccl_settings": ib_nccl_settings,
            "ib_devinfo_disagreements": ib_devinfo_disagreements,
        }
