"""The collections galaxy.yml declares, as tarballs built offline from an installed `ansible` package.

No Galaxy access is needed: each dependency is taken from the `ansible_collections` package of the running
interpreter, its MANIFEST.json turned back into a galaxy.yml, and built with `ansible-galaxy collection build`.
Used where a machine has no route to Galaxy (the GPU machine's device check; `python -m sccnlp.bundle.collections
OUT` writes them)."""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

from sccnlp.paths import collection_root


def declared_dependencies(root: Path) -> dict[str, str]:
    """galaxy.yml's dependencies: {'community.general': '>=x,<y', ...}."""
    return dict(yaml.safe_load((root / "galaxy.yml").read_text()).get("dependencies") or {})


def installed_collections_dir() -> Path:
    """The `ansible_collections` folder of the `ansible` package next to this interpreter's ansible-core."""
    spec = importlib.util.find_spec("ansible_collections")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("no ansible_collections next to this Python: install the pinned `ansible` package "
                           "(requirements/ci.txt)")
    return Path(next(iter(spec.submodule_search_locations)))


def build_installed(src: Path, copy: Path, out: Path, galaxy_bin: str = "ansible-galaxy") -> Path:
    """`ansible-galaxy collection build` of an installed collection: its MANIFEST.json's collection_info becomes the
    galaxy.yml (the ansible package strips files its FILES.json lists, so the installed folder is no artifact)."""
    info = json.loads((src / "MANIFEST.json").read_text())["collection_info"]
    shutil.copytree(src, copy, ignore=shutil.ignore_patterns("__pycache__", "MANIFEST.json", "FILES.json"))
    galaxy = {k: v for k, v in info.items() if v not in (None, [], {}, "") and k != "license_file"}
    if info.get("license_file") and not info.get("license"):
        galaxy["license_file"] = info["license_file"]
    (copy / "galaxy.yml").write_text(yaml.safe_dump(galaxy))
    proc = subprocess.run([galaxy_bin, "collection", "build", "--force", "--output-path", str(out), str(copy)],
                          cwd=copy, capture_output=True, text=True, check=False, timeout=300)
    if proc.returncode != 0:
        raise RuntimeError(f"ansible-galaxy collection build {copy} failed:\n"
                           f"{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return out / f"{info['namespace']}-{info['name']}-{info['version']}.tar.gz"


def build_dependencies(root: Path, out: Path, galaxy_bin: str = "ansible-galaxy") -> list[Path]:
    """Every declared dependency of the collection at `root`, built into `out` from the installed ansible package."""
    site = installed_collections_dir()
    out.mkdir(parents=True, exist_ok=True)
    made = []
    with tempfile.TemporaryDirectory() as work:
        for name in declared_dependencies(root):
            src = site.joinpath(*name.split("."))
            if not (src / "MANIFEST.json").is_file():
                raise RuntimeError(f"{name} is not in the installed ansible package ({site}): install the pinned "
                                   "`ansible` package (requirements/ci.txt)")
            made.append(build_installed(src, Path(work) / name, out, galaxy_bin))
    return made


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="folder for the tarballs")
    args = parser.parse_args(argv)
    args.out = args.out.resolve()
    galaxy_bin = str(Path(sys.executable).parent / "ansible-galaxy")
    try:
        for path in build_dependencies(collection_root(), args.out, galaxy_bin):
            print(path)
    except RuntimeError as exc:
        print(f"sccnlp.bundle.collections: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
