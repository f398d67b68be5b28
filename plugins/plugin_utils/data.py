# Copyright: scc.nlp_training contributors
# Apache-2.0
"""The one resolver of the collection's data files (sccnlp/data/*.yml: compatibility matrix, floors, instance
types) for the controller side: lookups, filters, the inventory plugin and the sccnlp tool.

The files are found through the import system, as resources of the package that holds them, so the same call works
from a checkout, from a collection installed by ansible-galaxy and from an installed sccnlp wheel; nothing is
computed from a file's own location."""

from __future__ import annotations

import importlib
import importlib.resources
from typing import Any

# Where the data lives: <package>/<folder>. Tried in order: sccnlp/data of the collection as Ansible (or a
# collections path on sys.path) imports it, then the data of the sccnlp package on its own (a wheel outside Ansible).
_PLACES = (("ansible_collections.scc.nlp_training", "sccnlp/data"), ("sccnlp", "data"))


class DataFileError(LookupError):
    """A data file is missing or unreadable; the message names it and the fix."""


def data_names() -> list[str]:
    """The data files the collection ships."""
    return sorted(p.name for p in _data_dir().iterdir() if p.name.endswith(".yml"))


def _data_dir():
    errors = []
    for package, folder_name in _PLACES:
        try:
            folder = importlib.resources.files(importlib.import_module(package)).joinpath(*folder_name.split("/"))
        except (ImportError, TypeError) as exc:
            errors.append("%s: %s" % (package, exc))
            continue
        if folder.is_dir():
            return folder
        errors.append("%s: no %s folder" % (package, folder_name))
    raise DataFileError("the scc.nlp_training data folder (sccnlp/data) was not found (%s); reinstall the collection"
                        % "; ".join(errors))


def data_folder() -> str:
    """Filesystem path of the sccnlp/data folder."""
    return str(_data_dir())


def data_path(name: str) -> str:
    """Filesystem path of sccnlp/data/<name>."""
    path = _data_dir() / name
    if not path.is_file():
        raise DataFileError("scc.nlp_training has no data file %r (it has: %s)" % (name, ", ".join(data_names())))
    return str(path)


def load_data(name: str) -> Any:
    """sccnlp/data/<name>, parsed as YAML."""
    import yaml

    # libyaml's safe loader where PyYAML has it (about 8x faster on the pip lock, parsed in every worker that
    # templates a task using it), else the pure-Python one: the same safe subset either way.
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        with open(data_path(name), encoding="utf-8") as handle:
            return yaml.load(handle, Loader=loader)
    except (OSError, yaml.YAMLError) as exc:
        raise DataFileError("cannot read scc.nlp_training data file %s: %s; restore it from the collection"
                            % (name, exc)) from exc
