# -*- coding: utf-8 -*-
# Copyright: scc.nlp_training contributors
# Apache License 2.0 (see galaxy.yml)
"""Pure helpers of the node_files and local_fact modules: the text a marked block or a local fact gives a file.

A marked block is edited the way ansible.builtin.blockinfile does it (markers '<marker with {mark} = BEGIN>' and
'... END', the block appended at the end of the file when its markers are not there yet, a newline added before it
when the file lacks one), so files blockinfile wrote before are seen as unchanged."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json


def render_fact(fact):
    """A local fact's file text: the layout of to_nice_json (indent 4, sorted keys, a final newline)."""
    return json.dumps(fact, indent=4, sort_keys=True, separators=(",", ": ")) + "\n"


def same_fact(text, fact):
    """True when the file text `text` (None: no file) records `fact` (compared as data, not as text)."""
    if text is None:
        return False
    try:
        return json.loads(text) == json.loads(json.dumps(fact))
    except ValueError:
        return False


def edit_block(original, block, marker, present=True):
    """The text of a file after putting `block` between its markers (or removing block and markers with
    present=False). `original`: the file's text, None when it does not exist."""
    begin = marker.replace("{mark}", "BEGIN") + "\n"
    end = marker.replace("{mark}", "END") + "\n"
    lines = original.splitlines(True) if original else []
    if present and block:
        body = block if block.endswith("\n") else block + "\n"
        new = [begin, *body.splitlines(True), end]
    else:
        new = []
    first = last = None
    for index, line in enumerate(lines):
        if line == begin:
            first = index
        if line == end:
            last = index
    if first is None or last is None:
        at = len(lines)
    elif first < last:
        lines[first:last + 1] = []
        at = first
    else:
        lines[last:first + 1] = []
        at = last
    if at > 0 and not lines[at - 1].endswith("\n"):
        lines[at - 1] += "\n"
    lines[at:at] = new
    return "".join(lines)
