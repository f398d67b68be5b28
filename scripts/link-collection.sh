#!/usr/bin/env bash
# Make this checkout importable as the collection scc.nlp_training: .cache/collections/ansible_collections/scc/
# nlp_training, a relative link to the checkout itself. The link is committed (a fresh clone has it, and ansible.cfg's
# collections_path names the folder); this restores it where it was removed. Each checkout has its own: nothing is
# shared between checkouts on one machine.
set -euo pipefail
cd "$(dirname "$0")/.."
link=.cache/collections/ansible_collections/scc/nlp_training
mkdir -p "$(dirname "$link")"
[ "$(readlink "$link" 2>/dev/null)" = ../../../.. ] || ln -sfn ../../../.. "$link"
