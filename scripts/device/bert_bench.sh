#!/usr/bin/env bash
# BERT pretraining throughput on one GPU machine, every variant of one group in one go (each its own process and
# timeout), figures to $OUT. Usage:
#   scripts/device/bert_bench.sh [BUDGET_SECONDS] [GROUP | VARIANT ...]
#   GROUP   = synthetic (default) | real (prepares the demo corpus unpacked and packed first; needs CORPUS=file[.gz])
#   VARIANT = label:model:seq_len:batch:steps:warmup[:trainer options[:bench options]], words joined by commas;
#             @OUT@ stands for the output folder, @U128@/@P128@/@U512@/@P512@ for the prepared (un)packed phases.
#   e.g. "new128:bert-large:128:256:30:10:" or "new128adamw:bert-large:128:256:30:10:--optimizer,adamw"
#   A bench option "--peer,hf-compile" times the peer (sccnlp.node.bert.peer: plain Hugging Face + torch.compile, what a
#   user would pick) instead of the trainer; the summary ends with each figure's ratio to the peer of the same seq.
# Results: $OUT (or ./bench-out) gets results.tar.gz (one JSON, curve and profile per variant, log.txt) and
# summary.txt; the summary is printed last. Launch path: `mpirun -np 1 python -m sccnlp.node.bert.bench ...` when mpirun
# exists (MPIRUN=0 to skip).
set -uo pipefail
final="${OUT:-bench-out}"
out=/tmp/bert-bench
rm -rf "$out"; mkdir -p "$out" "$final"
budget="${1:-540}"; shift || true
group=synthetic
if [ "$#" -ge 1 ] && [[ "$1" != *:* ]]; then group=$1; shift; fi
if [ "$#" -eq 0 ] && [ "$group" = synthetic ]; then
  set -- "new128b256:bert-large:128:256:30:8::--profile,@OUT@/profile_new128b256.txt" \
         "peer128b256:bert-large:128:256:20:5::--peer,hf-compile" \
         "new128b512:bert-large:128:512:20:5:" \
         "new512b64:bert-large:512:64:20:5::--profile,@OUT@/profile_new512b64.txt" \
         "peer512b64:bert-large:512:64:15:4::--peer,hf-compile" \
         "new128b512adamw:bert-large:128:512:20:5:--optimizer,adamw"
elif [ "$#" -eq 0 ] && [ "$group" = real ]; then
  set -- "real512u:bert-large:512:64:30:8:--data-dir,@U512@" \
         "real512p:bert-large:512:64:30:8:--data-dir,@P512@:--profile,@OUT@/profile_real512p.txt" \
         "real128u:bert-large:128:256:30:8:--data-dir,@U128@" \
         "real128p:bert-large:128:256:30:8:--data-dir,@P128@" \
         "curve_new:bert-large:128:256:200:1:--data-dir,@U128@:--curve,@OUT@/losses_new.json"
fi
# torchao (the trainer's --precision fp8) from the carried wheels when the image's Python lacks it.
bench_site=/tmp/scc-bench-site
if ! python3 -c 'import torchao' 2>/dev/null && ls .whl/torchao-*.whl >/dev/null 2>&1; then
  [ -f "$bench_site/.done" ] || { python3 -m pip install -q --no-index --no-deps --disable-pip-version-check \
    --target "$bench_site" .whl/torchao-*.whl && touch "$bench_site/.done"; }
  PYTHONPATH="$bench_site${PYTHONPATH:+:$PYTHONPATH}"
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
  echo "launch: ${launch[*]:-(no mpirun: plain python3)} group: $group"
} 2>&1 | tee "$out/log.txt"
start=$(date +%s)
U128='' P128='' U512='' P512=''
if [ "$group" = real ]; then
  corpus="${CORPUS:?the real group needs CORPUS=<corpus file or .gz>}"
  if [[ "$corpus" == *.gz ]]; then gunzip -c "$corpus" >/tmp/bert-corpus.txt; corpus=/tmp/bert-corpus.txt; fi
  workers=$(( $(nproc) / 2 ))
  for kind in unpacked packed; do
    flag=; [ "$kind" = packed ] && flag=--pack
    python3 -m sccnlp.node.bert.prepare run --corpus "$corpus" --out-root "/tmp/bert-data-$kind" --workers "$workers" \
      --partitions "$workers" $flag >"$out/prepare_$kind.json" 2>>"$out/log.txt" &
  done
  wait
  for kind in unpacked packed; do
    echo "prepare $kind: $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("records", d["records"], "padding", d["padding_fraction"])' "$out/prepare_$kind.json")" \
      | tee -a "$out/summary.txt"
  done
  U128=$(ls -d /tmp/bert-data-unpacked/*/phase1_seq128) U512=$(ls -d /tmp/bert-data-unpacked/*/phase2_seq512)
  P128=$(ls -d /tmp/bert-data-packed/*/phase1_seq128) P512=$(ls -d /tmp/bert-data-packed/*/phase2_seq512)
  echo "prepared in $(( $(date +%s) - start ))s" | tee -a "$out/summary.txt"
fi
subst() { local s=${1//,/ }; s=${s//@OUT@/$out}; s=${s//@U128@/$U128}; s=${s//@P128@/$P128}
  s=${s//@U512@/$U512}; s=${s//@P512@/$P512}; printf '%s' "$s"; }
for v in "$@"; do
  IFS=: read -r label model seq batch steps warmup extra bopts <<<"$v"
  left=$(( budget - ($(date +%s) - start) ))
  if [ "$left" -lt 45 ]; then echo "SKIP $label (only ${left}s left)" | tee -a "$out/summary.txt"; continue; fi
  extra=$(subst "$extra"); bopts=$(subst "${bopts:-}")
  echo "=== $label: $model seq=$seq batch=$batch extra=[$extra] bench=[$bopts] (${left}s left)" | tee -a "$out/log.txt"
  # shellcheck disable=SC2086  # bench options are words
  timeout -k 10 "$left" "${launch[@]}" python3 -m sccnlp.node.bert.bench --model "$model" --seq-len "$seq" \
    --batch-size "$batch" --steps "$steps" --warmup "$warmup" --label "$label" --json "$out/$label.json" \
    --train-args="$extra" $bopts >"$out/$label.log" 2>&1
  rc=$?
  cat "$out/$label.log" >>"$out/log.txt"
  line=$(grep '^bench ' "$out/$label.log" | tail -1 | sed 's/ data=real:[^ ]*/ data=real/')
  if [ "$rc" -ne 0 ]; then line="FAILED rc=$rc: $(grep -E 'Error|error' "$out/$label.log" | tail -2 | tr '\n' ' ')"; fi
  echo "$label: $line" | tee -a "$out/summary.txt"
done
ls "$out"/*.json >/dev/null 2>&1 && { echo "----- ratio to the peer (same call)"
  python3 -m sccnlp.node.bert.bench --ratios "$out"/*.json; } | tee -a "$out/summary.txt"
for f in "$out"/profile_*.txt; do [ -f "$f" ] && { echo "----- $(basename "$f")"; head -n 24 "$f"; } >>"$out/summary.txt"; done
tar -C /tmp -czf "$final/results.tar.gz" bert-bench
cp "$out/summary.txt" "$final/summary.txt"
echo "----- summary"; cat "$out/summary.txt"
