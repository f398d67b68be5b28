"""Sub-commands of the `sccnlp` CLI: one module each, exposing `register(subparsers)`."""
