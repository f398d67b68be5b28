"""Pure parsers: tool text output (ibstat, ibv_devinfo, perftest, nccl-tests, nvidia-smi -q) -> plain data.

Each module has one `parse_<tool>(text) -> dict` function with no Ansible imports, so that the filter plugins in
`plugins/filter/` and the Python tests share them. Unknown lines are ignored; numbers come back as int/float.
"""
