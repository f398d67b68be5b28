#!/usr/bin/env bash
# The whole check on a lent GPU machine, in one call (run from the repository root, as root):
#   1. GPU stack roles in adopt mode (scripts/device/adopt_stack.sh): find driver/CUDA/NCCL/cuDNN, change nothing,
#      refuse V100 + CUDA 13
#   2. pytorch role in adopt mode (scripts/device/adopt_pytorch.sh)
#   3. GPU gates through playbooks/validate.yml (scripts/device/gpu_gates.sh), and a deliberately failing floor
#   4. BERT-large throughput through the mpirun launch path (scripts/device/bert_bench.sh)
# Needs .whl/ (ansible-core wheels; setuptools >= 68 too where the torch venv has none, for the node wheel) and .device/nccl-tests.tar.gz carried along. Everything lands in one archive,
# $OUT/results.tar.gz, plus $OUT/summary.txt (the device tool returns at most 8 files).
set -uo pipefail
REPO=$(pwd)
FINAL=${OUT:-$REPO/out}
WORK=/tmp/scc-check
rm -rf "$WORK"; mkdir -p "$WORK" "$FINAL"
export OUT=$WORK
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
summary=$FINAL/summary.txt
: >"$summary"
step() {  # name timeout command...
  local name=$1 limit=$2 t0 rc; shift 2
  t0=$(date +%s)
  timeout "$limit" "$@" >"$WORK/$name.log" 2>&1; rc=$?
  printf '%-14s rc=%-3s %4ss\n' "$name" "$rc" "$(( $(date +%s) - t0 ))" | tee -a "$summary"
  tail -n 25 "$WORK/$name.log" | sed "s/^/  [$name] /" >>"$summary"
}
{ date -u; nvidia-smi -L; uname -r; } >>"$summary" 2>&1
step adopt_stack   "${T_ADOPT:-150}" bash scripts/device/adopt_stack.sh
step adopt_pytorch "${T_TORCH:-100}" bash scripts/device/adopt_pytorch.sh
step gpu_gates     "${T_GATES:-240}" bash scripts/device/gpu_gates.sh
# BERT_VARIANTS: space-separated variant specs (bert_bench.sh arguments); none = its default set.
read -r -a variants <<<"${BERT_VARIANTS:-}"
step bert_bench    "${T_BERT:-330}" bash scripts/device/bert_bench.sh "${BERT_BUDGET:-300}" "${variants[@]}"
tar -C /tmp -czf "$FINAL/results.tar.gz" scc-check
cat "$summary"
