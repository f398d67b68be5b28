"""What a bundle must hold for an inventory: per node, the settings the roles would use (role defaults under the
inventory's variables, templated the way Ansible does), then the Debian packages and the pip lock sets each role
installs with those settings, merged over the nodes. Pure apart from reading the collection's role files.

Only the Debian 12 family is planned (the test bed's and the pip lock's target); what a role would fetch that the
bundle cannot hold yet (NVIDIA repositories, URLs, kernel-specific packages) is listed with the reason."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from sccnlp.bundle import urls
from sccnlp.errors import SccError

# The roles whose installs the bundle covers, in the order site.yml runs them.
ROLES = ("cpfs_client", "gpu_driver", "cuda", "nccl", "cudnn", "openmpi", "python36", "pytorch", "tensorflow", "aiacc",
         "monitoring", "ib_check", "nccl_tests", "bert")
DEFAULT_IMAGE = "scc-testbed:bookworm"
RELEASE = "debian-12"
OS_KEY = "Debian-12"

# Bundle settings (inventory variables), with their defaults.
BUNDLE_DEFAULTS: dict[str, Any] = {
    "scc_bundle_roles": list(ROLES),  # limit the bundle to these roles' artefacts (a small bundle for tests)
    "scc_bundle_image": DEFAULT_IMAGE,  # a container image of the nodes' OS: Debian packages are resolved in it
    "scc_cluster_group": "scc_cluster",
}

# The settings read per node (role defaults first, the inventory over them).
_KEYS = (
    "scc_bundle_roles", "scc_bundle_image",
    "python36_version", "python36_interpreter", "python36_requirements", "python36_pip_lock_set",
    "python36_pip_lock_file",
    "pytorch_method", "pytorch_variant", "pytorch_gpu_count", "pytorch_version", "pytorch_cpu_local_version",
    "pytorch_requirements", "pytorch_pip_lock_set", "pytorch_pip_lock_file",
    "tensorflow_enabled", "tensorflow_variant", "tensorflow_gpu_count", "tensorflow_version",
    "tensorflow_pip_lock_set", "tensorflow_pip_lock_file",
    "openmpi_method", "cpfs_client_backend", "cpfs_client_cpfs_nfs_package", "cpfs_client_lustre_package",
    "bert_corpus_source", "bert_corpus_debian_package", "bert_corpus_debian_package_version",
    "ib_check_required", "ib_check_install_packages", "ib_check_packages",
    "gpu_driver_method", "cuda_method", "nccl_method", "cudnn_method",
    "scc_monitoring_enabled", "monitoring_node_exporter_install", "monitoring_node_exporter_version",
    "monitoring_server_enabled", "monitoring_server_version", *urls.KEYS,
)
# A Docker image reference: [registry[:port]/]name[/name...][:tag][@sha256:digest], names in lower case.
_NAME = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_IMAGE = re.compile(rf"^(?:[A-Za-z0-9.-]+(?::[0-9]+)?/)?{_NAME}(?:/{_NAME})*(?::[A-Za-z0-9_][A-Za-z0-9_.-]{{0,127}})?"
                    r"(?:@sha256:[0-9a-f]{64})?$")
_DEFAULT_ROLES = ("python36", "pytorch", "tensorflow", "openmpi", "cpfs_client", "bert", "ib_check", "gpu_driver",
                  "cuda", "nccl", "cudnn", "aiacc", "nccl_tests", "monitoring")


@dataclass
class Plan:
    """Debian packages and pip lock sets by role, the lock file of each set, and what cannot be bundled (why)."""

    debian: dict[str, list[str]] = field(default_factory=dict)
    pip_sets: dict[str, list[str]] = field(default_factory=dict)
    lock_file: str = ""
    image: str = DEFAULT_IMAGE
    unfetched: dict[str, str] = field(default_factory=dict)
    urls: list[urls.UrlArtefact] = field(default_factory=list)
    nodes: list[str] = field(default_factory=list)

    def add_debian(self, role: str, packages: Iterable[str]) -> None:
        have = self.debian.setdefault(role, [])
        have.extend(p for p in packages if p not in have)

    def add_set(self, role: str, name: str) -> None:
        have = self.pip_sets.setdefault(role, [])
        if name not in have:
            have.append(name)


def _yaml(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise SccError(f"cannot read {path} ({exc}): restore it from the collection") from exc
    if not isinstance(data, dict):
        raise SccError(f"{path} is not a mapping: restore it from the collection")
    return data


def role_defaults(root: Path, roles: Sequence[str] = _DEFAULT_ROLES) -> dict[str, Any]:
    """The roles' defaults/main.yml merged (role-prefixed names do not collide), plus the bundle settings."""
    merged: dict[str, Any] = dict(BUNDLE_DEFAULTS)
    for role in roles:
        path = root / "roles" / role / "defaults" / "main.yml"
        if path.is_file():
            merged.update(_yaml(path))
    return merged


def role_tables(root: Path) -> dict[str, Any]:
    """The package tables of the roles' vars for the Debian 12 family."""
    return {
        "python36": _yaml(root / "roles/python36/vars/main.yml")["_python36_os_table"],
        "openmpi": _yaml(root / "roles/openmpi/vars/Debian-12.yml")["_openmpi_packages"],
        "cpfs_client": _yaml(root / "roles/cpfs_client/vars/Debian.yml")["_cpfs_client_packages"],
        "ib_check": _yaml(root / "roles/ib_check/vars/main.yml")["_ib_check_packages_by_family"]["Debian"],
        "monitoring": _yaml(root / "roles/monitoring/vars/Debian-12.yml"),
    }


def _trusted(value: Any) -> Any:
    from ansible.template import trust_as_template  # type: ignore[import-untyped]

    if isinstance(value, str):
        return trust_as_template(value)
    if isinstance(value, dict):
        return {k: _trusted(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_trusted(v) for v in value]
    return value


def _plain(value: Any) -> Any:
    if isinstance(value, str):
        return str(value)
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def node_settings(node: str, defaults: Mapping[str, Any], hostvars: Mapping[str, Any],
                  keys: Sequence[str] = _KEYS) -> dict[str, Any]:
    """The settings a node's roles would use: defaults under its inventory variables, templated with Ansible's
    Templar (inventory values are the user's own, so they are templated like Ansible does)."""
    from ansible.errors import AnsibleError  # type: ignore[import-untyped]
    from ansible.parsing.dataloader import DataLoader  # type: ignore[import-untyped]
    from ansible.template import Templar

    variables = _trusted({**defaults, **hostvars, "inventory_hostname": node})
    templar = Templar(loader=DataLoader(), variables=variables)
    out: dict[str, Any] = {}
    for key in keys:
        if key not in variables:
            continue
        try:
            out[key] = _plain(templar.template(variables[key]))
        except AnsibleError as exc:
            message = " ".join(str(exc).split())[:300]
            raise SccError(f"{node}: {key} cannot be templated ({message}); fix it in the inventory") from exc
    return out


def _as_bool(value: Any) -> bool:
    return str(value).strip().lower() in ("1", "true", "yes", "on")


def _as_int(node: str, key: str, value: Any) -> int:
    try:
        return int(str(value).strip() or 0)
    except ValueError:
        raise SccError(f"{node}: {key} is {value!r}, not a number; set it to the node's GPU count") from None


def _as_list(node: str, key: str, value: Any) -> list[str]:
    if isinstance(value, str):
        return [value] if value else []
    if not isinstance(value, list):
        raise SccError(f"{node}: {key} is {value!r}, not a list; set it as a YAML list")
    return [str(v) for v in value]


def bundle_roles(node: str, value: Any) -> list[str]:
    """scc_bundle_roles: a list of role names (a comma-separated string too), each one the bundle covers."""
    fix = f"Fix: set scc_bundle_roles to a YAML list of some of {', '.join(ROLES)}, or remove it for all of them"
    if isinstance(value, str):
        value = [r.strip() for r in value.split(",") if r.strip()]
    if not isinstance(value, list):
        raise SccError(f"{node}: scc_bundle_roles is {value!r}, not a list of role names. {fix}")
    if not value:
        raise SccError(f"{node}: scc_bundle_roles is empty, so the bundle would hold nothing. {fix}")
    roles = [str(r) if isinstance(r, str) else repr(r) for r in value]
    unknown = [r for r in roles if r not in ROLES]
    if unknown:
        hints = [f"{r} (did you mean {close[0]}?)" if (close := difflib.get_close_matches(r, ROLES, 1)) else r
                 for r in unknown]
        raise SccError(f"{node}: scc_bundle_roles has {', '.join(hints)}, which the bundle does not cover. {fix}")
    return roles


def bundle_image(node: str, value: Any) -> str:
    """scc_bundle_image: a Docker image reference (unset or empty: the test bed's image)."""
    if value is None or value == "":
        return DEFAULT_IMAGE
    if not isinstance(value, str) or not _IMAGE.match(value.strip()):
        raise SccError(f"{node}: scc_bundle_image is {value!r}, not a Docker image name. Fix: set it to the name of "
                       f"a local image of the nodes' OS, e.g. {DEFAULT_IMAGE} (sccnlp testbed image builds it), or "
                       f"remove it to use {DEFAULT_IMAGE}")
    return value.strip()


def plan_node(node: str, s: Mapping[str, Any], tables: Mapping[str, Any], plan: Plan) -> None:
    """Add one node's needs (settings `s`, rendered) to `plan`; SccError naming the node and setting on a bad
    value."""
    roles = bundle_roles(node, s.get("scc_bundle_roles", list(ROLES)))
    image = bundle_image(node, s.get("scc_bundle_image"))
    if plan.nodes and image != plan.image:
        raise SccError(f"{node}: scc_bundle_image is {image} but {plan.nodes[0]} has {plan.image}; a bundle is for "
                       "one OS image: set it once for the whole cluster (group_vars)")
    plan.image = image
    plan.nodes.append(node)

    lock = ""
    for role in ("python36", "pytorch", "tensorflow"):
        if role in roles:
            lock = str(s.get(f"{role}_pip_lock_file") or "")
            if lock and plan.lock_file and lock != plan.lock_file:
                raise SccError(f"{node}: {role}_pip_lock_file is {lock} but another node uses {plan.lock_file}; "
                               "use one pip lock for the cluster")
            plan.lock_file = plan.lock_file or lock

    if "python36" in roles and not s.get("python36_interpreter"):
        table = tables["python36"].get(OS_KEY) or {}
        version = str(s.get("python36_version") or table.get("default", ""))
        entry = (table.get("pythons") or {}).get(version)
        if not entry:
            raise SccError(f"{node}: python36_version {version} has no packages on {RELEASE} (it has "
                           f"{', '.join(sorted(table.get('pythons') or {}))}); set python36_version to one of them")
        plan.add_debian("python36", entry["packages"])
    if "python36" in roles:
        plan.add_set("python36", str(s.get("python36_pip_lock_set") or "python36"))

    if "pytorch" in roles and str(s.get("pytorch_method", "install")) == "install":
        variant = str(s.get("pytorch_variant") or "auto")
        if variant == "auto":
            gpus = _as_int(node, "pytorch_gpu_count", s.get("pytorch_gpu_count", 0))
            variant = "cuda" if gpus > 0 else "cpu"
        plan.add_set("pytorch", str(s.get("pytorch_pip_lock_set") or f"pytorch-{variant}"))

    if "tensorflow" in roles and _as_bool(s.get("tensorflow_enabled", False)):
        variant = str(s.get("tensorflow_variant") or "auto")
        if variant == "auto":
            gpus = _as_int(node, "tensorflow_gpu_count", s.get("tensorflow_gpu_count", 0))
            variant = "cuda" if gpus > 0 else "cpu"
        plan.add_set("tensorflow", str(s.get("tensorflow_pip_lock_set") or f"tensorflow-{variant}"))

    if "openmpi" in roles and str(s.get("openmpi_method", "package")) == "package":
        plan.add_debian("openmpi", tables["openmpi"])

    if "cpfs_client" in roles:
        backend = str(s.get("cpfs_client_backend") or "")
        packages = tables["cpfs_client"].get(backend)
        if packages is None:
            raise SccError(f"{node}: cpfs_client_backend {backend!r} is not one of "
                           f"{', '.join(sorted(tables['cpfs_client']))}; fix it in the inventory")
        kernel_bound = [p for p in packages if "{{" in str(p)]
        plan.add_debian("cpfs_client", [p for p in packages if "{{" not in str(p)])
        for p in kernel_bound:
            plan.unfetched[f"cpfs_client {p}"] = ("depends on each node's running kernel; install the headers of "
                                                  "the nodes' kernel into the image or the nodes beforehand")
        key = {"cpfs_nfs": "cpfs_client_cpfs_nfs_package", "cpfs_lustre": "cpfs_client_lustre_package"}.get(backend)
        if key and s.get(key):
            plan.unfetched[key] = "a vendor package file: copy it to the nodes (not bundled yet)"

    if "monitoring" in roles and _as_bool(s.get("scc_monitoring_enabled", True)):
        # node_exporter on every node, Prometheus for the server host: one bundle serves every node.
        for switch, version_key, package, pinned in (
                ("monitoring_node_exporter_install", "monitoring_node_exporter_version", "prometheus-node-exporter",
                 "_monitoring_node_exporter_package"),
                ("monitoring_server_enabled", "monitoring_server_version", "prometheus", "_monitoring_server_package")):
            if _as_bool(s.get(switch, True)):
                version = str(s.get(version_key) or "")
                plan.add_debian("monitoring", [f"{package}={version}" if version else tables["monitoring"][pinned]])

    if "ib_check" in roles and _as_bool(s.get("ib_check_required", False)) \
            and _as_bool(s.get("ib_check_install_packages", True)):
        packages = _as_list(node, "ib_check_packages", s.get("ib_check_packages") or []) or tables["ib_check"]
        plan.add_debian("ib_check", packages)

    if "bert" in roles and str(s.get("bert_corpus_source", "")) == "debian-docs":
        package = str(s.get("bert_corpus_debian_package") or "")
        version = str(s.get("bert_corpus_debian_package_version") or "")
        if package:
            plan.add_debian("bert", [f"{package}={version}" if version else package])

    for role in ("gpu_driver", "cuda", "nccl", "cudnn"):
        method = str(s.get(f"{role}_method") or "adopt")
        if role in roles and method in ("package", "pip"):
            plan.unfetched[f"{role} ({method})"] = (f"{role}_method {method}: NVIDIA's repository packages and wheels "
                                                    "are not bundled yet; use runfile/tarball URLs with their sha256 "
                                                    "(bundled) or install them beforehand and use adopt")
    found, missing = urls.artefacts(node, s, roles)
    plan.unfetched.update(missing)
    for item in found:
        if all(item.file != have.file for have in plan.urls):
            plan.urls.append(item)


def plan_cluster(root: Path, hostvars: Mapping[str, Mapping[str, Any]]) -> Plan:
    """The merged plan of every node (hostvars: node -> its inventory variables)."""
    defaults = role_defaults(root)
    tables = role_tables(root)
    plan = Plan()
    for node in sorted(hostvars):
        plan_node(node, node_settings(node, defaults, hostvars[node]), tables, plan)
    plan.debian = {role: plan.debian[role] for role in ROLES if role in plan.debian}
    plan.pip_sets = {role: plan.pip_sets[role] for role in ROLES if role in plan.pip_sets}
    return plan
