#!/usr/bin/env bash
# The test command (README, CI). Stages: lint, unit, molecule, e2e; no argument runs them all in that order.
# Each stage prints its time; containers and networks made here are removed on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$PWD/.venv/bin
export PATH=$BIN:$PATH
export ANSIBLE_COLLECTIONS_PATH=${SCCNLP_COLLECTIONS_PATH:-/tmp/sccnlp-collections-$(id -u)}
export SCCNLP_COLLECTIONS_PATH=$ANSIBLE_COLLECTIONS_PATH
export PY_COLORS=0 ANSIBLE_FORCE_COLOR=0 ANSIBLE_NOCOLOR=1
# Scenarios CI runs, in order (each `molecule test`: create, prepare, converge, idempotence, check, verify, destroy).
MOLECULE_SCENARIOS=${MOLECULE_SCENARIOS:-cluster}
E2E_TESTBED=ci-e2e

stages=("$@")
[ ${#stages[@]} -gt 0 ] || stages=(lint unit molecule e2e)

declare -A took
cleanup() {
  for s in $MOLECULE_SCENARIOS; do molecule destroy -s "$s" >/dev/null 2>&1 || true; done
  sccnlp testbed down --name "$E2E_TESTBED" >/dev/null 2>&1 || true
}
trap cleanup EXIT

run_stage() {
  local name=$1 t0
  t0=$(date +%s)
  echo "=== stage $name"
  "stage_$name"
  took[$name]=$(( $(date +%s) - t0 ))
  echo "=== stage $name: ok in ${took[$name]} s"
}

stage_lint() {
  ruff check .
  yamllint --strict .
  ansible-lint --offline
}

stage_unit() {
  pytest -q -m "not testbed" tests
}

stage_molecule() {
  sccnlp testbed image
  for s in $MOLECULE_SCENARIOS; do molecule test -s "$s"; done
}

stage_e2e() {
  sccnlp up --name "$E2E_TESTBED" --subnet 10.87.0.0/24
  SCCNLP_TESTBED_INVENTORY=$(sccnlp testbed inventory --name "$E2E_TESTBED") pytest -q -m testbed tests
  sccnlp testbed down --name "$E2E_TESTBED"
}

for s in "${stages[@]}"; do run_stage "$s"; done
echo "=== times: $(for s in "${stages[@]}"; do printf '%s=%ss ' "$s" "${took[$s]}"; done)"
