#!/usr/bin/env bash
# ansible-test sanity on this checkout, offline: `scripts/sanity.sh [ansible-test sanity options]`.
# ansible-test wants the collection at .../ansible_collections/scc/nlp_training and resolves symlinks (the
# collections-path shim does not do), so the files git knows (tracked, and untracked ones not ignored) are copied
# into a private tree. Its sanity virtualenvs are bootstrapped with tests/sanity/get_pip.py instead of the get-pip
# script ansible-test would download; their pinned requirements come from the configured package index.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$PWD/.venv/bin
py=$("$BIN/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
pip_version=$("$BIN/python" -c 'from ansible_test._internal.python_requirements import get_venv_packages as g
from ansible_test._internal.host_configs import NativePythonConfig as N; print(g(N(version="'"$py"'", path=""))["pip"])')
cache=~/.ansible/test/cache
mkdir -p "$cache"
cp tests/sanity/get_pip.py "$cache/get_pip_${pip_version//./_}.py"

work=$(mktemp -d "${TMPDIR:-/tmp}/sccnlp-sanity.XXXXXX")
trap 'rm -rf "$work"' EXIT
dest=$work/ansible_collections/scc/nlp_training
mkdir -p "$dest"
# The checkout's collections link (.cache/collections/..., a link to the checkout for Ansible's collection loader) is
# no content of the collection: left out, as galaxy.yml's build_ignore leaves it out of the tarball.
git ls-files -z --cached --others --exclude-standard | grep -zv '^\.cache/' | rsync -a --from0 --files-from=- ./ "$dest/"
cd "$dest"
PATH=$BIN:$PATH "$BIN/ansible-test" sanity --python "$py" --color no "$@"
