# Copyright: scc.nlp_training contributors
# Apache-2.0
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.scc.nlp_training.plugins.plugin_utils.bert_storage import free_space_problems


def bert_free_space_problems(free_bytes, node, path, model, vocab_size, min_free_gib=0):
    """The refusal of a run whose storage lacks room for its next checkpoints ([] when there is room)."""
    return free_space_problems(free_bytes, node, path, model, int(vocab_size), float(min_free_gib))


class FilterModule(object):
    def filters(self):
        return {"bert_free_space_problems": bert_free_space_problems}
