"""Run the collection's playbooks through ansible-runner, print per-host progress, summarise per host."""

from __future__ import annotations

import itertools
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, TextIO

import yaml

from sccnlp.errors import SccError
from sccnlp.paths import collection_root, playbook
from sccnlp.phases import phase_line, phase_times, play_phases

# What to install for the controller side: the package from this checkout (or its wheel) with the controller
# extra; `sccnlp` is not on the Python package index.
CONTROLLER_INSTALL_HINT = ("from the collection's checkout run `pip install '.[controller]'` (or `make bootstrap`), "
                           "then run sccnlp from that environment")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_PROGRESS_EVENTS = {
    "runner_on_ok": "ok",
    "runner_on_failed": "FAILED",
    "runner_on_unreachable": "UNREACHABLE",
    "runner_on_skipped": "skipped",
}


@dataclass
class HostSummary:
    ok: int = 0
    changed: int = 0
    failed: int = 0
    unreachable: int = 0
    skipped: int = 0
    messages: list[str] = field(default_factory=list)
    last_task: str = ""  # the host's last task and its result ("Write the fragment: ok")
    unreachable_msg: str = ""  # ssh's own words the last time the host could not be reached (the cause is in them)

    @property
    def healthy(self) -> bool:
        return not self.failed and not self.unreachable


@dataclass
class RunResult:
    status: str
    rc: int
    hosts: dict[str, HostSummary]
    artifacts: str = ""  # ansible-runner's record of this run (events, stdout), kept for reading afterwards
    phases: list[tuple[str, float]] = field(default_factory=list)  # (phase, seconds) in the order they ran

    @property
    def ok(self) -> bool:
        return self.rc == 0 and all(h.healthy for h in self.hosts.values())

    def bad_hosts(self) -> dict[str, HostSummary]:
        return {name: h for name, h in self.hosts.items() if not h.healthy}


_RUN_NUMBERS = itertools.count(1)
KEEP_RUNS = 5  # runs of each playbook whose ansible-runner artifacts are kept (the oldest go first)


def runs_root() -> Path:
    """Where the artifacts of the last KEEP_RUNS runs of each playbook are kept: $SCCNLP_HOME/runs/<playbook>/."""
    return Path(os.environ.get("SCCNLP_HOME", Path.home() / ".sccnlp")) / "runs"


def prune_runs(keep: Path, count: int) -> None:
    """Remove all but the newest `count` run folders under `keep`, locked by the file `.<keep name>.lock` beside it.

    ansible-runner's own rotation (rotate_artifacts) lists and removes without a lock: two runs of one playbook started
    together (two terminals, two checkouts, two CI jobs of one user) removed the same old folder and one of them died
    in shutil.rmtree. Here the pruning is serialised, and a folder another process removed meanwhile is not an error.
    """
    import fcntl

    with open(keep.parent / f".{keep.name}.lock", "a", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        runs = []
        for entry in keep.iterdir():
            try:
                if entry.is_dir():
                    runs.append((entry.stat().st_mtime, entry.name, entry))
            except FileNotFoundError:
                continue
        for _mtime, _name, entry in sorted(runs)[:max(len(runs) - count, 0)]:
            shutil.rmtree(entry, ignore_errors=True)


def _unreachable_line(host: str, res: dict[str, Any], inventory: str) -> str:
    from sccnlp.hostkeys import unreachable_cause

    msg = str(res.get("msg") or "")
    return unreachable_cause(msg, host, inventory) or _one_line(msg)


def _event_printer(stream: TextIO, verbose: bool, inventory: str = "INVENTORY") -> Callable[[dict[str, Any]], bool]:
    started = time.monotonic()

    def on_event(event: dict[str, Any]) -> bool:
        kind = event.get("event", "")
        data = event.get("event_data", {})
        if kind == "playbook_on_play_start":
            print(f"== {data.get('play', '')} (at {time.monotonic() - started:.0f} s)", file=stream, flush=True)
        elif kind == "playbook_on_task_start" and verbose:
            print(f"   - {data.get('task', '')}", file=stream, flush=True)
        elif kind in _PROGRESS_EVENTS:
            label = _PROGRESS_EVENTS[kind]
            res = data.get("res") or {}
            changed = " (changed)" if res.get("changed") else ""
            if label in ("FAILED", "UNREACHABLE") or changed or verbose:
                line = f"   {data.get('host', '?'):<14} {label:<11} {data.get('task', '')}{changed}"
                if label == "UNREACHABLE":
                    line += f": {_unreachable_line(data.get('host', '?'), res, inventory)}"
                elif label == "FAILED":
                    line += f": {_one_line(res.get('msg') or res.get('stderr') or '')}"
                print(line, file=stream, flush=True)
        return True

    return on_event


# A failure's message in the per-host summary: whole up to this length (the fix comes after the cause, and a
# message with commands to run is long); the progress lines keep to _one_line's default.
MESSAGE_LIMIT = 2000


def _one_line(text: Any, limit: int = 400) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def run_playbook(
    name: str,
    inventory: str | os.PathLike[str],
    extravars: dict[str, Any] | None = None,
    limit: str | None = None,
    tags: str | None = None,
    check: bool = False,
    verbose: bool = False,
    stream: TextIO | None = None,
    envvars: dict[str, str] | None = None,
    event_handler: Callable[[dict[str, Any]], bool] | None = None,
) -> RunResult:
    """Run `playbooks/<name>.yml` (or a playbook path ending in .yml) against `inventory`; summarise per host.

    Bad input is refused before anything runs, with one SccError: an unknown playbook (the available ones listed), a
    missing inventory, YAML that does not parse (file, line, column), tags that no play or task of the playbook has.
    """
    if sys.version_info < (3, 11):  # pragma: no cover - depends on the interpreter
        raise SccError(f"the controller commands need Python 3.11 or newer (ansible-core 2.18+), this is "
                       f"{sys.version.split()[0]}: create the controller's venv with python3.11 or newer")
    try:
        import ansible_runner
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise SccError(f"ansible-runner is not installed for {sys.executable}: {CONTROLLER_INSTALL_HINT}") from exc

    stream = stream or sys.stdout
    book = resolve_playbook(name)
    inv = Path(inventory).expanduser()
    if not inv.exists():
        raise SccError(f"inventory {inv} does not exist: pass --inventory PATH (or run `sccnlp testbed up`)")
    check_inventory_yaml(inv)

    cmdline = "--check --diff" if check else ""
    env = {
        "ANSIBLE_COLLECTIONS_PATH": _collections_path(),
        "ANSIBLE_FORCE_COLOR": "0",
        "ANSIBLE_NOCOLOR": "1",
        # ansible-runner wraps the caller's stdout callback; a json or other one in the user's environment would
        # strip the task messages and progress from the events this module prints.
        "ANSIBLE_STDOUT_CALLBACK": "ansible.builtin.default",
        # An inventory that does not parse is an error, not a silent run on zero hosts.
        "ANSIBLE_INVENTORY_UNPARSED_FAILED": "True",
        # ansible-runner turns host key checking off unless told: ssh would then get StrictHostKeyChecking=no ahead
        # of the inventory's own options (ssh keeps the first). Keep it on, as ansible.cfg says.
        "ANSIBLE_HOST_KEY_CHECKING": "True",
    }
    config = _ansible_config()
    if config is not None:
        env["ANSIBLE_CONFIG"] = config
    search_path = _search_path()
    if search_path is not None:
        env["PATH"] = search_path
    env.update(envvars or {})
    if tags is not None:
        check_tags(book, tags, env)
    keep = runs_root() / book.stem
    keep.mkdir(parents=True, exist_ok=True, mode=0o700)
    # The process's run count too: two runs of one playbook within a second (the API) get their own folders.
    ident = f"{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{os.getpid()}-{next(_RUN_NUMBERS)}"
    # This run's folder is made by ansible-runner below: keep room for it.
    prune_runs(keep, KEEP_RUNS - 1)
    with tempfile.TemporaryDirectory(prefix="sccnlp-runner-") as private:
        result = ansible_runner.run(
            private_data_dir=private,
            artifact_dir=str(keep),
            ident=ident,
            rotate_artifacts=0,  # prune_runs above, under a lock
            playbook=str(book),
            inventory=str(inv.resolve()),
            extravars=extravars or {},
            limit=limit,
            tags=tags,
            cmdline=cmdline or None,
            envvars=env,
            event_handler=event_handler or _event_printer(stream, verbose, str(inventory)),
            quiet=True,
            suppress_env_files=True,
        )
        hosts = _summarise(result)
        rc = int(result.rc or 0)
        if not hosts:
            # Nothing ran on any host: the playbook or the inventory was refused before the first task, or no
            # host matched. Either way a per-host summary would say nothing; say why instead.
            if rc != 0:
                raise SccError(f"ansible-playbook could not run {book.name} with inventory {inv}: "
                               f"{_ansible_error(result)}")
            raise SccError(f"no host of inventory {inv} matched the plays of {book.name}: put the nodes in the "
                           "group 'scc_cluster' (or set scc_cluster_group) and check --limit")
        times = phase_times(result.events, play_phases(book))
    return RunResult(status=result.status, rc=rc, hosts=hosts, artifacts=str(keep / ident), phases=times)


def resolve_playbook(name: str) -> Path:
    """`playbooks/<name>.yml` of the collection, or a playbook file given by path (ending in .yml/.yaml), absolute:
    ansible-runner runs ansible-playbook from a private folder of its own."""
    folder = playbook("site").parent
    if name.endswith((".yml", ".yaml")):
        path = Path(name).expanduser().resolve()
        if not path.is_file():
            raise SccError(f"playbook file {path} does not exist: give the path of a playbook, or the name of one "
                           f"under {folder} ({', '.join(playbook_names()) or 'none found'})")
        return path
    book = playbook(name)
    if book.is_file():
        return book
    names = playbook_names()
    if not names:
        where = f"SCCNLP_COLLECTION={os.environ['SCCNLP_COLLECTION']}" if os.environ.get("SCCNLP_COLLECTION") \
            else f"the collection root {collection_root()}"
        raise SccError(f"no playbooks under {folder}: {where} is not the collection root; point SCCNLP_COLLECTION "
                       "at the folder that holds galaxy.yml and playbooks/, or unset it")
    raise SccError(f"no playbook {name!r} in {folder}: choose one of {', '.join(names)} "
                   "(or give the path of a .yml file)")


def playbook_names() -> list[str]:
    """The collection's playbooks, by the name `--playbook` takes."""
    folder = playbook("site").parent
    return sorted(p.stem for p in folder.glob("*.yml")) if folder.is_dir() else []


def _inventory_yaml_files(inventory: Path) -> list[Path]:
    """The YAML files Ansible reads for an inventory: the file itself (or every YAML file under a directory
    inventory) and the group_vars/ and host_vars/ beside it."""
    suffixes = (".yml", ".yaml")
    if inventory.is_dir():
        return sorted(p for p in inventory.rglob("*") if p.suffix in suffixes and p.is_file())
    files = [inventory] if inventory.suffix in suffixes else []
    for folder in ("group_vars", "host_vars"):
        vars_dir = inventory.parent / folder
        if vars_dir.is_dir():
            files += sorted(p for p in vars_dir.rglob("*") if p.suffix in suffixes and p.is_file())
    return files


def check_inventory_yaml(inventory: Path) -> None:
    """Refuse an inventory whose YAML does not parse, naming the file, line and column (Ansible's own message
    blames its 'auto' inventory plugin and gives no position). Only the syntax is checked: Ansible's tags
    (!vault, !unsafe) and duplicate keys are left to Ansible."""
    for path in _inventory_yaml_files(inventory):
        try:
            text = path.read_text()
        except (OSError, UnicodeDecodeError) as exc:
            raise SccError(f"inventory file {path} cannot be read ({exc}): fix its permissions or encoding (UTF-8)") \
                from exc
        try:
            for _node in yaml.compose_all(text, Loader=yaml.SafeLoader):
                pass
        except yaml.MarkedYAMLError as exc:
            position, problem = yaml_problem(exc)
            where = f"{path}, {position}" if position else str(path)
            raise SccError(f"inventory {where}: YAML error: {problem}; fix the YAML there "
                           "(indentation, a missing ':', an unclosed bracket or quote)") from exc
        except yaml.YAMLError as exc:
            raise SccError(f"inventory {path}: YAML error: {_one_line(exc)}; fix the YAML there") from exc


def yaml_problem(exc: yaml.YAMLError) -> tuple[str, str]:
    """Where a YAML error is ('line L, column C', or '' when it has no position) and what it is, in one line (with
    the position of its context, such as the bracket left open)."""
    if not isinstance(exc, yaml.MarkedYAMLError):
        return "", _one_line(exc)
    mark = exc.problem_mark or exc.context_mark
    position = f"line {mark.line + 1}, column {mark.column + 1}" if mark else ""
    context = ""
    if exc.context and exc.context_mark and exc.context_mark is not mark:
        context = f" ({exc.context} at line {exc.context_mark.line + 1}, column {exc.context_mark.column + 1})"
    return position, f"{exc.problem}{context}"


# Tags Ansible itself understands whatever the playbook holds.
_SPECIAL_TAGS = frozenset({"all", "tagged", "untagged"})
_TAG_LIST = re.compile(r"TAGS: \[([^\]]*)\]")


def playbook_tags(book: Path, env: dict[str, str]) -> set[str]:
    """Every tag of the playbook's plays and tasks (`ansible-playbook --list-tags`, on a placeholder inventory:
    the tags do not depend on the hosts)."""
    run_env = {**os.environ, **env}
    tool = shutil.which("ansible-playbook", path=run_env.get("PATH")) or "ansible-playbook"
    try:
        proc = subprocess.run([tool, "--list-tags", "-i", "localhost,", str(book)], env=run_env,
                              capture_output=True, text=True, timeout=300, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SccError(f"could not list the tags of {book.name} with {tool}: {exc}") from exc
    if proc.returncode != 0:
        lines = [x.strip() for x in _ANSI.sub("", proc.stderr + proc.stdout).splitlines() if x.strip()]
        why = next((x for x in lines if x.startswith(("[ERROR]:", "ERROR!"))), lines[-1] if lines else "no output")
        raise SccError(f"could not list the tags of {book.name}: {_one_line(why)}")
    return {tag.strip() for found in _TAG_LIST.findall(proc.stdout) for tag in found.split(",") if tag.strip()}


def check_tags(book: Path, tags: str, env: dict[str, str]) -> None:
    """Refuse tags that select nothing in the playbook (Ansible runs zero tasks and reports success)."""
    wanted = [t.strip() for t in tags.split(",")]
    if not all(wanted):
        raise SccError(f"-t/--tags {tags!r} has an empty name: give tags separated by commas, e.g. -t cluster,nccl")
    known = playbook_tags(book, env)
    unknown = [t for t in wanted if t not in known and t not in _SPECIAL_TAGS]
    if unknown:
        listed = ", ".join(sorted(known - {"always"}))
        raise SccError(f"tag{'s' if len(unknown) > 1 else ''} {', '.join(unknown)} not in {book.name}: "
                       f"{'they select' if len(unknown) > 1 else 'it selects'} nothing. Tags of {book.name}: "
                       f"{listed}")


def _search_path() -> str | None:
    """PATH for ansible-runner when ansible-playbook is not on it but sits next to this interpreter (a venv that
    is used without being activated): the venv's bin/ after the caller's entries, so that commands of local tasks
    are still the caller's; None when PATH already finds it."""
    if shutil.which("ansible-playbook"):
        return None
    venv_bin = Path(sys.executable).parent
    if not (venv_bin / "ansible-playbook").exists():
        raise SccError("ansible-playbook is not installed (not on PATH, not next to "
                       f"{sys.executable}): {CONTROLLER_INSTALL_HINT}")
    return os.pathsep.join(p for p in (os.environ.get("PATH", ""), str(venv_bin)) if p)


def _ansible_error(result: Any) -> str:
    """The first error ansible-playbook printed (with its origin, or why the inventory did not parse), one line."""
    try:
        text = result.stdout.read()
    except (OSError, ValueError, AttributeError):
        text = ""
    lines = [x.strip() for x in _ANSI.sub("", str(text)).splitlines()]
    lines = [x for x in lines if x]
    for i, line in enumerate(lines):
        if line.startswith(("[ERROR]:", "ERROR!")):
            if "inventory" in line.lower():
                # The reason (the plugin's own message, with its fix) is in the warning before the error.
                why = next((x for x in lines[:i] if "Failed to parse" in x), "")
                if why:
                    return _one_line("the inventory did not parse: " + why.replace("[WARNING]:", "").strip(), 700)
            origin = next((x for x in lines[i + 1:i + 4] if x.startswith("Origin:")), "")
            return _one_line(f"{line} {origin}".strip())
    if lines:
        return _one_line(lines[-1])
    return f"exit code {int(result.rc or 0)}, status {result.status}"


def checkout_collections_dir(root: Path | None = None) -> Path:
    """The collections folder of one checkout: `<checkout>/.cache/collections` (git ignores it), holding the link
    ansible_collections/scc/nlp_training -> the checkout. One per checkout: two checkouts on one machine never see
    each other's playbooks. `SCCNLP_COLLECTIONS_PATH` overrides it."""
    override = os.environ.get("SCCNLP_COLLECTIONS_PATH")
    if override:
        return Path(override).expanduser().resolve()
    return (root or collection_root()) / ".cache" / "collections"


def _collections_path() -> str:
    """ANSIBLE_COLLECTIONS_PATH that makes `scc.nlp_training` this collection, ahead of the caller's own entries.

    An installed collection (ansible-galaxy, or the copy a pip install carries) is already at
    <dir>/ansible_collections/scc/nlp_training: <dir> itself. A checkout gets its own link under
    checkout_collections_dir(), (re)made atomically."""
    root = collection_root()
    existing = [p for p in os.environ.get("ANSIBLE_COLLECTIONS_PATH", "").split(os.pathsep) if p]
    if root.parent.name == "scc" and root.parent.parent.name == "ansible_collections":
        first = root.parent.parent.parent
    else:
        first = checkout_collections_dir(root)
        link = first / "ansible_collections" / "scc" / "nlp_training"
        try:
            link.parent.mkdir(parents=True, exist_ok=True)
            if not link.is_symlink() or link.resolve() != root.resolve():
                # Several sccnlp/pytest processes of this checkout may get here at once: replace the link
                # atomically (rename over it).
                tmp_link = link.with_name(f".{link.name}.{os.getpid()}")
                tmp_link.unlink(missing_ok=True)
                tmp_link.symlink_to(root, target_is_directory=True)
                os.replace(tmp_link, link)
        except OSError as exc:
            raise SccError(f"cannot link the collection {root} as scc.nlp_training under {first} ({exc}): make "
                           "that folder writable, or set SCCNLP_COLLECTIONS_PATH to a writable folder of this "
                           "checkout's own") from exc
    return os.pathsep.join(dict.fromkeys([str(first), *existing]))


def _ansible_config() -> str | None:
    """The Ansible configuration file a run uses: the caller's (ANSIBLE_CONFIG, ./ansible.cfg, ~/.ansible.cfg,
    /etc/ansible/ansible.cfg, as ansible-playbook would pick it from the caller's folder); the collection's own
    ansible.cfg only when the caller has none. None: the caller's ANSIBLE_CONFIG stays as it is."""
    if os.environ.get("ANSIBLE_CONFIG"):
        return None
    for candidate in (Path.cwd() / "ansible.cfg", Path("~/.ansible.cfg").expanduser(),
                      Path("/etc/ansible/ansible.cfg")):
        if candidate.is_file():
            # ansible-runner runs ansible-playbook from a folder of its own: name the caller's file explicitly.
            return str(candidate.resolve())
    own = collection_root() / "ansible.cfg"
    return str(own) if own.is_file() else None


def _summarise(result: Any) -> dict[str, HostSummary]:
    hosts: dict[str, HostSummary] = {}
    stats = result.stats or {}
    for key, attr in (("ok", "ok"), ("changed", "changed"), ("failures", "failed"),
                      ("dark", "unreachable"), ("skipped", "skipped")):
        for host, count in (stats.get(key) or {}).items():
            summary = hosts.setdefault(host, HostSummary())
            setattr(summary, attr, int(count))
    # The final stats event can miss hosts of earlier plays (seen with imported playbooks ending in a localhost
    # play): count the per-task events of any host it does not list.
    counted: dict[str, HostSummary] = {}
    for event in result.events:
        data = event.get("event_data", {})
        host = data.get("host")
        kind = event.get("event")
        if not host or host in hosts:
            continue
        summary = counted.setdefault(host, HostSummary())
        if kind == "runner_on_ok":
            summary.ok += 1
            summary.changed += int(bool((data.get("res") or {}).get("changed")))
        elif kind == "runner_on_failed" and not data.get("ignore_errors"):
            summary.failed += 1
        elif kind == "runner_on_skipped":
            summary.skipped += 1
        elif kind == "runner_on_unreachable":
            summary.unreachable += 1
    hosts.update(counted)
    for event in result.events:
        kind = event.get("event")
        if kind in ("runner_on_failed", "runner_on_unreachable"):
            data = event.get("event_data", {})
            if kind == "runner_on_failed" and data.get("ignore_errors"):
                continue
            host = data.get("host", "?")
            res = data.get("res") or {}
            hosts.setdefault(host, HostSummary()).messages.append(
                f"{data.get('task', '')}: {_one_line(res.get('msg') or res.get('stderr') or '', MESSAGE_LIMIT)}"
            )
            if kind == "runner_on_unreachable":
                hosts[host].unreachable_msg = str(res.get("msg") or "")
    last_result = {"runner_on_ok": "ok", "runner_on_failed": "failed", "runner_on_skipped": "skipped",
                   "runner_on_unreachable": "unreachable"}
    for event in result.events:
        data = event.get("event_data", {})
        outcome = last_result.get(event.get("event", ""))
        if outcome and data.get("host") in hosts:
            res = data.get("res") or {}
            text = f"{data.get('task', '')}: {outcome}"
            if outcome in ("failed", "unreachable"):
                text += f" ({_one_line(res.get('msg') or res.get('stderr') or '', 160)})"
            hosts[data["host"]].last_task = text
    for summary in hosts.values():
        if summary.healthy:
            # Failures a `rescue:` handled: the node finished, so they are not reasons it did not.
            summary.messages.clear()
    return hosts


UNREACHABLE_FIX = ("Fix: start {host} or make it answer as the inventory says (ansible_host, user, SSH key), then run "
                   "the same command again: the other nodes finished, and it completes what {host} missed.")


def print_summary(result: RunResult, stream: TextIO | None = None, inventory: str = "INVENTORY") -> None:
    """One line per host; an unreachable host gets the cause ssh gave (a changed host key, with the command) or the
    generic fix, instead of ssh's message cut to one line."""
    from sccnlp.hostkeys import unreachable_cause

    stream = stream or sys.stdout
    print("\nPer-host summary:", file=stream)
    for host in sorted(result.hosts):
        h = result.hosts[host]
        state = "ok" if h.healthy else ("UNREACHABLE" if h.unreachable else "FAILED")
        print(f"  {host:<16} {state:<12} ok={h.ok} changed={h.changed} failed={h.failed} "
              f"unreachable={h.unreachable}", file=stream)
        cause = unreachable_cause(h.unreachable_msg, host, inventory) if h.unreachable and not h.healthy else None
        for msg in ([] if cause else h.messages[:3]):
            print(f"      {msg}", file=stream)
        if cause:
            print(f"      {cause}", file=stream)
        elif h.unreachable and not h.healthy:
            print(f"      {UNREACHABLE_FIX.format(host=host)}", file=stream)
    if result.artifacts and not result.ok:
        print(f"The run's full record (events, output): {result.artifacts}", file=stream)


def run_and_report(name: str, inventory: str | os.PathLike[str], *, label: str | None = None, bad_hint: str = "",
                   stream: TextIO | None = None, **options: Any) -> RunResult:
    """What the playbook commands share: `run_playbook(name, inventory, **options)`, then the per-host summary.

    With `label` (the playbook's file name as the user knows it) also the outcome line, `<label>: OK|FAILED in N s,
    M changes`, and the nodes that did not finish, followed by `bad_hint` (what to do about them) when given.
    """
    stream = stream or sys.stdout
    started = time.monotonic()
    result = run_playbook(name, inventory, stream=stream, **options)
    print_summary(result, stream, str(inventory))
    if label is not None:
        changed = sum(h.changed for h in result.hosts.values())
        what = f"{changed} changes that a real run makes (check mode: none made)" if options.get("check") \
            else f"{changed} changes"
        print(f"\n{label}: {'OK' if result.ok else 'FAILED'} in {time.monotonic() - started:.0f} s, {what}",
              file=stream)
        if len(result.phases) > 1:
            print(phase_line(result.phases), file=stream)
        bad = result.bad_hosts()
        if bad:
            print("Nodes that did not finish: " + ", ".join(sorted(bad)) + (f". {bad_hint}" if bad_hint else ""),
                  file=stream)
    return result
