# Copyright: scc.nlp_training contributors
# Apache-2.0
"""SSH host keys as the cluster role records them for the other nodes' known_hosts."""

from __future__ import annotations

from collections.abc import Iterable


def host_key_lines(texts: Iterable[str]) -> list[str]:
    """The contents of /etc/ssh/ssh_host_*_key.pub -> sorted 'TYPE KEY' (the comment left out); empty files are
    skipped."""
    out = []
    for text in texts:
        fields = str(text or "").split()
        if len(fields) >= 2:
            out.append("%s %s" % (fields[0], fields[1]))
    return sorted(out)
