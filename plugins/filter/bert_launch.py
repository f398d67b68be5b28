# Copyright: scc.nlp_training contributors
# Apache-2.0
"""Filters `bert_launch_plan` and `bert_backend_problems` (thin wrappers over plugin_utils.bert_launch); their
documentation is in bert_launch_plan.yml and bert_backend_problems.yml."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.scc.nlp_training.plugins.plugin_utils.bert_launch import (
    aiacc_facts, backend_problems, launch_plan)


def bert_launch_plan(hosts, slots, framework, backend, np_setting, fact_hosts, fact_slurps, node, hostfile):
    """The launch of a BERT run: backend with its reason, ranks, mpirun mapping, problems."""
    return launch_plan(list(hosts), list(slots), str(framework), str(backend), np_setting,
                       aiacc_facts(list(fact_hosts), list(fact_slurps)), str(node), str(hostfile))


def bert_backend_problems(node, framework, backend):
    """[] when the framework runs with the backend, else the refusal with the choices."""
    return backend_problems(str(node), str(framework), str(backend))


class FilterModule(object):
    def filters(self):
        return {"bert_launch_plan": bert_launch_plan, "bert_backend_problems": bert_backend_problems}
