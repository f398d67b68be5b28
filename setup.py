"""Build step of the sccnlp package: a regular (non-editable) install carries the collection itself.

`pip install .` copies the collection's content (galaxy.yml, meta/, playbooks/, roles/, plugins/, the sccnlp
sources the node wheel is built from) into the wheel at sccnlp/_collection/ansible_collections/scc/nlp_training,
where ansible-galaxy would install it: the installed `sccnlp` runs its own playbooks, found by
sccnlp.paths.collection_root() without any link or shared folder. An editable install uses the checkout instead.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
# What the collection is made of at run time (the rest of the checkout is tests and tooling).
CONTENT = ("galaxy.yml", "ansible.cfg", "site.yml", "README.md", "LICENSE", "pyproject.toml", "meta", "playbooks",
           "roles", "plugins", "sccnlp")
SKIP = shutil.ignore_patterns("__pycache__", "*.pyc", "_collection", "*.egg-info")


class BuildWithCollection(build_py):
    """build_py, plus the collection's content inside the package (not for editable installs)."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        dest = Path(self.build_lib) / "sccnlp" / "_collection" / "ansible_collections" / "scc" / "nlp_training"
        shutil.rmtree(dest, ignore_errors=True)
        dest.mkdir(parents=True)
        for name in CONTENT:
            src = ROOT / name
            if src.is_dir():
                shutil.copytree(src, dest / name, ignore=SKIP, symlinks=False)
            elif src.is_file():
                shutil.copy2(src, dest / name)


setup(cmdclass={"build_py": BuildWithCollection})
