"""Where the collection and its data files are, from a checkout or an installed collection."""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from types import ModuleType

# Where a non-editable install (`pip install .`) carries the collection: inside the package, at the path
# ansible-galaxy would install it to (setup.py's build step copies it there), so Ansible finds it without a link.
BUNDLED_COLLECTIONS = Path(__file__).resolve().parent / "_collection"


def collection_root() -> Path:
    """The scc.nlp_training collection root (holds galaxy.yml, playbooks/, roles/).

    `SCCNLP_COLLECTION` overrides; otherwise the folder above this package when it is the collection (a checkout,
    or the collection as installed by ansible-galaxy, which ships this package inside it); otherwise the copy a
    non-editable pip install carries in `sccnlp/_collection/ansible_collections/scc/nlp_training`.
    """
    env = os.environ.get("SCCNLP_COLLECTION")
    # Absolute, because ansible-runner runs ansible-playbook from a folder of its own.
    if env:
        return Path(env).expanduser().resolve()
    above = Path(__file__).resolve().parent.parent
    bundled = BUNDLED_COLLECTIONS / "ansible_collections" / "scc" / "nlp_training"
    if not (above / "galaxy.yml").is_file() and (bundled / "galaxy.yml").is_file():
        return bundled
    return above


def collection_module(name: str) -> ModuleType:
    """A pure-Python module of the collection (plugins/module_utils, plugins/plugin_utils) by its import name,
    `ansible_collections.scc.nlp_training.<name>`, the same module Ansible loads; the collections path the runner
    links for ansible-runner is made importable first."""
    from sccnlp.errors import SccError
    from sccnlp.runner import _collections_path

    for entry in _collections_path().split(os.pathsep):
        if entry and entry not in sys.path:
            sys.path.append(entry)
    try:
        return importlib.import_module(f"ansible_collections.scc.nlp_training.{name}")
    except ImportError as exc:
        raise SccError(f"cannot import {name} of the scc.nlp_training collection ({exc}); run from a checkout or "
                       "an installed collection, or set SCCNLP_COLLECTION") from exc


def data_dir() -> Path:
    """Data files shared by Ansible and Python (compatibility matrix, floors, instance types), through the
    collection's one data resolver (plugins/plugin_utils/data.py)."""
    return Path(collection_module("plugins.plugin_utils.data").data_folder())


def playbook(name: str) -> Path:
    """Path of `playbooks/<name>.yml` in the collection."""
    return collection_root() / "playbooks" / f"{name}.yml"
