"""Node-side validation programs (GPU gates, torch.distributed all_reduce fallback, check evaluation).

They run on the nodes: the `validate` role installs them with the sccnlp-node wheel and runs
`python -m sccnlp.node.gates.<name>`. They import nothing outside the standard library at module level (torch is
imported inside the functions that measure) and stay compatible with Python 3.6 (SCC images of CentOS 7):
annotations that use builtin generics are quoted.
"""
