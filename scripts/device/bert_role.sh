#!/usr/bin/env bash
# BERT through the role path on a GPU machine (run from the repository root, as root; results in $OUT/bert_role/):
#   1. playbooks/bert.yml on this machine as a one-node cluster (local connection, its GPUs as the hostfile's slots):
#      the role checks the corpus (.device/corpus.txt.gz, the demo corpus made by scripts/device/pack.sh, by its
#      sha256, served over http on the loopback), prepares real shards, and trains BERT-large with mpirun like on any cluster;
#   2. the same settings through the benchmark harness (python -m sccnlp.node.bert.bench, mpirun -np 1) on the shards the
#      role prepared, in the same call;
#   3. PASS when the role's run ended well and its seq/s (the median of metrics.jsonl after the first record, which
#      holds the compilation) is within 5% of the harness's: the launch path costs nothing.
set -uo pipefail
# shellcheck source=scripts/device/lib.sh
. "$(dirname "$0")/lib.sh"
device_setup || exit 2
cd "$REPO" || exit 2
D=${OUT:-/tmp/out}/bert_role
W=/tmp/scc-bert-role
rm -rf "$W"; mkdir -p "$D" "$W/shared" "$W/facts"
log() { printf '[bert_role %s] %s\n' "$(date -u +%H:%M:%S)" "$*" | tee -a "$D/steps.txt"; }
[ -s .device/corpus.txt.gz ] || { log "ERROR: .device/corpus.txt.gz missing (scripts/device/pack.sh makes it)"; exit 2; }
gunzip -c .device/corpus.txt.gz >"$W/corpus.txt"
SUM=$(sha256sum "$W/corpus.txt" | cut -d' ' -f1)
# The role takes a corpus from an http(s) URL only: a loopback web server hands it the file.
PORT=${BERT_ROLE_PORT:-8765}
"$DEVICE_PY" -m http.server --bind 127.0.0.1 --directory "$W" "$PORT" >"$D/http.log" 2>&1 &
HTTP_PID=$!
trap 'kill "$HTTP_PID" 2>/dev/null' EXIT
sleep 1
NODE=$(hostname)
GPUS=$(nvidia-smi -L | grep -c '^GPU ')
VENV=$(dirname "$(dirname "$DEVICE_PY")")
BATCH=${BERT_ROLE_BATCH:-256} STEPS=${BERT_ROLE_STEPS:-80} SEQ=128
echo "$NODE slots=$GPUS" >"$W/mpihosts"
printf 'OMPI_ALLOW_RUN_AS_ROOT=1\nOMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1\nNCCL_NVLS_ENABLE=0\nTORCH_SYMM_MEM_DISABLE_MULTICAST=1\nNVSHMEM_DISABLE_NVLS=1\nTORCHINDUCTOR_CACHE_DIR=/tmp/trn-inductor\n' >"$W/scc.env"
cat >"$W/inventory.yml" <<INV
scc_cluster:
  hosts:
    $NODE:
      ansible_connection: local
      ansible_python_interpreter: $DEVICE_PY
      gpu_count: $GPUS
  vars:
    scc_venv: $VENV
    scc_shared_dir: $W/shared
    scc_mpi_hostfile: $W/mpihosts
    scc_env_file: $W/scc.env
    bert_src_dir: $W/src
    bert_fact_path: $W/facts/scc_bert.fact
    bert_corpus_source: url
    bert_corpus_url: http://127.0.0.1:$PORT/corpus.txt
    bert_corpus_sha256: "$SUM"
    bert_prepare_phases: [1]
    bert_prepare_workers: $(( $(nproc) / 2 ))
    bert_model: large
    bert_phase: 1
    bert_steps: $STEPS
    bert_batch_size: $BATCH
    bert_log_interval: 10
    bert_ckpt_interval: 0
    bert_ckpt_minutes: 60
    bert_train_timeout: 400
    bert_poll_interval: 5
INV
cp "$W/inventory.yml" "$D/"
T0=$(date +%s)
ansible-playbook -i "$W/inventory.yml" playbooks/bert.yml >"$D/ansible-bert.log" 2>&1
RC=$?
log "playbooks/bert.yml rc $RC in $(( $(date +%s) - T0 )) s: $(grep -E "^$NODE +:" "$D/ansible-bert.log" | tail -1)"
RUN=$(dirname "$(find "$W/shared/bert/runs" -name metrics.jsonl 2>/dev/null | head -1)")
DATA=$(find "$W/shared/bert/data" -maxdepth 2 -type d -name 'phase1_seq128' 2>/dev/null | head -1)
[ -n "$RUN" ] && cp "$RUN"/metrics.jsonl "$RUN"/logs/* "$D/" 2>/dev/null
ROLE=$("$DEVICE_PY" - "$RUN/metrics.jsonl" <<'PY' 2>>"$D/steps.txt"
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
rows = [r for r in rows if "seq_per_s" in r][1:]
print(f"{statistics.median(r['seq_per_s'] for r in rows):.1f}" if rows else "")
PY
)
log "role path: ${ROLE:-no figure} seq/s (median after the first record; run dir ${RUN:-none}, data ${DATA:-none})"
BENCH=""
if [ -n "$DATA" ]; then
  T0=$(date +%s)
  mpirun --allow-run-as-root -np 1 --bind-to none -x PYTHONPATH="$REPO:$PYTHONPATH" -x PYTHONUNBUFFERED \
    -x NCCL_NVLS_ENABLE -x TORCH_SYMM_MEM_DISABLE_MULTICAST -x NVSHMEM_DISABLE_NVLS -x TORCHINDUCTOR_CACHE_DIR=/tmp/trn-inductor \
    "$DEVICE_PY" -m sccnlp.node.bert.bench --model bert-large --seq-len "$SEQ" --batch-size "$BATCH" --steps 30 --warmup 8 \
    --data-dir "$DATA" --label role-compare --json "$D/bench.json" >"$D/bench.log" 2>&1
  BENCH=$("$DEVICE_PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))[0]["seq_per_s"] if isinstance(json.load(open(sys.argv[1])), list) else json.load(open(sys.argv[1]))["seq_per_s"])' "$D/bench.json" 2>/dev/null)
  log "harness on the same shards: ${BENCH:-no figure} seq/s ($(( $(date +%s) - T0 )) s)"
fi
PASS=0; FAIL=0
verdict() { local label=$1; shift; if "$@"; then echo "PASS  $label"; PASS=$((PASS+1)); else echo "FAIL  $label"; FAIL=$((FAIL+1)); fi; }
# No figure on either side is a failure, never a match.
within() { "$DEVICE_PY" -c 'import sys; a, b = map(float, sys.argv[1:]); sys.exit(not (a > 0 and b > 0 and abs(a - b) <= 0.05 * b))' "$1" "$2" 2>/dev/null; }
{
  echo "== BERT-large through playbooks/bert.yml ($(date -u +%FT%TZ), $GPUS GPU, batch $BATCH/GPU, seq $SEQ)"
  verdict "playbooks/bert.yml trained and ended well (rc $RC)" test "$RC" = 0
  verdict "role path ${ROLE:-?} seq/s vs harness ${BENCH:-?} seq/s on the same shards: within 5%" within "${ROLE:-}" "${BENCH:-}"
  echo "-- $PASS passed, $FAIL failed"
  echo "-- first error: $(grep -m1 -E '^fatal|ERROR|FAILED' "$D/ansible-bert.log" | cut -c1-300)"
} >"$D/summary.txt"
cat "$D/summary.txt"
[ "$FAIL" = 0 ]
