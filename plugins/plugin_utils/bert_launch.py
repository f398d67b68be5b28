# Copyright: scc.nlp_training contributors
# Apache-2.0
"""Where the BERT launch puts its ranks: mpirun --map-by slot fills the hostfile's lines in order."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def rank_hosts(hosts: Sequence[str], slots: Sequence[Any]) -> list[str]:
    """Rank -> host: each host of the hostfile repeated for its slot count, in order."""
    return [str(host) for host, count in zip(hosts, slots) for _rank in range(int(count))]
