"""The five filters work from a real `ansible-playbook` run through the collection shim (no mocks)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from sccnlp.paths import collection_root
from sccnlp.runner import _collections_path

PLAYBOOK = """
- name: Parse recorded outputs with the collection's filters
  hosts: localhost
  gather_facts: false
  vars:
    fx: "{{ playbook_dir }}/fixtures"
  tasks:
    - name: Emit parsed values as one JSON line
      ansible.builtin.debug:
        msg: >-
          RESULT{{ {
            'ibstat_rate': (lookup('file', fx ~ '/ibstat/a100_ib_all_active.txt')
                            | scc.nlp_training.parse_ibstat)['mlx5_1'].ports[0].rate,
            'gid3': (lookup('file', fx ~ '/ibv_devinfo/mlx5_cx6_roce_v2_gid_types.txt')
                     | scc.nlp_training.parse_ibv_devinfo)['mlx5_0'].ports[0].gids[3].type,
            'bw': (lookup('file', fx ~ '/perftest/ib_write_bw_gbits_sweep_roce.txt')
                   | scc.nlp_training.parse_perftest).summary.max_bw_avg_gbps,
            'busbw': (lookup('file', fx ~ '/nccl_tests/h100_2node_all_reduce_wrong_column.txt')
                      | scc.nlp_training.parse_nccl_tests).avg_busbw,
            'gpus': (lookup('file', fx ~ '/nvidia_smi_q/h100_535.183.01.txt')
                     | scc.nlp_training.parse_nvidia_smi_q).gpus | length,
          } | to_json }}
    - name: A dict instead of text is refused with a clear message
      ansible.builtin.debug:
        msg: "{{ {'stdout': 'x'} | scc.nlp_training.parse_ibstat }}"
"""


def test_filters_from_a_playbook(tmp_path):
    (tmp_path / "fixtures").symlink_to(collection_root() / "tests" / "fixtures" / "tool_outputs")
    book = tmp_path / "parse.yml"
    book.write_text(PLAYBOOK)
    exe = Path(sys.executable).parent / "ansible-playbook"
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=_collections_path(), ANSIBLE_STDOUT_CALLBACK="default",
               ANSIBLE_CALLBACK_RESULT_FORMAT="json", ANSIBLE_NOCOLOR="1", ANSIBLE_LOCALHOST_WARNING="0",
               ANSIBLE_INVENTORY_UNPARSED_WARNING="0")
    proc = subprocess.run([str(exe if exe.exists() else "ansible-playbook"), str(book)], capture_output=True,
                          text=True, env=env, timeout=180, check=False)
    out = proc.stdout
    line = next(part for part in out.split('"msg": "')[1:] if part.startswith("RESULT"))
    payload = json.loads(line[len("RESULT"):line.index('"\n')].encode().decode("unicode_escape"))
    assert payload == {"ibstat_rate": 200, "gid3": "RoCE v2", "bw": 92.46, "busbw": 70.742, "gpus": 8}
    assert proc.returncode != 0  # the second task fails ...
    assert "parse_ibstat expects the text output of ibstat" in out  # ... with the message, not a traceback
