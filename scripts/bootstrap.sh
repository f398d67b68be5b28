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
# The Prometheus tools the tests run (promtool test rules / check metrics, a loopback prometheus and node_exporter):
# Debian's packages at the versions the monitoring role pins for the nodes, downloaded by apt (signed lists, checked
# hashes) and unpacked into .cache/tools/bin; nothing is installed into the system and no service starts here.
prometheus_tools() {
  local want dir
  want=$(sed -n -E 's/^_monitoring_(node_exporter|server)_package: *"?([^"]+)"?$/\2/p' roles/monitoring/vars/Debian-12.yml | sort)
  [ "$want" = "$(cat .cache/tools/.packages 2>/dev/null)" ] && [ -x .cache/tools/bin/promtool ] && return 0
  echo "bootstrap: unpacking ${want//$'\n'/ } into .cache/tools"
  dir=$(mktemp -d)
  # shellcheck disable=SC2086  # one word per package
  (cd "$dir" && apt-get download -qq -o APT::Sandbox::User=root $want) ||
    { apt-get update -qq && (cd "$dir" && apt-get download -qq -o APT::Sandbox::User=root $want); }
  for deb in "$dir"/*.deb; do dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$dir" ./usr/bin; done
  mkdir -p .cache/tools/bin
  install -m 0755 "$dir"/usr/bin/* .cache/tools/bin/
  echo "$want" >.cache/tools/.packages
  rm -rf "$dir"
}
[ "$level" = demo ] || prometheus_tools
./scripts/link-collection.sh
echo "bootstrap: ready"
