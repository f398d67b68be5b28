# Copyright: scc.nlp_training contributors
# Apache-2.0
"""Which of a role's distribution packages a node still needs (the os_packages role installs only those)."""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Sequence


def pending(dpkg_lines: Iterable[str], names: Sequence[str]) -> list[str]:
    """`dpkg_lines`: `dpkg-query -W -f='${db:Status-Abbrev} ${binary:Package} ${Version}\\n' NAME...` (a package
    dpkg never knew prints nothing); `names`: NAME or NAME=VERSION (a trailing * pins a prefix). The names that are
    not installed, or installed at another version than their pin, in the order given."""
    installed = {}
    for line in dpkg_lines:
        fields = str(line).split()
        if len(fields) >= 3 and fields[0].startswith("ii"):
            installed[fields[1].split(":", 1)[0]] = fields[2]
    out = []
    for name in names:
        bare, _eq, pin = str(name).partition("=")
        have = installed.get(bare)
        if have is None or (pin and not fnmatch.fnmatchcase(have, pin)):
            out.append(str(name))
    return out
