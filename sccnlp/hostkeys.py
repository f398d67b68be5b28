"""The SSH host keys this controller keeps for a node (its known_hosts), and replacing them after a re-image.

Strict host key checking stays on everywhere: a node's recorded key is replaced only when the user says the node
was re-imaged (`sccnlp node reimaged NODE`), with the keys the node sends now, their fingerprints printed (and
checked against `--fingerprint` when given). Which file and which names: what Ansible's ssh connection uses for the
node (ansible_host, ansible_port, ansible_ssh_common_args/extra_args, the user's ssh configuration), as `ssh -G`
evaluates it. The parsing is pure (unit-tested); ssh, ssh-keyscan and ssh-keygen do the rest."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from sccnlp.errors import SccError

SSH_CONNECTIONS = ("ssh", "smart", "ansible.builtin.ssh", "paramiko", "ansible.builtin.paramiko_ssh")
KEY_TYPES = "ed25519,ecdsa,rsa"


@dataclass
class Access:
    """How Ansible reaches the node: its connection plugin and, for ssh, the address, port and ssh arguments."""

    node: str
    connection: str = "ssh"
    address: str = ""
    port: int = 22
    ssh_args: list[str] = field(default_factory=list)

    @property
    def over_ssh(self) -> bool:
        return self.connection in SSH_CONNECTIONS


def access_from_hostvars(node: str, hostvars: dict[str, Any]) -> Access:
    """The node's connection settings from its inventory variables (ansible-inventory --host), refusing values the
    controller cannot evaluate here (a template) with the setting named."""
    def get(*names: str) -> Optional[str]:
        for name in names:
            value = hostvars.get(name)
            if value is None or value == "":
                continue
            text = str(value)
            if "{{" in text or "{%" in text:
                raise SccError(f"{node}: {name} is a template ({text!r}), which `sccnlp node` does not evaluate: set a "
                               "plain value in the inventory")
            return text
        return None

    connection = get("ansible_connection") or "ssh"
    port_text = get("ansible_port", "ansible_ssh_port")
    try:
        port = int(port_text) if port_text else 22
    except ValueError:
        raise SccError(f"{node}: ansible_port {port_text!r} is not a number: set ansible_port: 22") from None
    args: list[str] = []
    for name in ("ansible_ssh_common_args", "ansible_ssh_extra_args"):
        text = get(name)
        if text:
            try:
                args += shlex.split(text)
            except ValueError as exc:
                raise SccError(f"{node}: {name} {text!r} does not split into ssh arguments ({exc}): fix its quoting") \
                    from None
    return Access(node=node, connection=connection.rsplit(".", 1)[-1] if connection.startswith("ansible.builtin.")
                  else connection, address=get("ansible_host", "ansible_ssh_host") or node, port=port, ssh_args=args)


def parse_ssh_config(text: str) -> dict[str, list[str]]:
    """`ssh -G` output: option (lower case) -> its values (a line `userknownhostsfile ~/.ssh/a ~/.ssh/b`)."""
    out: dict[str, list[str]] = {}
    for line in text.splitlines():
        key, _sep, value = line.strip().partition(" ")
        if key:
            out.setdefault(key.lower(), []).extend(value.split())
    return out


def host_names(config: dict[str, list[str]], address: str, port: int) -> list[str]:
    """The names ssh looks the node up by in known_hosts: its HostKeyAlias when set, else the host name ssh connects
    to (`[host]:port` for a port other than 22)."""
    alias = (config.get("hostkeyalias") or [""])[0]
    host = alias or (config.get("hostname") or [address])[0]
    real_port = int((config.get("port") or [str(port)])[0])
    return [host if alias or real_port == 22 else f"[{host}]:{real_port}"]


def known_hosts_files(config: dict[str, list[str]], home: Optional[str] = None) -> list[Path]:
    """The user known_hosts files ssh reads for the node (UserKnownHostsFile), ~ expanded; `none` is no file."""
    home = home or os.path.expanduser("~")
    files = config.get("userknownhostsfile") or ["~/.ssh/known_hosts"]
    return [Path(f.replace("~", home, 1) if f.startswith("~") else f) for f in files if f.lower() != "none"]


def scanned_keys(text: str) -> list[str]:
    """`ssh-keyscan` output -> the key lines (`HOST TYPE BASE64`), comments and blank lines dropped, sorted."""
    lines = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 3 and not line.startswith("#"):
            lines.append(" ".join(parts[:3]))
    return sorted(set(lines))


def fingerprint_lines(text: str) -> list[str]:
    """`ssh-keygen -lf` output -> `SHA256:... (TYPE)` per key."""
    out = []
    for line in text.splitlines():
        found = re.match(r"^\d+\s+(\S+)\s+.*?(\([A-Z0-9-]+\))\s*$", line.strip())
        if found:
            out.append(f"{found.group(1)} {found.group(2)}")
    return out


def _run(cmd: list[str], what: str, timeout: int = 30, stdin: Optional[str] = None) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False, input=stdin)
    except FileNotFoundError:
        raise SccError(f"{cmd[0]} is not installed on this controller ({what}): install the OpenSSH client") from None
    except subprocess.TimeoutExpired:
        raise SccError(f"{what}: `{' '.join(cmd[:3])} ...` did not finish within {timeout} s") from None


def effective_config(access: Access) -> dict[str, list[str]]:
    proc = _run(["ssh", "-G", *access.ssh_args, "-p", str(access.port), access.address], "reading the ssh settings")
    if proc.returncode != 0:
        raise SccError(f"{access.node}: ssh cannot read its settings for {access.address} "
                       f"({' '.join(proc.stderr.split())[:300]}): fix ansible_ssh_common_args or your ssh config")
    return parse_ssh_config(proc.stdout)


def scan(access: Access, config: dict[str, list[str]]) -> list[str]:
    """The keys the node sends now (ssh-keyscan), as known_hosts lines for its names."""
    host = (config.get("hostname") or [access.address])[0]
    port = (config.get("port") or [str(access.port)])[0]
    proc = _run(["ssh-keyscan", "-T", "10", "-t", KEY_TYPES, "-p", port, host], "reading the node's host keys",
                timeout=60)
    keys = scanned_keys(proc.stdout)
    if not keys:
        said = " ".join(proc.stderr.split())[:300] or "no answer"
        raise SccError(f"{access.node}: no SSH host key came back from {host} port {port} (ssh-keyscan: {said}); "
                       "nothing was changed. Fix: start the node and its sshd, or correct ansible_host/ansible_port in "
                       "the inventory")
    names = host_names(config, access.address, access.port)
    return sorted({f"{','.join(names)} {' '.join(line.split()[1:3])}" for line in keys})


def fingerprints(lines: list[str]) -> list[str]:
    proc = _run(["ssh-keygen", "-lf", "-"], "computing fingerprints", stdin="\n".join(lines) + "\n")
    return fingerprint_lines(proc.stdout)


def recorded(files: list[Path], names: list[str]) -> dict[Path, list[str]]:
    """The lines each file holds for the names (`ssh-keygen -F`, hashed entries included)."""
    out: dict[Path, list[str]] = {}
    for path in files:
        if not path.is_file():
            continue
        for name in names:
            proc = _run(["ssh-keygen", "-F", name, "-f", str(path)], f"reading {path}")
            found = [line for line in proc.stdout.splitlines() if line.strip() and not line.startswith("#")]
            if found:
                out.setdefault(path, []).extend(found)
    return out


def replace(files: list[Path], names: list[str], lines: list[str]) -> list[str]:
    """Remove every key of `names` from `files` (ssh-keygen -R keeps FILE.old) and add `lines` to the first file.
    Returns what was done, one line each."""
    done = []
    for path, old in recorded(files, names).items():
        for name in names:
            _run(["ssh-keygen", "-R", name, "-f", str(path)], f"removing the old keys from {path}")
        done.append(f"removed {len(old)} old key line(s) of {', '.join(names)} from {path} (backup {path}.old)")
    target = files[0]
    target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    existing = target.read_text() if target.is_file() else ""
    with target.open("a") as out:
        if existing and not existing.endswith("\n"):
            out.write("\n")
        out.write("\n".join(lines) + "\n")
    done.append(f"added {len(lines)} key line(s) of {', '.join(names)} to {target}")
    return done


def unreachable_cause(msg: str, host: str, inventory: str = "INVENTORY") -> Optional[str]:
    """For a node Ansible could not reach: one line with the cause found in ssh's message and the command that
    mends it, or None when the message shows no cause this knows (the generic fix applies then)."""
    text = " ".join(str(msg or "").split())
    changed = "REMOTE HOST IDENTIFICATION HAS CHANGED" in text
    unknown = re.search(r"No (\S+) host key is known for (\S+) and you have requested strict checking", text)
    command = f"`sccnlp node reimaged {host} -i {inventory}`"
    if changed:
        record = re.search(r"Offending (\S+) key in (\S+)", text)
        sent = re.search(r"key sent by the remote host is (SHA256:[A-Za-z0-9+/=]+?)\.? ", text + " ")
        return (f"{host}: its SSH host key is not the one this controller recorded"
                + (f" ({record.group(1)} key in {record.group(2)})" if record else "")
                + ": REMOTE HOST IDENTIFICATION HAS CHANGED"
                + (f", the node now sends {sent.group(1)}" if sent else "")
                + f". Fix: if {host} was re-imaged, run {command}: it replaces the key there, sets {host} up again "
                "and refreshes every node's cluster files; if it was not, do not connect until you know why its key "
                "changed")
    if unknown:
        return (f"{host}: this controller has no {unknown.group(1)} host key of {unknown.group(2)} on record and host "
                f"key checking is strict. Fix: if {host} is new or was re-imaged, run {command}: it records the keys "
                "the node sends (compare the fingerprints it prints with the node's console) and sets it up")
    denied = re.search(r"Permission denied \(([^)]*)\)", text)
    if denied:
        return (f"{host}: the node refused the controller's SSH login (Permission denied ({denied.group(1)})). Fix: "
                "authorise the controller's key for the inventory's ansible_user on the node (or set "
                "ansible_ssh_private_key_file), then run the same command again")
    return None
