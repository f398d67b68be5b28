# Copyright: scc.nlp_training contributors
# Apache-2.0
from __future__ import annotations

DOCUMENTATION = r"""
name: gc_freeze
type: aggregate
short_description: Keeps the controller's task workers from copying its memory to collect garbage
version_added: "0.2.0"
author: scc.nlp_training contributors (!UNKNOWN)
description:
  - C(ansible-playbook) forks one worker process per task and host. Each worker inherits the controller's heap
    copy-on-write; when Python's cyclic garbage collector runs in the worker, it walks every object the controller
    had, writes into their headers and so copies most of the heap, page by page, before the worker does its task.
  - This callback moves the controller's objects out of the collector's reach before the workers of each task are
    forked (C(gc.freeze()) at every task start), so a worker collects only what it made itself. At every play start
    the controller collects its own garbage once (C(gc.unfreeze()), C(gc.collect()), C(gc.freeze())), so what it
    frees is bounded by one play.
  - It changes no result, output or setting of a run; it only makes runs cheaper on the controller (an
    idempotent re-run of site.yml on three nodes used about 9% fewer controller CPU-seconds and 6% less wall time,
    docs/BENCHMARKS.md).
  - The collection's C(ansible.cfg) (used from a checkout and by C(sccnlp)) and the molecule scenarios enable it; add
    it to C(callbacks_enabled) of your own C(ansible.cfg) when you run the installed collection.
requirements:
  - Enabled in the configuration (C(callbacks_enabled = scc.nlp_training.gc_freeze)).
"""

EXAMPLES = r"""
# ansible.cfg
# [defaults]
# callbacks_enabled = scc.nlp_training.gc_freeze
"""

import gc

from ansible.plugins.callback import CallbackBase


class CallbackModule(CallbackBase):
    """Freeze the controller's heap for the garbage collector before each task's workers fork."""

    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "scc.nlp_training.gc_freeze"
    CALLBACK_NEEDS_ENABLED = True

    def v2_playbook_on_play_start(self, play):
        # Once a play: the controller's own garbage of the play before is collected, then the heap frozen again.
        gc.unfreeze()
        gc.collect()
        gc.freeze()

    def v2_playbook_on_task_start(self, task, is_conditional):
        gc.freeze()

    def v2_playbook_on_handler_task_start(self, task):
        gc.freeze()

    def v2_playbook_on_stats(self, stats):
        gc.unfreeze()
