#!/usr/bin/env bash
# Run the GPU stack in adopt mode on THIS machine (a GPU node) with the local connection, and prove:
#   1. the plan is accepted and driver, CUDA, NCCL, cuDNN are found, reported and pass (run 1),
#   2. a second run changes nothing (changed=0), and --check passes too,
#   3. a V100 + CUDA 13 plan is refused with the matrix's message.
# Outputs go to $OUT/adopt/ (logs, the raw nvidia-smi outputs for the parser fixtures, summary.txt).
# Usage (from the repository root): bash scripts/device/adopt_stack.sh [extra ansible-playbook args, e.g. -e nccl_version=2.27]
# Ansible and the dependency collections come from .whl/ and .device/ (scripts/device/lib.sh).
set -uo pipefail

OUT_DIR=${OUT:-/tmp/out}/adopt
mkdir -p "$OUT_DIR"
# shellcheck source=scripts/device/lib.sh
. "$(dirname "$0")/lib.sh"
device_setup || exit 2
cd "$REPO" || exit 2
export ANSIBLE_CALLBACK_RESULT_FORMAT=json

INV=inventory/localhost_gpu.yml
PB=playbooks/gpu_stack.yml
FIELDS=index,name,driver_version,memory.total,ecc.mode.current,ecc.mode.pending,ecc.errors.uncorrected.aggregate.total,persistence_mode,pci.bus_id,pci.device_id

# Raw tool outputs: the parser fixtures of tests/unit/gpu_stack (recorded before anything else runs).
{
  nvidia-smi --query-gpu="$FIELDS" --format=csv > "$OUT_DIR/nvidia-smi-query-gpu.csv" 2>&1
  nvidia-smi > "$OUT_DIR/nvidia-smi.txt" 2>&1
  lspci -nn > "$OUT_DIR/lspci-nn.txt" 2>&1
  cat /proc/driver/nvidia/version > "$OUT_DIR/proc-driver-nvidia-version.txt" 2>&1
  ls -l /usr/local/ > "$OUT_DIR/usr-local.txt" 2>&1
  /usr/local/cuda/bin/nvcc --version > "$OUT_DIR/nvcc-version.txt" 2>&1
  uname -r > "$OUT_DIR/uname-r.txt"
  ansible --version > "$OUT_DIR/ansible-version.txt" 2>&1
} || true

# What the stack finds before the plan is judged (reported even if a pin below turns out wrong).
ansible -i "$INV" scc_cluster -m scc.nlp_training.gpu_facts \
  -a '{"libraries": ["cudart", "nccl", "cudnn"], "venvs": ["/opt/torch/.venv"]}' > "$OUT_DIR/discovery.txt" 2>&1
echo "discovery rc=$?" >> "$OUT_DIR/discovery.txt"

# The GPUs the inventory declares (gpu_count): GPU_COUNT from the environment, else what nvidia-smi lists (a
# container or VM may see fewer GPUs than the PCI bus shows), else the PCI count of NVIDIA display/3D controllers.
PCI_COUNT=$(lspci -nn 2>/dev/null | grep -cE '\[03(00|02)\]: NVIDIA' || true)
SMI_COUNT=$(nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null | wc -l)
if [ -z "${GPU_COUNT:-}" ]; then
  if [ "${SMI_COUNT:-0}" -gt 0 ]; then GPU_COUNT=$SMI_COUNT; else GPU_COUNT=${PCI_COUNT:-0}; fi
fi
echo "gpu_count: $GPU_COUNT (nvidia-smi: $SMI_COUNT, lspci: ${PCI_COUNT:-none})" > "$OUT_DIR/gpu-count.txt"
set -- -e "gpu_count=$GPU_COUNT" "$@"

run() { # name, args...
  local name=$1; shift
  ansible-playbook -i "$INV" "$PB" "$@" > "$OUT_DIR/$name.log" 2>&1
  local rc=$?
  echo "$rc" > "$OUT_DIR/$name.rc"
  return $rc
}
recap() { grep -E '^gpu-node-1 +:' "$OUT_DIR/$1.log" | tail -1; }
changed() { recap "$1" | sed -E 's/.*changed=([0-9]+).*/\1/'; }
# Changed tasks per role of a run's log: "role=count ..." for the roles matching $2 (an extended regex).
changed_by() {
  awk -v want="^($2)\$" '
    /^TASK \[/ { role = ""; if (match($0, /\[scc\.nlp_training\.[a-z0-9_]+ :/)) role = substr($0, RSTART + 18, RLENGTH - 20) }
    /^changed: / && role ~ want { n[role]++ }
    END { for (r in n) printf "%s=%d ", r, n[r] }' "$OUT_DIR/$1.log"
}

run run1 "$@"; RC1=$?
run run2 "$@"; RC2=$?
run check --check "$@"; RC3=$?
run refuse_v100_cuda13 "$@" -e gpu_arch=volta -e cuda_version=13.0; RC4=$?
REFUSED_MSG=$(grep -o 'cuda 13.0 does not support gpu_arch volta[^|]*' "$OUT_DIR/refuse_v100_cuda13.log" | head -1)

PASS=0; FAIL=0
# verdict LABEL COMMAND...: PASS when the command succeeds.
verdict() { local label=$1; shift; if "$@"; then echo "PASS  $label"; PASS=$((PASS+1)); else echo "FAIL  $label"; FAIL=$((FAIL+1)); fi; }
{
  echo "== GPU stack adopt on $(hostname) ($(date -u +%FT%TZ))"
  echo "-- found"
  grep -ohE '"msg": "gpu-node-1: (driver [0-9.]+ \(|CUDA [0-9.]+ \((toolkit|runtime)|nccl [0-9.]+ loads|cudnn [0-9.]+ loads|plan accepted)[^"]*"' \
    "$OUT_DIR/run1.log" | sed -E 's/^"msg": "//; s/"$//' | sort -u
  echo "-- $(cat "$OUT_DIR/gpu-count.txt")"
  echo "-- checks"
  verdict "run 1 passes (rc $RC1; $(recap run1))" test "$RC1" = 0
  verdict "run 2 passes and changes nothing (changed=$(changed run2))" test "$RC2:$(changed run2)" = 0:0
  # Adopt installs nothing: the stack roles change nothing even on the first run. ib_check, the last role of the
  # phase, writes the NCCL settings it derives (/etc/nccl.conf, the env file, its local fact): reported, expected.
  STACK_CHANGED=$(changed_by run1 'compat_check|gpu_driver|cuda|nccl|cudnn')
  verdict "run 1: the stack roles changed nothing (adopt; ${STACK_CHANGED:-none}; ib_check wrote: $(changed_by run1 ib_check))" \
    test -z "$STACK_CHANGED"
  verdict "--check passes (rc $RC3; $(recap check))" test "$RC3" = 0
  verdict "V100 + CUDA 13 refused (rc $RC4): ${REFUSED_MSG:-no message}" test "$RC4" != 0 -a -n "$REFUSED_MSG"
  echo "-- $PASS passed, $FAIL failed"
  echo "-- on failure read: $OUT_DIR/run1.log (first error: $(grep -m1 -E '^fatal|ERROR' "$OUT_DIR/run1.log" | cut -c1-200))"
} >"$OUT_DIR/summary.txt"
cat "$OUT_DIR/summary.txt"
[ "$FAIL" = 0 ]
