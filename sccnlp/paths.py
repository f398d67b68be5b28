"""Where the collection and its data files are, from a checkout or an installed collection."""

from __future__ import annotations

import os
from pathlib import Path


def collection_root() -> Path:
    """The scc.nlp_training collection root (holds galaxy.yml, playbooks/, roles/).

    `SCCNLP_COLLECTION` overrides; otherwise the folder above this package (a checkout, or the collection as
    installed by ansible-galaxy, which ships this package inside it).
    """
    env = os.environ.get("SCCNLP_COLLECTION")
    # Absolute, because ansible-runner runs ansible-playbook from a folder of its own.
    root = Path(env).expanduser().resolve() if env else Path(__file__).resolve().parent.parent
    return root


def data_dir() -> Path:
    """Data files shared by Ansible and Python (compatibility matrix, floors, instance types)."""
    return Path(__file__).resolve().parent / "data"


def playbook(name: str) -> Path:
    """Path of `playbooks/<name>.yml` in the collection."""
    return collection_root() / "playbooks" / f"{name}.yml"
