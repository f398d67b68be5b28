#!/usr/bin/env bash
# BERT pretraining throughput on one GPU machine, several variants in one go (each its own process and timeout).
# Usage: scripts/device/bert_bench.sh [BUDGET_SECONDS] [VARIANT ...]
#   VARIANT = label:model:seq_len:batch:steps:warmup[:trainer options, words joined by commas]
#   e.g. "compiled:bert-large:128:256:30:10:--compile,default"
# Results: $OUT (or ./bench-out) gets one JSON per variant, log.txt and summary.txt; the summary is printed last.
# Launch path: each variant runs `mpirun -np 1 python -m sccnlp.bert.bench ...` when mpirun exists (MPIRUN=0 to skip).
set -uo pipefail
out="${OUT:-bench-out}"
mkdir -p "$out"
budget="${1:-540}"; shift || true
if [ "$#" -eq 0 ]; then
  set -- "large128:bert-large:128:256:30:10:" "large512:bert-large:512:64:20:5:" \
         "base128:bert-base:128:256:30:10:" "base512:bert-base:512:64:20:5:"
fi
PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}$(pwd)"
export PYTHONPATH PYTHONUNBUFFERED=1
export TORCHINDUCTOR_CACHE_DIR="${TORCHINDUCTOR_CACHE_DIR:-/tmp/trn-inductor}"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
launch=()
if [ "${MPIRUN:-1}" = 1 ] && command -v mpirun >/dev/null && mpirun --allow-run-as-root -np 1 true >/dev/null 2>&1; then
  launch=(mpirun --allow-run-as-root -np 1 --bind-to none -x PYTHONPATH -x PYTHONUNBUFFERED -x TORCHINDUCTOR_CACHE_DIR)
fi
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv,noheader
  python3 -c 'import torch, transformers; print("torch", torch.__version__, "transformers", transformers.__version__)'
  echo "launch: ${launch[*]:-(no mpirun: plain python3)}"
} 2>&1 | tee "$out/log.txt"
start=$(date +%s)
for v in "$@"; do
  IFS=: read -r label model seq batch steps warmup extra <<<"$v"
  left=$(( budget - ($(date +%s) - start) ))
  if [ "$left" -lt 45 ]; then echo "SKIP $label (only ${left}s left)" | tee -a "$out/summary.txt"; continue; fi
  extra="${extra//,/ }"
  echo "=== $label: $model seq=$seq batch=$batch extra=[$extra] (${left}s left)" | tee -a "$out/log.txt"
  timeout -k 10 "$left" "${launch[@]}" python3 -m sccnlp.bert.bench --model "$model" --seq-len "$seq" \
    --batch-size "$batch" --steps "$steps" --warmup "$warmup" --label "$label" --json "$out/$label.json" \
    --train-args="$extra" >>"$out/log.txt" 2>&1
  rc=$?
  line=$(grep '^bench ' "$out/log.txt" | tail -1)
  if [ "$rc" -ne 0 ]; then line="FAILED rc=$rc: $(grep -E 'Error|error' "$out/log.txt" | tail -2 | tr '\n' ' ')"; fi
  echo "$label: $line" | tee -a "$out/summary.txt"
done
echo "----- summary"; cat "$out/summary.txt"
