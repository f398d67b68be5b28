# Copyright: scc.nlp_training contributors
# Apache-2.0
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.scc.nlp_training.plugins.plugin_utils import monitoring


def monitoring_settings_problems(settings, host, os_family, inventory_hosts, shared_dir=""):
    """The refusals of the monitoring role's settings on one node ([] when all are usable)."""
    return monitoring.settings_problems(host, dict(settings), str(os_family), list(inventory_hosts), str(shared_dir))


def monitoring_scrape_targets(hosts, hostvars, default_port, gpu_only=False):
    """file_sd entries for the exporter on every node of the list (gpu_only: the nodes with gpu_count > 0)."""
    return monitoring.scrape_targets(list(hosts), hostvars, int(default_port), bool(gpu_only))


def monitoring_exporter_problems(metrics, host, port, textfile_dir, version="", rdma=False, sysfs_path="/sys"):
    """What node_exporter's /metrics answer on a node lacks ([] when it shows everything)."""
    return monitoring.exporter_problems(host, str(metrics), int(port), str(textfile_dir), str(version), bool(rdma),
                                        str(sysfs_path))


def monitoring_server_problems(up, server, rules, nodes, alerts):
    """What Prometheus' rules and up answers lack ([] when the rules are loaded and every node is up)."""
    return monitoring.server_problems(str(server), rules or {}, up or {}, list(nodes), list(alerts))


def monitoring_file_differs(found, content, owner, group, mode):
    """Whether the file node_probe looked at differs from what the role writes (text, owner, group, mode)."""
    return monitoring.file_differs(found or {}, str(content), str(owner), str(group), str(mode))


class FilterModule(object):
    def filters(self):
        return {
            "monitoring_settings_problems": monitoring_settings_problems,
            "monitoring_scrape_targets": monitoring_scrape_targets,
            "monitoring_exporter_problems": monitoring_exporter_problems,
            "monitoring_server_problems": monitoring_server_problems,
            "monitoring_file_differs": monitoring_file_differs,
        }
