# Copyright: scc.nlp_training contributors
# Apache-2.0
"""Why an mpirun run failed, read from what it printed (stdout and stderr together).

Open MPI ends most failures with paragraphs of generic help text between lines of dashes ("ORTE was unable to
reliably start one or more daemons ... We apologize for the problem."); the cause is usually one line before them,
printed by ssh or by a rank. `failure_cause` finds that line and says what to do about it. A pure function over the
output; the filter mpirun_failure_cause is a thin wrapper, used by the validate role's MPI check and the bert role's
training outcome. Tested on real recorded outputs (tests/fixtures/tool_outputs/mpirun/)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Callable, Optional

# Open MPI's help messages are framed by lines of dashes.
_RULE = re.compile(r"^-{20,}\s*$")
# --tag-output / --timestamp-output prefixes: [1,2]<stderr>: or [1,2]<stdout>:
_TAG = re.compile(r"^\[\d+,(\d+)\]<(stdout|stderr)>:")
# Lines that never explain a failure (Open MPI's own warning inside containers, blank tagged lines).
_NOISE = re.compile(r"plm:rsh: Warning: setpgid|^\s*$")
_CLUSTER_FIX = "run the cluster phase on every node (`sccnlp deploy -i INVENTORY --playbook cluster`)"


def _clean(line: str) -> str:
    return " ".join(line.split())


def outside_help(lines: Sequence[str]) -> list[str]:
    """The lines of `lines` that are not inside one of Open MPI's dashed help blocks (an odd number of dashed lines:
    the text began inside a block, as the tail of a log can)."""
    out: list[str] = []
    inside = sum(1 for line in lines if _RULE.match(line)) % 2 == 1
    for line in lines:
        if _RULE.match(line):
            inside = not inside
            continue
        if not inside:
            out.append(line)
    return out


def _host_key_changed(text: str, _lines: list[str]) -> Optional[str]:
    if "REMOTE HOST IDENTIFICATION HAS CHANGED" not in text:
        return None
    host = re.search(r"Host key for (\S+) has changed", text)
    where = re.search(r"Offending (\S+) key in (\S+)", text)
    name = host.group(1) if host else "a node"
    record = (" (the %s key on record: %s)" % (where.group(1), where.group(2))) if where else ""
    return ("the SSH host key of %s changed: REMOTE HOST IDENTIFICATION HAS CHANGED%s. Fix: if %s was re-imaged, "
            "run `sccnlp node reimaged %s -i INVENTORY` (it records its new keys everywhere and sets it up again); "
            "if it was not, find out why its key changed before connecting to it" % (name, record, name, name))


def _host_key_unknown(text: str, _lines: list[str]) -> Optional[str]:
    found = re.search(r"No (\S+) host key is known for (\S+) and you have requested strict checking", text)
    if not found:
        return None
    return ("host key verification failed: no %s host key of %s is known on the node that launched mpirun. Fix: %s: "
            "it records every node's host keys in /etc/ssh/ssh_known_hosts"
            % (found.group(1), found.group(2), _CLUSTER_FIX))


def _unresolved(text: str, _lines: list[str]) -> Optional[str]:
    found = re.search(r"ssh: Could not resolve hostname ([^\s:]+): (.*)", text)
    if not found:
        return None
    return ("%s does not resolve (ssh: Could not resolve hostname %s: %s). Fix: %s: it writes every node into "
            "/etc/hosts; or correct the name in the MPI hostfile" % (found.group(1), found.group(1),
                                                                     _clean(found.group(2)), _CLUSTER_FIX))


def _no_connection(text: str, _lines: list[str]) -> Optional[str]:
    found = re.search(r"ssh: connect to host (\S+) port (\d+): (.*)", text)
    if not found:
        return None
    host, port, why = found.group(1), found.group(2), _clean(found.group(3))
    fix = ("start sshd on %s" % host) if "refused" in why.lower() else (
        "check that %s is up and that the node launching mpirun reaches it" % host)
    return "%s cannot be reached over SSH on port %s (%s). Fix: %s" % (host, port, why, fix)


def _login_refused(text: str, _lines: list[str]) -> Optional[str]:
    found = re.search(r"^(?:\S+@)?([^\s:@]+): Permission denied \(([^)]*)\)", text, re.M)
    if not found:
        return None
    return ("%s refused the SSH login (Permission denied (%s)). Fix: %s: it authorises the cluster key on every node"
            % (found.group(1), found.group(2), _CLUSTER_FIX))


def _orted_missing(text: str, _lines: list[str]) -> Optional[str]:
    found = re.search(r"^(?:.*: )?(orted|prted): (command not found|No such file or directory)", text, re.M)
    if not found:
        return None
    return ("Open MPI is not installed on a node of the hostfile (%s: %s on the remote side). Fix: %s: it installs "
            "Open MPI (role openmpi) on every node" % (found.group(1), found.group(2), _CLUSTER_FIX))


def _daemon_lost(text: str, _lines: list[str]) -> Optional[str]:
    if "ORTE has lost communication with a remote daemon" not in text:
        return None
    node = re.search(r"Remote daemon:\s*\S+ on node (\S+)", text)
    name = node.group(1) if node else "a node"
    return ("mpirun lost contact with its daemon on %s (the node or its network went away, or the daemon was killed). "
            "Fix: check that %s is up and reachable (ssh %s hostname), then run again" % (name, name, name))


def _not_executable(text: str, _lines: list[str]) -> Optional[str]:
    if "could not access" not in text or "Executable:" not in text:
        return None
    exe = re.search(r"Executable:\s*(\S+)", text)
    node = re.search(r"^Node:\s*(\S+)", text, re.M)
    return ("%s cannot be executed on %s (not found, or not executable). Fix: install it there (the runtime phase "
            "builds the training venv on every node) or correct the path"
            % (exe.group(1) if exe else "the program", node.group(1) if node else "a node"))


def _slots(text: str, _lines: list[str]) -> Optional[str]:
    found = re.search(r"not enough slots available in the system to satisfy the (\d+)", text)
    if not found:
        return None
    return ("the MPI hostfile has fewer slots than the %s ranks asked for. Fix: %s (the hostfile's slots follow "
            "mpi_slots or gpu_count of each node), or ask for fewer ranks" % (found.group(1), _CLUSTER_FIX))


def _as_root(text: str, _lines: list[str]) -> Optional[str]:
    if "mpirun has detected an attempt to run as root" not in text:
        return None
    return ("mpirun refuses to run as root. Fix: pass --allow-run-as-root, or source /etc/scc/scc.env (it sets "
            "OMPI_ALLOW_RUN_AS_ROOT and OMPI_ALLOW_RUN_AS_ROOT_CONFIRM)")


def _rank_said(lines: list[str], rank: int) -> str:
    """The most telling line rank `rank` wrote to stderr: its last error or exception line, else its last line."""
    said = []
    for line in lines:
        tag = _TAG.match(line)
        if tag and int(tag.group(1)) == rank and tag.group(2) == "stderr" and _clean(line[tag.end():]):
            said.append(_clean(line[tag.end():]))
    errors = [line for line in said if re.search(r"error|exception|fatal|killed|denied|no space", line, re.I)]
    return (errors or said or [""])[-1]


def _where(rank: int, rank_hosts: Sequence[str]) -> str:
    return (" on %s" % rank_hosts[rank]) if 0 <= rank < len(rank_hosts) else ""


def _signal(text: str, lines: list[str], rank_hosts: Sequence[str]) -> Optional[str]:
    found = re.search(r"process rank (\d+) with PID \d+ on node (\S+) exited on signal (\d+)(?: \(([^)]*)\))?", text)
    if not found:
        return None
    rank = int(found.group(1))
    said = _rank_said(lines, rank)
    return "rank %d on %s died on signal %s%s%s" % (
        rank, found.group(2), found.group(3), (" (%s)" % found.group(4)) if found.group(4) else "",
        (": %s" % said) if said else "")


def _rank_exit(text: str, lines: list[str], rank_hosts: Sequence[str]) -> Optional[str]:
    found = re.search(r"Process name:\s*\[\[\d+,\d+\],(\d+)\]\s*Exit code:\s*(\d+)", text)
    if not found:
        return None
    rank = int(found.group(1))
    said = _rank_said(lines, rank)
    return "rank %d%s exited with code %s%s" % (rank, _where(rank, rank_hosts), found.group(2),
                                                (": %s" % said) if said else "")


_CAUSES: tuple[Callable[[str, list[str]], Optional[str]], ...] = (
    _host_key_changed, _host_key_unknown, _unresolved, _no_connection, _login_refused, _orted_missing, _daemon_lost,
    _not_executable, _slots, _as_root)


def failure_cause(output: str, rc: object = None, rank_hosts: Sequence[str] = ()) -> str:
    """One line that leads with why mpirun failed, and what to do when that is known.

    `output`: what mpirun printed (stdout and stderr together, in any order); `rc`: its exit status (124: killed by
    `timeout`); `rank_hosts`: the node of each rank, in rank order, to name the node of a failed rank."""
    text = str(output or "")
    lines = text.splitlines()
    for cause in _CAUSES:
        found = cause(text, lines)
        if found:
            return found
    for ranked in (_signal, _rank_exit):
        found = ranked(text, lines, rank_hosts)
        if found:
            return found
    direct = [_clean(_TAG.sub("", line)) for line in outside_help(lines) if not _NOISE.search(line)]
    direct = [line for line in direct if line]
    if str(rc) == "124" and not direct:
        return "mpirun did not finish in time and was stopped (exit 124, nothing printed)"
    errors = [line for line in direct if re.search(r"error|fail|cannot|unable|denied|not found", line, re.I)]
    if errors or direct:
        return (errors or direct)[-1]
    # Only help text: its first sentence says at least which step failed.
    body = [_clean(line) for line in lines if line.strip() and not _RULE.match(line)]
    return body[0] if body else ("mpirun printed nothing (exit %s)" % rc if rc not in (None, "") else
                                 "mpirun printed nothing")
