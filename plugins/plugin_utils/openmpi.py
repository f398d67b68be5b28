# Copyright: scc.nlp_training contributors
# Apache-2.0
"""The verify checks of the openmpi role: the version mpirun reports, the MCA settings ompi_info shows, a local
launch. Pure functions over the commands' output; the filter openmpi_problems is a thin wrapper."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Optional

_VERSION = re.compile(r"Open MPI\) ([0-9.]+)")
_PARAM = re.compile(r"^mca:[^:]+:[^:]+:param:([a-z0-9_]+):value:(.*)$")


def mca_values(lines: Iterable[str]) -> dict[str, str]:
    """`ompi_info --all --parsable` lines -> {parameter: value} of every MCA parameter's value line."""
    seen = {}
    for line in lines:
        match = _PARAM.match(str(line))
        if match:
            seen[match.group(1)] = match.group(2)
    return seen


def openmpi_problems(node: str, version: Mapping[str, Any], expected: str, info_lines: Iterable[str],
                     params: Mapping[str, Any], mca_file: str, bin_dir: str,
                     launch: Optional[Mapping[str, Any]] = None) -> list[str]:
    """`version`: the registered `mpirun --version` (rc, stdout, stderr); `info_lines`: ompi_info's output (empty
    when mpirun did not run); `params`: the MCA settings the role wrote into `mca_file`; `launch`: the result of
    `mpirun -np 1 --host localhost hostname` (rc, stdout, stderr), when it ran."""
    stdout = str(version.get("stdout") or "")
    match = _VERSION.search(stdout)
    reported = match.group(1) if match else "?"
    if version.get("rc") != 0 or reported != expected:
        said = stdout.splitlines()[0] if stdout else str(version.get("stderr") or "")
        return ["openmpi on %s: %s/mpirun --version says '%s', expected Open MPI %s. Fix: remove the other Open MPI "
                "from PATH, or set openmpi_version to the version you mean to run." % (node, bin_dir, said, expected)]
    seen = mca_values(info_lines)
    missing = ["%s = %s" % (name, value) for name, value in sorted(params.items()) if seen.get(name) != str(value)]
    if missing:
        return ["openmpi on %s: ompi_info does not show %s as set in %s. Fix: check for an OMPI_MCA_* environment "
                "variable or another openmpi-mca-params.conf that overrides it." % (node, ", ".join(missing), mca_file)]
    if launch is not None and (launch.get("rc") != 0 or not str(launch.get("stdout") or "").strip()):
        said = (str(launch.get("stderr") or "") or str(launch.get("stdout") or "") or "no output").strip()
        said = said[-300:].rstrip(".")
        return ["openmpi on %s: a local launch (%s/mpirun -np 1 --host localhost hostname) failed (rc %s): %s. Fix: "
                "check that root may launch (openmpi_allow_run_as_root) and that the node's own name resolves."
                % (node, bin_dir, launch.get("rc"), said)]
    return []
