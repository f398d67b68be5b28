"""Build a reproducible pure-Python wheel of the `sccnlp` package from the collection's source tree (stdlib only).

Usage: sccnlp_wheel.py COLLECTION_ROOT OUT_DIR  -> prints the wheel's path. The same source gives the same bytes
(sorted entries, fixed timestamps, no __pycache__), so copying it to the nodes is idempotent, and the nodes need
no build tools (pip installs a wheel without setuptools/wheel).
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import sys
import zipfile
from pathlib import Path

EPOCH = (1980, 1, 1, 0, 0, 0)


def _project(pyproject: Path) -> tuple[str, str, dict[str, str]]:
    text = pyproject.read_text(encoding="utf-8")
    project = text.split("[project]", 1)[1].split("\n[", 1)[0]
    name = re.search(r'^name\s*=\s*"([^"]+)"', project, re.M)
    version = re.search(r'^version\s*=\s*"([^"]+)"', project, re.M)
    if name and not version:
        # dynamic = ["version"]: the package's __version__ is the one source (pyproject's [tool.setuptools.dynamic]).
        init = pyproject.parent / name.group(1) / "__init__.py"
        if init.is_file():
            version = re.search(r'^__version__\s*=\s*"([^"]+)"', init.read_text(encoding="utf-8"), re.M)
    if not name or not version:
        raise SystemExit(f"{pyproject}: no [project] name, or no version there or in the package's __version__")
    scripts: dict[str, str] = {}
    if "[project.scripts]" in text:
        block = text.split("[project.scripts]", 1)[1].split("\n[", 1)[0]
        scripts = dict(re.findall(r'^([A-Za-z0-9_.-]+)\s*=\s*"([^"]+)"', block, re.M))
    return name.group(1), version.group(1), scripts


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def build(root: Path, out_dir: Path) -> Path:
    name, version, scripts = _project(root / "pyproject.toml")
    package = root / name
    files = sorted(p for p in package.rglob("*") if p.is_file() and "__pycache__" not in p.parts
                   and p.suffix not in (".pyc", ".pyo"))
    dist_info = f"{name}-{version}.dist-info"
    entries: list[tuple[str, bytes]] = [(p.relative_to(root).as_posix(), p.read_bytes()) for p in files]
    entries.append((f"{dist_info}/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode()))
    entries.append((f"{dist_info}/WHEEL", b"Wheel-Version: 1.0\nGenerator: scc.nlp_training bert role\n"
                    b"Root-Is-Purelib: true\nTag: py3-none-any\n"))
    if scripts:
        lines = "".join(f"{k} = {v}\n" for k, v in sorted(scripts.items()))
        entries.append((f"{dist_info}/entry_points.txt", f"[console_scripts]\n{lines}".encode()))
    record = "".join(f"{path},{_record_hash(data)},{len(data)}\n" for path, data in entries)
    record += f"{dist_info}/RECORD,,\n"
    entries.append((f"{dist_info}/RECORD", record.encode()))
    out_dir.mkdir(parents=True, exist_ok=True)
    wheel = out_dir / f"{name}-{version}-py3-none-any.whl"
    tmp = wheel.with_name(f".{wheel.name}.{os.getpid()}.tmp")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for path, data in entries:
            info = zipfile.ZipInfo(path, date_time=EPOCH)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    os.replace(tmp, wheel)
    return wheel


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    print(build(Path(sys.argv[1]), Path(sys.argv[2])))
