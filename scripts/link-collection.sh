#!/usr/bin/env bash
# Make this checkout importable as the collection scc.nlp_training (ANSIBLE_COLLECTIONS_PATH shim).
set -euo pipefail
coll=${SCCNLP_COLLECTIONS_PATH:-/tmp/sccnlp-collections-$(id -u)}
mkdir -p "$coll/ansible_collections/scc"
ln -sfn "$(cd "$(dirname "$0")/.." && pwd)" "$coll/ansible_collections/scc/nlp_training"
