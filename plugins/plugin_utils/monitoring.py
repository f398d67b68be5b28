# Copyright: scc.nlp_training contributors
# Apache-2.0
"""Decisions of the monitoring role, pure and typed: its settings refused before anything changes, the scrape
targets rendered from the inventory, and what node_exporter's and Prometheus' own answers must show (the role's
verify steps gather them on the nodes and fail on the problems returned here)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

# A Prometheus duration: one or more number+unit pairs, largest unit first (15s, 1m30s, 15d).
_DURATION = re.compile(r"^(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?$")
# One sample line of the text format: name, optional {labels}, value (an optional timestamp is ignored).
_SAMPLE = re.compile(r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(?P<labels>.*)\})?\s+(?P<value>\S+)(?:\s+\S+)?$")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')
_PATH_UNSAFE = re.compile(r'["\\\n\s]')
_SPACE = re.compile(r"\s")
TARGET_LABEL = "instance"


def _port(value: Any) -> int | None:
    try:
        number = int(str(value))
    except ValueError:
        return None
    return number if 1 <= number <= 65535 else None


def settings_problems(host: str, settings: Mapping[str, Any], os_family: str, inventory_hosts: Sequence[str],
                      shared_dir: str = "") -> list[str]:
    """The refusals of the monitoring role's settings on one node, each naming the node, the setting, the value and
    the fix; [] when every setting is usable."""
    problems: list[str] = []

    def refuse(name: str, why: str, fix: str) -> None:
        problems.append("monitoring on %s: %s is %r: %s. Fix: %s" % (host, name, settings.get(name), why, fix))

    install = bool(settings.get("monitoring_node_exporter_install", True))
    if install and os_family != "Debian":
        refuse("monitoring_node_exporter_install", "the role installs node_exporter from Debian-family packages, and "
               "this node is %s" % os_family, "install node_exporter yourself (prometheus.prometheus.node_exporter) "
               "and set monitoring_node_exporter_install: false")
    for name in ("monitoring_node_exporter_port", "monitoring_server_port", "monitoring_server_dcgm_port"):
        if name in settings and _port(settings[name]) is None:
            refuse(name, "not a TCP port", "set a number from 1 to 65535")
    for name in ("monitoring_textfile_dir", "monitoring_node_exporter_sysfs_path"):
        value = str(settings.get(name, ""))
        if not value.startswith("/") or value == "/" or _PATH_UNSAFE.search(value):
            refuse(name, "not an absolute directory (other than /) without quotes, backslashes, spaces or line breaks",
                   "set an absolute path, e.g. /var/lib/prometheus/node-exporter")
    extra = settings.get("monitoring_node_exporter_extra_args", [])
    if not isinstance(extra, list) or not all(isinstance(arg, str) and arg.startswith("--") and not _SPACE.search(arg)
                                              for arg in extra):
        refuse("monitoring_node_exporter_extra_args", "not a list of --flag=value strings without spaces (the "
               "service splits its arguments at spaces)", "list node_exporter flags, e.g. ['--collector.systemd']")
    exclude = str(settings.get("monitoring_node_exporter_filesystem_exclude", ""))
    if _SPACE.search(exclude):
        refuse("monitoring_node_exporter_filesystem_exclude", "it holds a space (the service splits its arguments "
               "at spaces)", "match a space with [[:space:]]")
    try:
        excluded = bool(shared_dir) and re.search(exclude, shared_dir) is not None
    except re.error as exc:
        refuse("monitoring_node_exporter_filesystem_exclude", "not a regular expression (%s)" % exc,
               "write it as node_exporter's --collector.filesystem.mount-points-exclude expects")
    else:
        if excluded:
            refuse("monitoring_node_exporter_filesystem_exclude", "it matches the shared storage mount point %s, so "
                   "node_exporter would never report it and SccSharedStorageUnmounted would always fire" % shared_dir,
                   "leave %s out of the expression" % shared_dir)
    if bool(settings.get("monitoring_server_enabled", True)):
        server = str(settings.get("monitoring_server_host", ""))
        if server and server not in inventory_hosts:
            refuse("monitoring_server_host", "not a host of the inventory", "name an inventory host, or leave it "
                   "empty for the first node of the cluster group")
        for name in ("monitoring_server_scrape_interval", "monitoring_server_evaluation_interval",
                     "monitoring_server_retention"):
            value = str(settings.get(name, ""))
            if not value or not _DURATION.match(value):
                refuse(name, "not a Prometheus duration", "write it like 15s, 1m or 15d")
        managers = settings.get("monitoring_server_alertmanagers", [])
        if not isinstance(managers, list) or not all(
                isinstance(m, str) and m.rpartition(":")[0] and _port(m.rpartition(":")[2]) for m in managers):
            refuse("monitoring_server_alertmanagers", "not a list of host:port strings",
                   "list your Alertmanagers, e.g. ['alertmanager.example:9093'], or leave it empty")
    return problems


def scrape_targets(hosts: Iterable[str], hostvars: Mapping[str, Mapping[str, Any]], default_port: int,
                   gpu_only: bool = False, port_var: str = "monitoring_node_exporter_port") -> list[dict[str, Any]]:
    """file_sd entries, one per node: its address (ansible_host, else its name) and exporter port (the node's own
    setting, else default_port), labelled with the inventory name as instance, so alerts and the RDMA monitor name
    nodes as the inventory does. gpu_only: the nodes with gpu_count > 0 at default_port (the DCGM exporter)."""
    entries = []
    for host in hosts:
        variables = hostvars.get(host, {})
        if gpu_only:
            try:
                gpus = int(str(variables.get("gpu_count", 0)))
            except ValueError:
                gpus = 0
            if gpus <= 0:
                continue
            port_var = ""
        address = str(variables.get("ansible_host") or host)
        if ":" in address and not address.startswith("["):
            address = "[%s]" % address
        port = _port(variables.get(port_var, default_port)) if port_var else default_port
        port = port or default_port
        entries.append({"targets": ["%s:%d" % (address, port)], "labels": {TARGET_LABEL: host}})
    return entries


def parse_samples(text: str) -> list[tuple[str, dict[str, str], str]]:
    """(name, labels, value) of every sample line of a /metrics answer."""
    found = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        match = _SAMPLE.match(line.strip())
        if match:
            labels = {k: v.replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\")
                      for k, v in _LABEL.findall(match.group("labels") or "")}
            found.append((match.group("name"), labels, match.group("value")))
    return found


def exporter_problems(host: str, metrics: str, port: int, textfile_dir: str, version: str = "",
                      rdma: bool = False, sysfs_path: str = "/sys") -> list[str]:
    """What node_exporter's /metrics on a node must show: the collection's textfile directory read (its
    scc_monitoring_textfile_info sample, no textfile error), the version installed (when given) and, on an RDMA
    node, the infiniband collector succeeding."""
    samples = parse_samples(metrics)
    where = "%s: node_exporter on port %d" % (host, port)
    if not samples:
        return ["%s answered no metrics. Fix: check `systemctl status prometheus-node-exporter` and that nothing "
                "else listens on the port" % where]
    problems = []
    if version:
        seen = sorted({labels.get("version", "") for name, labels, _value in samples if name ==
                       "node_exporter_build_info"})
        if version not in seen:
            problems.append("%s reports version %s, not %s. Fix: stop the other exporter on the port, or set "
                            "monitoring_node_exporter_install: false to keep it"
                            % (where, ", ".join(seen) or "none", version))
    probe = [labels.get("directory") for name, labels, _value in samples if name == "scc_monitoring_textfile_info"]
    if textfile_dir not in probe:
        problems.append("%s does not read %s (it reads %s). Fix: start it with --collector.textfile.directory=%s, or "
                        "set scc_monitoring_textfile_dir to the directory it reads"
                        % (where, textfile_dir, ", ".join(d or "?" for d in probe) or "no file of the collection",
                           textfile_dir))
    errors = [value for name, _labels, value in samples if name == "node_textfile_scrape_error"]
    if errors and errors[0] not in ("0", "0.0"):
        problems.append("%s cannot parse a file in its textfile directory (node_textfile_scrape_error %s). Fix: "
                        "look for the bad *.prom file in %s (the exporter's log names it)"
                        % (where, errors[0], textfile_dir))
    if rdma:
        ok = [value for name, labels, value in samples
              if name == "node_scrape_collector_success" and labels.get("collector") == "infiniband"]
        if ok != ["1"]:
            problems.append("%s: the infiniband collector %s on this RDMA node. Fix: check that %s/class/infiniband "
                            "lists the devices (monitoring_node_exporter_sysfs_path) and that the collector is not "
                            "disabled" % (where, "failed" if ok else "did not run", sysfs_path.rstrip("/")))
    return problems


def server_problems(server: str, rules: Mapping[str, Any], up: Mapping[str, Any], nodes: Sequence[str],
                    alerts: Sequence[str]) -> list[str]:
    """What a person checks in Prometheus after the deploy: the collection's alert rules loaded (the /api/v1/rules
    answer) and every node scraped with up == 1 (the answer of the query up{job="scc_node"})."""
    problems = []
    loaded = {rule.get("name") for group in (rules.get("data") or {}).get("groups") or []
              for rule in group.get("rules") or [] if rule.get("type") == "alerting"}
    missing = sorted(set(alerts) - loaded)
    if missing:
        problems.append("%s: Prometheus has not loaded the alert rules %s. Fix: check `promtool check rules "
                        "/etc/prometheus/rules/scc_rules.yml` and the server's log" % (server, ", ".join(missing)))
    state = {}
    for item in (up.get("data") or {}).get("result") or []:
        state[(item.get("metric") or {}).get(TARGET_LABEL, "?")] = str((item.get("value") or [0, "?"])[1])
    down = [node for node in nodes if state.get(node) != "1"]
    if down:
        problems.append("%s: Prometheus does not scrape %s (up: %s). Fix: check that node_exporter answers on each "
                        "node and that %s reaches their port" % (
                            server, ", ".join(down), ", ".join("%s=%s" % (n, state.get(n, "absent")) for n in down),
                            server))
    return problems


def file_differs(found: Mapping[str, Any], content: str, owner: str, group: str, mode: str) -> bool:
    """Whether a file the probe looked at (node_probe's `files` entry, with its sha256) is not the one the role
    writes: missing, another text, owner, group or mode. The role then writes it (after promtool accepts it)."""
    if not found.get("exists") or found.get("isdir"):
        return True
    want = hashlib.sha256(content.encode("utf-8", "surrogateescape")).hexdigest()
    seen = (found.get("sha256"), found.get("owner"), found.get("group"), found.get("mode"))
    return seen != (want, owner, group, mode)
