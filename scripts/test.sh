#!/usr/bin/env bash
# The test command (README, CI). Stages: lint, sanity, unit, molecule, e2e (all five when none is named).
# sanity = ansible-test sanity (the checks Galaxy holds collections to), offline, through scripts/sanity.sh.
# e2e = `sccnlp up --offline` (what `make demo` does, on nodes without egress, deployed from an offline bundle built
# first) on a fresh test bed with the short BERT run, then the test-bed tests (tampered bundle, no egress included).
# Each stage prints its time; containers and networks made here are removed on exit.
# shellcheck disable=SC2317  # stage_* and cleanup are called indirectly (run_stage, trap)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$PWD/.venv/bin
export PATH=$BIN:$PATH
# This checkout's own collections folder (the committed link .cache/collections/ansible_collections/scc/nlp_training
# -> the checkout): two checkouts on one machine never run each other's playbooks.
export ANSIBLE_COLLECTIONS_PATH=$PWD/.cache/collections
unset SCCNLP_COLLECTIONS_PATH
export PY_COLORS=0 ANSIBLE_FORCE_COLOR=0 ANSIBLE_NOCOLOR=1
# Scenarios CI runs, in order (each `molecule test`: create, prepare, converge, idempotence, a check-mode run that
# must change nothing, verify, destroy). Scenarios joined by + run at the same time; their logs are printed one after
# the other when all have ended. MOLECULE_BACKGROUND (gpu_stack and runtime by default: small ones that mostly wait on
# package downloads) starts in the background, with the test-bed image, once the stages before the molecule stage are
# past lint (whose Galaxy import has a fixed 180 s ansible-lint timeout); the molecule stage waits for it, prints its
# logs and its time, then runs MOLECULE_SCENARIOS. Naming MOLECULE_SCENARIOS runs those alone (no background group
# unless MOLECULE_BACKGROUND is named too). molecule/cluster8 (the same cases at eight nodes) is run by name: on two
# cores it does not fit CI's budget (`molecule test` 1,151 s against the 3-node cluster's 708 s: +443 s, the test
# command then at about 50 minutes quiet, 55 in CI; docs/BENCHMARKS.md, issue 28).
# E2E_BESIDE (cluster by default): the scenario beside whose verify the e2e stage's deploy (`sccnlp up --offline`)
# already runs when both stages are in the run; that verify waits on ssh, Docker and GlusterFS about 40% of its
# 400 s (docs/BENCHMARKS.md), the deploy fills it. The e2e stage then waits for the deploy and runs the test-bed tests.
if [ -n "${MOLECULE_SCENARIOS:-}" ]; then
  MOLECULE_BACKGROUND=${MOLECULE_BACKGROUND:-}
  E2E_BESIDE=${E2E_BESIDE:-}
else
  MOLECULE_SCENARIOS=cluster
  MOLECULE_BACKGROUND=${MOLECULE_BACKGROUND-gpu_stack+runtime}
  E2E_BESIDE=${E2E_BESIDE-cluster}
fi
E2E_TESTBED=ci-e2e

stages=("$@")
[ ${#stages[@]} -gt 0 ] || stages=(lint sanity unit molecule e2e)

declare -A took
# Only what the stages of this run made is removed (another run's molecule cluster or test bed stays).
cleanup() {
  if [ -n "${bg_pid:-}" ] && kill -0 "$bg_pid" 2>/dev/null; then
    pkill -TERM -P "$bg_pid" 2>/dev/null || true
    kill "$bg_pid" 2>/dev/null || true
    wait "$bg_pid" 2>/dev/null || true
  fi
  if [ -n "${took_molecule_started:-}" ]; then
    for s in ${MOLECULE_SCENARIOS//+/ } ${MOLECULE_BACKGROUND//+/ }; do molecule destroy -s "$s" >/dev/null 2>&1 || true; done
  fi
  [ -z "${bg_dir:-}" ] || rm -rf "$bg_dir"
  if [ -n "${e2e_pid:-}" ] && kill -0 "$e2e_pid" 2>/dev/null; then
    pkill -TERM -P "$e2e_pid" 2>/dev/null || true
    kill "$e2e_pid" 2>/dev/null || true
    wait "$e2e_pid" 2>/dev/null || true
  fi
  if [ -n "${took_e2e_started:-}" ]; then sccnlp testbed down --name "$E2E_TESTBED" >/dev/null 2>&1 || true; fi
  [ -z "${e2e_work:-}" ] || rm -rf "$e2e_work"
}
trap cleanup EXIT

run_stage() {
  local name=$1 t0
  t0=$(date +%s)
  echo "=== stage $name"
  "stage_$name" || return 1
  took[$name]=$(( $(date +%s) - t0 ))
  echo "=== stage $name: ok in ${took[$name]} s"
}

# Stages run inside `if`, where `set -e` does not apply: each chains its commands with &&.
# The quick linters one after the other, then the three slow ones (a minute each, one core each) side by side.
stage_lint() {
  ruff check . && mypy && yamllint --strict . && antsibull-changelog lint &&
    together "ansible-lint --offline" "antsibull-docs lint-collection-docs --plugin-docs ." ./scripts/galaxy-import.sh
}

# together CMD...: run the commands (each a bash command line) at the same time, each into its own log; print each
# log with its exit status and its end (seconds after the start) when all have ended; fail when any failed.
together() {
  local dir i rc=0 result t0
  local -a pids=() cmds=("$@")
  dir=$(mktemp -d)
  t0=$(date +%s)
  for i in "${!cmds[@]}"; do
    ( status=0; bash -c "${cmds[$i]}" || status=$?; echo $(( $(date +%s) - t0 )) >"$dir/$i.end"; exit "$status" ) \
      >"$dir/$i.log" 2>&1 &
    pids[i]=$!
  done
  for i in "${!cmds[@]}"; do
    if wait "${pids[$i]}"; then result=ok; else result=FAILED; rc=1; fi
    cat "$dir/$i.log"
    echo "--- ${cmds[$i]}: $result ($(cat "$dir/$i.end" 2>/dev/null || echo '?') s after the start)"
  done
  rm -rf "$dir"
  return "$rc"
}

stage_sanity() {
  ./scripts/sanity.sh
}

# pytest runs once per test folder, each in its own process: Ansible's plugin loader initialises once per process
# (with the collection path of whoever comes first) and Ansible patches sys.intern, which torch.compile refuses;
# separate processes keep the areas from leaking into each other. Counts are summed for the closing line. Each run
# prints its five slowest tests (where the test command's time goes, in CI's own log).
declare -i n_passed=0 n_failed=0 n_skipped=0
run_pytest() {  # run_pytest ARGS... ; adds the counts of its closing line
  local out rc line
  out=$(mktemp)
  set +e
  pytest -q -p no:cacheprovider --durations=5 "$@" 2>&1 | tee "$out"
  rc=${PIPESTATUS[0]}
  set -e
  line=$(grep -E '^(=+ )?[0-9]+ (passed|failed|error|skipped|deselected)' "$out" | tail -1)
  n_passed+=$(grep -oE '[0-9]+ passed' <<<"$line" | grep -oE '[0-9]+' || echo 0)
  n_failed+=$(( $(grep -oE '[0-9]+ failed' <<<"$line" | grep -oE '[0-9]+' || echo 0) + $(grep -oE '[0-9]+ errors?' <<<"$line" | grep -oE '[0-9]+' || echo 0) ))
  n_skipped+=$(grep -oE '[0-9]+ skipped' <<<"$line" | grep -oE '[0-9]+' || echo 0)
  rm -f "$out"
  # 5 = every test of the folder was deselected (test-bed tests outside the e2e stage): not a failure.
  [ "$rc" = 0 ] || [ "$rc" = 5 ] || unit_failed=1
}

# A folder with several test files runs them on one worker per core (pytest-xdist, whole files per worker so a
# file's module fixtures are built once); most of these tests wait on ansible-playbook or a subprocess. The folders
# that train in-process stay on one worker: torch's own threads already use every core, and their watchdog tests
# time a client lease in seconds.
SERIAL_TEST_DIRS=" tests/unit/bert_train/ tests/unit/bert_data/ "
stage_unit() {
  unit_failed=0
  local dir workers=()
  for dir in tests/unit/*/ tests/integration/*/; do
    echo "--- pytest $dir"
    workers=()
    if [[ $SERIAL_TEST_DIRS != *" $dir "* ]] && [ "$(find "$dir" -maxdepth 1 -name 'test_*.py' | wc -l)" -gt 1 ]; then
      workers=(-n "$(nproc)" --dist loadfile)
    fi
    # bundle: builds a real offline bundle, opt-in (SCCNLP_BUNDLE_TEST=1 pytest tests/integration/bundle); deselected
    # here rather than reported as skipped.
    run_pytest "${workers[@]}" -m "not testbed and not bundle" "$dir"
  done
  [ "$unit_failed" = 0 ]
}

# The background group: the test-bed image, then MOLECULE_BACKGROUND's scenarios side by side, into one log.
start_background() {
  [ -n "$MOLECULE_BACKGROUND" ] && [ -z "${bg_started:-}" ] || return 0
  bg_started=1 took_molecule_started=1
  bg_dir=$(mktemp -d)
  bg_t0=$(date +%s)
  echo "=== background: test-bed image, then molecule [${MOLECULE_BACKGROUND//+/ }] (log printed in the molecule stage)"
  ( sccnlp testbed image && molecule_together "${MOLECULE_BACKGROUND//+/ }" ) >"$bg_dir/log" 2>&1 &
  bg_pid=$!
}

stage_molecule() {
  took_molecule_started=1
  start_background
  if [ -n "${bg_pid:-}" ]; then
    local bg_rc=0
    wait "$bg_pid" || bg_rc=$?
    cat "$bg_dir/log"
    took[molecule_background]=$(( $(date +%s) - bg_t0 ))
    echo "--- background molecule [${MOLECULE_BACKGROUND//+/ }]: $([ "$bg_rc" = 0 ] && echo ok || echo FAILED)" \
      "in ${took[molecule_background]} s (started beside the earlier stages)"
    bg_pid=
    [ "$bg_rc" = 0 ] || return 1
  fi
  sccnlp testbed image || return 1
  local group
  for group in $MOLECULE_SCENARIOS; do
    if [[ $group != *+* ]]; then molecule_test "$group" || return 1; continue; fi
    molecule_together "${group//+/ }" || return 1
  done
}

# molecule_test SCENARIO: `molecule test`; for E2E_BESIDE (when the e2e stage is in the run) the e2e deploy starts
# once the scenario's verify does.
molecule_test() {
  local scenario=$1 log pid rc=0
  if [ "$scenario" != "${E2E_BESIDE:-}" ] || [[ " ${stages[*]} " != *" e2e "* ]]; then
    molecule test -s "$scenario"
    return
  fi
  log=$(mktemp)
  molecule test -s "$scenario" > >(tee "$log") 2>&1 &
  pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    if grep -q "\[$scenario > verify\] Executing" "$log"; then start_e2e_deploy; break; fi
    sleep 2
  done
  wait "$pid" || rc=$?
  rm -f "$log"
  return "$rc"
}

# molecule_together "A B ...": `molecule test` of the scenarios at the same time (together, above).
molecule_together() {
  local scenario cmds=()
  for scenario in $1; do cmds+=("molecule test -s $scenario"); done
  together "${cmds[@]}"
}

# The e2e deploy: a fresh test bed without egress, the offline bundle built into the run's own folder (nothing is reused
# from an earlier run), `sccnlp up` on it. The report goes beside the bundle, not into the checkout's validate-report/
# (where the molecule cluster's own validation writes). The molecule stage's scenarios deploy online; this one has no
# route out and installs only from the bundle. --tensorflow: TensorFlow CPU on the nodes as well (from the bundle),
# for the TensorFlow trainer's test-bed test.
e2e_deploy() {
  sccnlp up --name "$E2E_TESTBED" --subnet 10.87.0.0/24 --report-dir "$e2e_work/validate-report" --offline \
    --tensorflow --bundle-dir "$e2e_work/bundle"
}

start_e2e_deploy() {
  [ -z "${e2e_pid:-}" ] || return 0
  took_e2e_started=1
  e2e_work=$(mktemp -d)
  e2e_t0=$(date +%s)
  echo "=== e2e deploy started beside the molecule verify (its log is printed in the e2e stage)"
  e2e_deploy >"$e2e_work/deploy.log" 2>&1 &
  e2e_pid=$!
}

stage_e2e() {
  took_e2e_started=1
  if [ -n "${e2e_pid:-}" ]; then
    local deploy_rc=0
    wait "$e2e_pid" || deploy_rc=$?
    e2e_pid=
    cat "$e2e_work/deploy.log"
    echo "--- e2e deploy: $([ "$deploy_rc" = 0 ] && echo ok || echo FAILED) in $(( $(date +%s) - e2e_t0 )) s" \
      "(started beside the molecule verify)"
    [ "$deploy_rc" = 0 ] || return 1
  else
    e2e_work=$(mktemp -d)
    e2e_deploy || return 1
  fi
  local inv
  inv=$(sccnlp testbed inventory --name "$E2E_TESTBED")
  unit_failed=0
  for dir in tests/integration/*/; do
    grep -rqs "pytest.mark.testbed" "$dir" || continue
    echo "--- pytest -m testbed $dir"
    SCCNLP_TESTBED_INVENTORY=$inv run_pytest -m testbed "$dir"
  done
  sccnlp testbed down --name "$E2E_TESTBED"
  # `down` removes every rule `up` added (forwarding, no egress): none may name the subnet afterwards.
  if command -v iptables >/dev/null && iptables -S | grep -F -- "10.87.0.0/24"; then
    echo "testbed down left the iptables rules above for 10.87.0.0/24"
    unit_failed=1
  fi
  [ "$unit_failed" = 0 ]
}

status=0
for s in "${stages[@]}"; do
  # The background group starts once lint is past, when the molecule stage is among the stages asked for.
  if [ "$s" != lint ] && [[ " ${stages[*]} " == *" molecule "* ]]; then start_background; fi
  if ! run_stage "$s"; then status=1; echo "=== stage $s: FAILED"; break; fi
done
echo "=== times: $(for s in "${stages[@]}" molecule_background; do [ -n "${took[$s]:-}" ] && printf '%s=%ss ' "$s" "${took[$s]}"; done)"
echo "pytest: ${n_passed} passed, ${n_failed} failed, ${n_skipped} skipped"
exit $status
