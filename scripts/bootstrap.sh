#!/usr/bin/env bash
# Prepare a fresh Debian 12 machine (run as root) for the demo and the tests: the system packages the controller
# needs, a Docker daemon, and the Python environment .venv with pinned tools and the sccnlp package.
# Idempotent: a second run only checks.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(docker.io debootstrap openssh-client git make iptables rsync shellcheck)
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
stamp=.venv/.sccnlp-requirements.sha256
# sccnlp/__init__.py holds the version: a new one reinstalls the package so its metadata says the same.
want=$(cat requirements/ci.txt pyproject.toml sccnlp/__init__.py | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "bootstrap: installing pinned Python tools into .venv"
  .venv/bin/pip install -q --disable-pip-version-check -r requirements/ci.txt
  .venv/bin/pip install -q --disable-pip-version-check --no-deps -e .
  echo "$want" >"$stamp"
fi
./scripts/link-collection.sh
echo "bootstrap: ready"
