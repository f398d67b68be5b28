#!/usr/bin/env bash
# Galaxy's own import checks on the tarball a publisher would upload: `ansible-galaxy collection build`, then
# galaxy-importer (requirements/ci.txt) with .config/galaxy-importer.cfg (no containers; ansible-test runs in the
# sanity stage). Fails on an import error and on any WARNING or ERROR line, as Galaxy shows those to users.
# Usage: scripts/galaxy-import.sh [SOURCE]: SOURCE is the collection folder to build (default: this checkout); the
# tools and the importer config are always this checkout's (tests/integration/collection/test_galaxy_import_gate.py
# builds a broken copy to prove the gate fails).
set -euo pipefail
source_dir=$(cd "${1:-$(dirname "$0")/..}" && pwd)
cd "$(dirname "$0")/.."
BIN=$PWD/.venv/bin
config=$PWD/.config/galaxy-importer.cfg
work=$(mktemp -d "${TMPDIR:-/tmp}/sccnlp-galaxy-import.XXXXXX")
trap 'rm -rf "$work"' EXIT
"$BIN/ansible-galaxy" collection build --output-path "$work" "$source_dir" >/dev/null
tarball=$(echo "$work"/scc-nlp_training-*.tar.gz)
rc=0
(cd "$work" && GALAXY_IMPORTER_CONFIG=$config PATH=$BIN:$PATH \
  "$BIN/python" -m galaxy_importer.main "$tarball") >"$work/import.log" 2>&1 || rc=$?
if [ "$rc" != 0 ] || grep -qE '^(WARNING|ERROR)' "$work/import.log" ||
    ! grep -q '^Importer processing completed successfully' "$work/import.log"; then
  grep -vE '^Loading ' "$work/import.log"
  echo "galaxy-import: $(basename "$tarball") would not import cleanly (exit $rc; the WARNING/ERROR lines above)" >&2
  exit 1
fi
echo "galaxy-import: $(basename "$tarball") imports cleanly"
