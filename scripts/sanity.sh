#!/usr/bin/env bash
# ansible-test sanity on this checkout, offline, on the lowest and the highest ansible-core the collection supports:
# `scripts/sanity.sh [ansible-test sanity options]` (SANITY_VERSIONS="2.18" for one of them).
# Each version has its pin and Python in requirements/sanity-<version>.txt and its own virtual environment under
# .cache/sanity/<version> (made on the first run, from the configured package index; later runs reuse it). The two
# versions run at the same time, each on its own copy of the tree; their logs are printed one after the other.
# ansible-test wants the collection at .../ansible_collections/scc/nlp_training and resolves symlinks (the
# collections-path shim does not do), so the files git knows (tracked, and untracked ones not ignored) are copied
# into a private tree. Its sanity virtualenvs are bootstrapped with tests/sanity/get_pip.py instead of the get-pip
# script ansible-test would download; their pinned requirements come from the configured package index.
set -euo pipefail
cd "$(dirname "$0")/.."
read -r -a versions <<<"${SANITY_VERSIONS:-2.18 2.21}"

# python_for VERSION: an interpreter X.Y named on the `# python:` line of the version's requirements file: on PATH,
# else pyenv's newest X.Y.* (a pyenv shim on PATH that has no such version selected does not count).
python_for() {
  local want cand
  want=$(sed -n 's/^# python: *//p' "requirements/sanity-$1.txt")
  [ -n "$want" ] || { echo "sanity: requirements/sanity-$1.txt has no '# python: X.Y' line" >&2; return 1; }
  for cand in $(command -v "python$want") \
      $(find ~/.pyenv/versions -maxdepth 3 -path "*/$want.*/bin/python$want" 2>/dev/null | sort -rV); do
    if "$cand" -c 'import sys' >/dev/null 2>&1; then echo "$cand"; return 0; fi
  done
  echo "sanity: ansible-core $1 needs Python $want (install it, e.g. with pyenv)" >&2
  return 1
}

# prepare VERSION: the version's virtual environment, (re)made when its requirements file changed.
prepare() {
  local ver=$1 venv=.cache/sanity/$1 want py
  want=$(sha256sum "requirements/sanity-$ver.txt" | cut -d' ' -f1)
  if [ "$(cat "$venv/.stamp" 2>/dev/null)" != "$want" ]; then
    py=$(python_for "$ver") || return 1
    echo "sanity: making $venv with $py"
    rm -rf "$venv"
    "$py" -m venv "$venv" &&
      "$venv/bin/pip" install -q --disable-pip-version-check -r "requirements/sanity-$ver.txt" || return 1
    echo "$want" >"$venv/.stamp"
  fi
}

# run_one VERSION ARGS...: ansible-test sanity of a private copy of the tree with that version.
run_one() {
  local ver=$1 venv bin py pip_version dest
  shift
  venv=$PWD/.cache/sanity/$ver
  bin=$venv/bin
  py=$("$bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  pip_version=$("$bin/python" -c 'from ansible_test._internal.python_requirements import get_venv_packages as g
from ansible_test._internal.host_configs import NativePythonConfig as N; print(g(N(version="'"$py"'", path=""))["pip"])')
  mkdir -p ~/.ansible/test/cache
  cp tests/sanity/get_pip.py ~/.ansible/test/cache/"get_pip_${pip_version//./_}.py"
  dest=$work/$ver/ansible_collections/scc/nlp_training
  mkdir -p "$dest"
  # The checkout's collections link (.cache/collections/..., a link back to the checkout for Ansible's collection
  # loader) is no content of the collection: left out, as galaxy.yml's build_ignore leaves it out of the tarball.
  git ls-files -z --cached --others --exclude-standard | grep -zv '^\.cache/' | rsync -a --from0 --files-from=- ./ "$dest/"
  (cd "$dest" && PATH=$bin:$PATH "$bin/ansible-test" sanity --python "$py" --color no "$@")
}

for ver in "${versions[@]}"; do prepare "$ver"; done
work=$(mktemp -d "${TMPDIR:-/tmp}/sccnlp-sanity.XXXXXX")
trap 'rm -rf "$work"' EXIT
declare -A pids
t0=$(date +%s)
for ver in "${versions[@]}"; do
  run_one "$ver" "$@" >"$work/$ver.log" 2>&1 &
  pids[$ver]=$!
done
rc=0
for ver in "${versions[@]}"; do
  if wait "${pids[$ver]}"; then result=ok; else result=FAILED; rc=1; fi
  cat "$work/$ver.log"
  echo "--- ansible-test sanity on ansible-core $ver: $result ($(( $(date +%s) - t0 )) s after the start)"
done
exit "$rc"
