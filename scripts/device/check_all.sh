#!/usr/bin/env bash
# The whole check on a GPU machine (run from the repository root, as root; nothing is downloaded):
#   adopt_stack    GPU stack roles in adopt mode: driver/CUDA/NCCL/cuDNN found, nothing changed, V100 + CUDA 13 refused
#   adopt_pytorch  pytorch role in adopt mode
#   package_path   cuda/nccl/cudnn method package from a local stand-in for NVIDIA's repository (package_path.sh)
#   gpu_gates      playbooks/validate.yml on this machine as a one-node cluster, and a floor that must fail
#   bert_role      playbooks/bert.yml: real shards prepared by the role, BERT-large trained with mpirun (bert_role.sh)
#   bert_bench     BERT-large throughput variants beside the Hugging Face + torch.compile peer (bert_bench.sh)
# Needs .whl/ and .device/ (made on the build machine by scripts/device/pack.sh). Usage:
#   SCC_COMMIT=$(git rev-parse --short HEAD) bash scripts/device/check_all.sh [STEP ...]   # default: every step
# A machine that stops a command after 10 minutes takes two calls: the first four steps, then the last two.
# Results: $OUT/summary.txt (each step's PASS/FAIL, time and first error, then the steps' own summaries) and
# $OUT/results.tar.gz (every log).
set -uo pipefail
REPO=$(pwd)
FINAL=${OUT:-$REPO/out}
WORK=/tmp/scc-check
rm -rf "$WORK"; mkdir -p "$WORK" "$FINAL"
export OUT=$WORK
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
ALL=(adopt_stack adopt_pytorch package_path gpu_gates bert_role bert_bench)
steps=("$@"); [ ${#steps[@]} -gt 0 ] || steps=("${ALL[@]}")
for s in "${steps[@]}"; do
  [[ " ${ALL[*]} " == *" $s "* ]] || { echo "check_all: unknown step '$s' (steps: ${ALL[*]})" >&2; exit 2; }
done
summary=$FINAL/summary.txt
# The tree's commit: SCC_COMMIT from the caller (a copied tree's git metadata can be older than its files), else git's.
tree=${SCC_COMMIT:-$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo 'a tree without git')}
[ -n "${SCC_COMMIT:-}" ] || tree+=" (this copy's git metadata; SCC_COMMIT=<commit> names the tree that ran)"
{ echo "device check of $tree at $(date -u +%FT%TZ)"
  nvidia-smi -L; echo "kernel $(uname -r); driver $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)"
} >"$summary" 2>&1
declare -A limit=([adopt_stack]=200 [adopt_pytorch]=120 [package_path]=420 [gpu_gates]=300 [bert_role]=420 [bert_bench]=330)
declare -A cmd=([adopt_stack]="bash scripts/device/adopt_stack.sh" [adopt_pytorch]="bash scripts/device/adopt_pytorch.sh"
  [package_path]="bash scripts/device/package_path.sh" [gpu_gates]="bash scripts/device/gpu_gates.sh"
  [bert_role]="bash scripts/device/bert_role.sh" [bert_bench]="bash scripts/device/bert_bench.sh ${BERT_BUDGET:-240} ${BERT_VARIANTS:-new128b256:bert-large:128:256:30:8: peer128b256:bert-large:128:256:20:5::--peer,hf-compile new512b64:bert-large:512:64:20:5: peer512b64:bert-large:512:64:15:4::--peer,hf-compile}")
passed=0; failed=0; lines=()
for s in "${steps[@]}"; do
  t0=$(date +%s)
  # shellcheck disable=SC2086  # the command's words
  timeout -k 10 "${T_LIMIT:-${limit[$s]}}" ${cmd[$s]} >"$WORK/$s.log" 2>&1
  rc=$?
  took=$(( $(date +%s) - t0 ))
  if [ "$rc" = 0 ]; then verdict=PASS; passed=$((passed + 1)); err=""; else
    verdict=FAIL; failed=$((failed + 1))
    [ "$rc" = 124 ] && err="timed out after ${limit[$s]} s; " || err=""
    err+=$(grep -m1 -E '^FAIL|ERROR|^fatal|Traceback|FAILED' "$WORK/$s.log" | cut -c1-300)
  fi
  lines+=("$(printf '%-5s %-14s rc=%-3s %4ss %s' "$verdict" "$s" "$rc" "$took" "${err:+first error: $err}")")
  echo "${lines[-1]}" | tee -a "$FINAL/progress.txt"
done
{ echo "device check: $passed passed, $failed failed (${steps[*]})"
  printf '%s\n' "${lines[@]}"
  for s in "${steps[@]}"; do echo "----- $s"; tail -n 30 "$WORK/$s.log"; done
} >>"$summary"
rm -f "$FINAL/progress.txt"
tar -C /tmp -czf "$FINAL/results.tar.gz" scc-check
cat "$summary"
[ "$failed" = 0 ]
