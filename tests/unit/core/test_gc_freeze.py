"""The gc_freeze callback (plugins/callback/gc_freeze.py): the controller's heap is frozen for the garbage collector
when a task's workers fork, its own garbage is collected once a play, and the collection's ansible.cfg and the
molecule scenarios enable it. The worker side is read in real ansible-playbook runs: a lookup, which runs in the
forked worker, reports how many of the controller's objects it inherited frozen."""

from __future__ import annotations

import configparser
import gc
import os
import re
import subprocess
import sys
import weakref
from pathlib import Path

import yaml

from sccnlp.paths import collection_module, collection_root
from sccnlp.runner import _collections_path

# A lookup in the playbook's folder: it runs in the worker Ansible forks for the task, so it sees the worker's gc.
LOOKUP = '''
import gc
from ansible.plugins.lookup import LookupBase


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        return [gc.get_freeze_count()]
'''


def _frozen_in_workers(tmp_path: Path, config: Path) -> list[int]:
    """gc.get_freeze_count() in the workers of two tasks in two plays, run with the given ansible.cfg."""
    (tmp_path / "lookup_plugins").mkdir(exist_ok=True)
    (tmp_path / "lookup_plugins" / "frozen.py").write_text(LOOKUP)
    task = {"name": "Report the frozen objects", "ansible.builtin.debug": {"msg": "frozen={{ lookup('frozen') }}"}}
    play = {"hosts": "localhost", "gather_facts": False, "tasks": [task, task]}
    book = tmp_path / "book.yml"
    book.write_text(yaml.safe_dump([dict(play, name="One"), dict(play, name="Two")]))
    env = dict(os.environ, ANSIBLE_CONFIG=str(config), ANSIBLE_COLLECTIONS_PATH=_collections_path(),
               ANSIBLE_NOCOLOR="1", ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0")
    env.pop("ANSIBLE_CALLBACKS_ENABLED", None)
    proc = subprocess.run([str(Path(sys.executable).with_name("ansible-playbook")), str(book),
                           "-e", f"ansible_python_interpreter={sys.executable}"],
                          capture_output=True, text=True, env=env, timeout=300, check=False, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    counts = [int(n) for n in re.findall(r"msg: frozen=(\d+)$", proc.stdout, re.M)]
    assert len(counts) == 4, proc.stdout[-3000:]
    return counts


def test_workers_inherit_a_frozen_heap_with_the_collections_config(tmp_path: Path) -> None:
    # Thousands of the controller's objects (its loaded plugins, the play, the inventory) are out of the workers'
    # collections; without the callback none are.
    counts = _frozen_in_workers(tmp_path, collection_root() / "ansible.cfg")
    assert all(count > 10000 for count in counts), f"the callback froze nothing: {counts}"
    plain = tmp_path / "plain.cfg"
    plain.write_text("[defaults]\nstdout_callback = default\ncallback_result_format = yaml\n")
    assert _frozen_in_workers(tmp_path, plain) == [0, 0, 0, 0]


def test_play_start_collects_the_controllers_garbage_then_freezes() -> None:
    callback = collection_module("plugins.callback.gc_freeze").CallbackModule()

    class Cycle:
        me: object = None

    try:
        callback.v2_playbook_on_play_start(None)
        assert gc.get_freeze_count() > 0
        cycle = Cycle()
        cycle.me = cycle
        ref = weakref.ref(cycle)
        callback.v2_playbook_on_task_start(None, False)   # the cycle is frozen with the rest
        del cycle
        gc.collect()
        assert ref() is not None                           # out of the collector's reach while frozen
        callback.v2_playbook_on_play_start(None)           # the next play start collects it
        assert ref() is None and gc.get_freeze_count() > 0
        callback.v2_playbook_on_stats(None)
        assert gc.get_freeze_count() == 0
    finally:
        gc.unfreeze()


def test_the_collections_config_and_the_molecule_scenarios_enable_it() -> None:
    cfg = configparser.ConfigParser()
    cfg.read(collection_root() / "ansible.cfg")
    assert "scc.nlp_training.gc_freeze" in cfg["defaults"]["callbacks_enabled"].split(",")
    molecule = yaml.safe_load((collection_root() / ".config" / "molecule" / "config.yml").read_text())
    assert molecule["provisioner"]["config_options"]["defaults"]["callbacks_enabled"] == "scc.nlp_training.gc_freeze"
