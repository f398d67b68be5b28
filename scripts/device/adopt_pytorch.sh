#!/usr/bin/env bash
# The pytorch role in adopt mode on the lent GPU machine (the lead runs it from the repository root):
# finds the preinstalled torch (/opt/torch/.venv/bin/python3), verifies CUDA, the GPU count (inventory gpu_count=1),
# the NCCL version and a one-process NCCL all_reduce, installs nothing. Runs the real playbook
# (playbooks/runtime.yml --tags pytorch) three times: converge, again (must report changed=0), and --check
# (changed=0). The local fact goes to $OUT/pytorch/facts.d/ so nothing under /etc is written.
# Outputs: $OUT/pytorch/{inventory.ini,vars.json,run1.log,run2.log,check.log,facts.d/scc_pytorch.fact,summary.txt}.
set -euo pipefail
# shellcheck source=scripts/device/lib.sh
. "$(dirname "$0")/lib.sh"
device_setup
cd "$REPO"
OUT=${OUT:-/tmp/out}
DIR="$OUT/pytorch"
ADOPT_PYTHON=${SCC_ADOPT_PYTHON:-/opt/torch/.venv/bin/python3}
mkdir -p "$DIR/facts.d"

cat > "$DIR/inventory.ini" <<INV
[scc_cluster]
node-1 ansible_connection=local ansible_python_interpreter=$(command -v python3) gpu_count=1
INV
cat > "$DIR/vars.json" <<VARS
{"pytorch_method": "adopt", "pytorch_python": "$ADOPT_PYTHON", "pytorch_fact_path": "$DIR/facts.d/scc_pytorch.fact"}
VARS

{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "ansible: $(ansible-playbook --version | head -1)"
  echo "controller python: $(command -v python3) $(python3 --version 2>&1)"
  echo "adopted python: $ADOPT_PYTHON"
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | sed 's/^/nvidia-smi: /' || true
} > "$DIR/summary.txt"

play() {  # play NAME [extra ansible-playbook args]: run, keep the log, return the recap's changed/failed counts
  local name=$1; shift
  local start=$SECONDS rc=0
  ansible-playbook -i "$DIR/inventory.ini" playbooks/runtime.yml --tags pytorch -e "@$DIR/vars.json" "$@" \
    > "$DIR/$name.log" 2>&1 || rc=$?
  local recap
  recap=$(grep -E '^node-1 +:' "$DIR/$name.log" | tail -1 || true)
  echo "$name: rc=$rc $((SECONDS - start))s ${recap:-no recap}" | tee -a "$DIR/summary.txt"
  return $rc
}

status=0
play run1 || status=1
play run2 || status=1
play check --check || status=1
for name in run2 check; do
  if ! grep -Eq '^node-1 +:.* changed=0 .* failed=0' "$DIR/$name.log"; then
    echo "FAIL: $name changed something or failed" | tee -a "$DIR/summary.txt"; status=1
  fi
done
grep -h 'torch .*cuda available\|nccl .* all_reduce\|adopt torch' "$DIR/run2.log" | sed 's/^ *//' | sort -u \
  >> "$DIR/summary.txt" || true
if [ -s "$DIR/facts.d/scc_pytorch.fact" ]; then
  echo "fact:" >> "$DIR/summary.txt"
  cat "$DIR/facts.d/scc_pytorch.fact" >> "$DIR/summary.txt"
else
  echo "FAIL: no fact written" | tee -a "$DIR/summary.txt"; status=1
fi
[ $status -eq 0 ] && echo "RESULT: PASS" >> "$DIR/summary.txt" || echo "RESULT: FAIL" >> "$DIR/summary.txt"
cat "$DIR/summary.txt"
if [ $status -ne 0 ]; then
  echo "--- last lines of the failing run(s) ---"
  for name in run1 run2 check; do
    grep -q 'failed=0' "$DIR/$name.log" || tail -40 "$DIR/$name.log"
  done
fi
exit $status
