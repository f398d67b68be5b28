#!/usr/bin/env bash
# Prepare a fresh Debian 12 machine (run as root) for the demo or the tests: the system packages the controller
# needs, a Docker daemon, and the Python environment .venv with the sccnlp package. Usage:
#   scripts/bootstrap.sh demo   what `make demo` needs: the controller runtime (requirements/demo.txt)
#   scripts/bootstrap.sh [test] everything `make test` runs as well: linters, molecule, docs tools (requirements/ci.txt,
#                               a superset of demo.txt at the same pins)
# Idempotent: a second run only checks (a venv made for the tests serves the demo as it is).
set -euo pipefail
cd "$(dirname "$0")/.."
level=${1:-test}
case "$level" in
  demo) requirements=requirements/demo.txt ;;
  test) requirements=requirements/ci.txt ;;
  *) echo "bootstrap: unknown level '$level' (demo or test)" >&2; exit 2 ;;
esac

APT_PACKAGES=(docker.io debootstrap openssh-client git make iptables rsync)
[ "$level" = demo ] || APT_PACKAGES+=(shellcheck)
need=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
done
if ((${#need[@]})); then
  echo "bootstrap: installing ${need[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

if ! docker info >/dev/null 2>&1; then
  echo "bootstrap: starting dockerd"
  (setsid dockerd >/var/log/sccnlp-dockerd.log 2>&1 &)
  for _ in $(seq 1 60); do docker info >/dev/null 2>&1 && break; sleep 0.5; done
  docker info >/dev/null 2>&1 || { echo "bootstrap: dockerd did not start, see /var/log/sccnlp-dockerd.log" >&2; exit 1; }
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "bootstrap: creating .venv"
  "$PY" -m venv .venv
fi
# One stamp per level; sccnlp/__init__.py holds the version: a new one reinstalls the package so its metadata says
# the same.
stamp() { echo ".venv/.sccnlp-$1.sha256"; }
want() { cat "$1" pyproject.toml sccnlp/__init__.py | sha256sum | cut -d' ' -f1; }
current() { [ "$(cat "$(stamp "$1")" 2>/dev/null)" = "$(want "$2")" ]; }
if ! current "$level" "$requirements" && ! { [ "$level" = demo ] && current test requirements/ci.txt; }; then
  echo "bootstrap: installing the pinned Python packages of $requirements into .venv"
  .venv/bin/pip install -q --disable-pip-version-check -r "$requirements"
  .venv/bin/pip install -q --disable-pip-version-check --no-deps -e .
  want "$requirements" >"$(stamp "$level")"
fi
./scripts/link-collection.sh
echo "bootstrap: ready"
