"""The node-side programs of scc.nlp_training: what runs on the cluster's nodes, delivered as the sccnlp-node wheel.

- ``sccnlp.node.bert``: corpus, data preparation (``prepare``), the shard reader, the trainer (``train``), its
  watchdog and benchmark.
- ``sccnlp.node.gates``: the validation gates (GPU, all_reduce) and the evaluation of measurements against floors.
- ``sccnlp.node.rdma_reader``: the RDMA counter reader that ``sccnlp monitor rdma`` streams to a node over ssh.
- ``sccnlp.node.errors``: the error type these programs raise.

Nothing here imports the controller side of ``sccnlp`` (cli, commands, runner, testbed, report, bundle, ...):
``plugins/plugin_utils/node_wheel.py`` builds the wheel from this folder alone, and a unit test holds the rule.
"""
