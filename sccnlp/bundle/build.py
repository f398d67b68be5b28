"""`sccnlp bundle build`: the plan of an inventory (plan.py) fetched into one directory, wheels (wheels.py) and
Debian packages (debian.py), then the manifest (manifest.py) written and the whole directory verified against it.
A re-run keeps every file that still verifies and fetches only the rest."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from sccnlp.bundle import debian, manifest, plan, urls, wheels
from sccnlp.errors import SccError
from sccnlp.inventory import group_hosts, plain

LOCK_NAME = "pip_lock.yml"


@dataclass
class Result:
    bundle: Path
    doc: dict[str, Any]
    reused_wheels: int = 0
    reused_files: int = 0
    seconds: dict[str, float] = field(default_factory=dict)


def cluster_hostvars(data: Mapping[str, Any], inventory: str) -> dict[str, dict[str, Any]]:
    """node -> inventory variables of the cluster group (scc_cluster_group, default scc_cluster)."""
    hostvars = plain((data.get("_meta") or {}).get("hostvars") or {})
    groups = {str(v.get("scc_cluster_group")) for v in hostvars.values() if v.get("scc_cluster_group")}
    group = groups.pop() if len(groups) == 1 else "scc_cluster"
    names = group_hosts(data, group)
    if not names:
        raise SccError(f"inventory {inventory} has no hosts in group {group!r} (scc_cluster_group): put the nodes "
                       "there, as for `sccnlp deploy`")
    return {name: dict(hostvars.get(name) or {}) for name in sorted(names)}


def load_lock(path: Path) -> dict[str, Any]:
    try:
        lock = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise SccError(f"python36_pip_lock_file {path} cannot be read ({' '.join(str(exc).split())[:200]}); set it "
                       "to a lock written by python -m sccnlp.piplock, or unset it for the collection's") from exc
    if not isinstance(lock, dict):
        raise SccError(f"python36_pip_lock_file {path} is not a pip lock; set it to a lock written by "
                       "python -m sccnlp.piplock")
    return lock


def _prune(folder: Path, keep: set[str], pattern: str) -> None:
    for path in folder.glob(pattern):
        if path.name not in keep:
            path.unlink()


def build(bundle: Path, hostvars: Mapping[str, Mapping[str, Any]], root: Path, data: Path,
          container: str = "", say: Callable[[str], None] = print) -> Result:
    """Build or refresh the bundle for these nodes; SccError on a bad setting, a missing docker or image, or a
    bundle that does not verify at the end."""
    t0 = time.monotonic()
    the_plan = plan.plan_cluster(root, hostvars)
    lock_path = Path(the_plan.lock_file).expanduser() if the_plan.lock_file else data / LOCK_NAME
    lock = load_lock(lock_path)
    python, platform, release = wheels.lock_target(lock, str(lock_path))
    wanted = wheels.wheels_for(lock, the_plan.pip_sets, str(lock_path))
    if the_plan.debian:
        debian.docker_check(the_plan.image)
    bundle.mkdir(parents=True, exist_ok=True)
    result = Result(bundle, {})

    t1 = time.monotonic()
    say(f"wheels: {len(wanted)} for Python {python} {platform} ({', '.join(sorted(the_plan.pip_sets)) or 'none'})")
    got, unfetched, result.reused_wheels = wheels.fetch(bundle, wanted, python, platform, release)
    _prune(bundle / wheels.WHEELS, {w.file for w in wanted}, "*")
    result.seconds["wheels"] = time.monotonic() - t1

    files: list[urls.UrlArtefact] = []
    if the_plan.urls:
        t3 = time.monotonic()
        say(f"files named by URL: {len(the_plan.urls)} ({', '.join(sorted({u.setting for u in the_plan.urls}))})")
        files, url_unfetched, url_reused = urls.fetch(bundle, the_plan.urls)
        unfetched.update(url_unfetched)
        result.reused_files = url_reused
        result.seconds["urls"] = time.monotonic() - t3
    if (bundle / urls.FILES).is_dir():
        _prune(bundle / urls.FILES, {Path(u.file).name for u in files}, "*")

    arch = platform.split("_", 1)[1]
    debs: list[debian.Deb] = []
    index: list[str] = []
    if the_plan.debian:
        t2 = time.monotonic()
        count = sum(len(v) for v in the_plan.debian.values())
        say(f"Debian packages: {count} requested by {', '.join(the_plan.debian)}, resolved in {the_plan.image}")
        debian.run_container(bundle, the_plan.image, debian.script(the_plan.debian, f"{os.getuid()}:{os.getgid()}"),
                             container or f"sccnlp-bundle-{os.getpid()}")
        node_release, node_arch = debian.parse_target((bundle / ".work" / "target").read_text())
        if (node_release, node_arch) != (release, arch):
            raise SccError(f"scc_bundle_image {the_plan.image} is {node_release} {node_arch} but the pip lock "
                           f"{lock_path} is for {release} {arch}; use an image of the nodes' OS and a lock "
                           "resolved for it")
        debs, deb_unfetched = debian.collect(bundle, the_plan.debian)
        unfetched.update(deb_unfetched)
        folder = bundle / debian.DEB
        index = debian.write_index(folder, debian.scan_packages(folder))
        result.seconds["debian"] = time.monotonic() - t2
    elif (bundle / debian.DEB).is_dir():
        _prune(bundle / debian.DEB, set(), "*")
    unfetched.update(the_plan.unfetched)

    entries = [manifest.entry_for(bundle, f"{wheels.WHEELS}/{w.file}", w.name, w.version, "pypi", w.role)
               for w in got]
    entries += [manifest.entry_for(bundle, d.file, d.name, d.version, "debian", d.role) for d in debs]
    entries += [manifest.entry_for(bundle, u.file, Path(u.file).name, u.sha256[:12],
                                   f"url {manifest.safe_source(u.url)}", u.role) for u in files]
    entries += [manifest.entry_for(bundle, f"{debian.DEB}/{name}", "apt-index", release, "bundle", "bundle")
                for name in index]
    target = {"release": release, "arch": arch, "python": python, "image": the_plan.image}
    doc = manifest.manifest(entries, target, unfetched)
    tmp = bundle / (manifest.MANIFEST + ".tmp")
    tmp.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    tmp.replace(bundle / manifest.MANIFEST)
    problems = manifest.verify(bundle, manifest.load(bundle))
    if problems:
        raise SccError("the bundle does not verify after the build:\n" + "\n".join(problems))
    result.doc = doc
    result.seconds["total"] = time.monotonic() - t0
    return result


def summary_lines(result: Result) -> list[str]:
    """What the CLI prints: counts by role, total size, reuse, time, and every artefact not fetched with why."""
    s = manifest.summary(result.doc)
    target = result.doc["target"]
    lines = [f"bundle {result.bundle}: {s['count']} files, {s['total_bytes'] / 1e6:.1f} MB, for "
             f"{target['release']} {target['arch']} Python {target['python']}"]
    lines += [f"  {role}: {n}" for role, n in sorted(s["by_role"].items())]
    lines.append(f"reused {result.reused_wheels} wheel(s) and {result.reused_files} URL file(s) already there; "
                 + ", ".join(f"{k} {v:.0f} s" for k, v in result.seconds.items()))
    if s["unfetched"]:
        lines.append(f"not in the bundle ({len(s['unfetched'])}):")
        lines += [f"  {name}: {why}" for name, why in sorted(s["unfetched"].items())]
    return lines
