"""sccnlp: drives the scc.nlp_training collection and holds its node-side programs."""

__version__ = "0.1.1"
