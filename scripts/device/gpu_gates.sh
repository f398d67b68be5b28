#!/usr/bin/env bash
# GPU gates on the lent GPU machine (one node, local connection), run by the lead from the repository root:
#
#   bash scripts/device/gpu_gates.sh            # results under $OUT/gates/ (and $OUT/gates/failing-floor/)
#
# Expects: .whl/*.whl (ansible-core and its dependencies, and setuptools >= 68 where the venv has none: the
# validate role builds the node wheel sccnlp-node with it; installed offline into /tmp/site),
# .device/nccl-tests.tar.gz (a snapshot of NVIDIA/nccl-tests), python3 = the torch venv's python, nvcc, nvidia-smi,
# OpenMPI. Nothing is downloaded. Steps:
#   1. role ib_check (RDMA facts; TCP fallback notice where there is none) -> its own log, never blocks the gates
#   2. playbooks/validate.yml on an inventory of this machine (gpu_count = GPUs nvidia-smi lists): nccl-tests built
#      from the tarball against the NCCL the venv wheel ships, GPU health, GEMM/copy/host<->device gates,
#      all_reduce_perf -g N, MPI/shared-dir/venv checks; report.json/report.html + raw outputs in $OUT/gates/
#   3. the same with a floor override that must fail (gemm_bf16_tflops 100000), proving the message
#      "<node>: gemm_bf16_tflops X < floor 100000" -> $OUT/gates/failing-floor/ (skip with GATES_SKIP_FAILING=1)
# Exit status: that of step 2 (0 = every check passed or was skipped with a reason; 1 = a check failed).
set -uo pipefail

REPO=$(pwd)
OUT=${OUT:-$REPO/out}
DEST=$OUT/gates
WORK=${GATES_WORK:-/tmp/scc-gates}
NODE=${GATES_NODE:-gpu-node-1}
mkdir -p "$DEST/raw-extra" "$WORK"
log() { printf '[gpu_gates %s] %s\n' "$(date -u +%H:%M:%S)" "$*"; }
die() { log "ERROR: $*"; exit 2; }

{ [ -f "$REPO/galaxy.yml" ] && [ -f "$REPO/playbooks/validate.yml" ]; } || die "run from the repository root"
[ -f "$REPO/.device/nccl-tests.tar.gz" ] || die ".device/nccl-tests.tar.gz missing (the nccl-tests snapshot)"
command -v nvidia-smi >/dev/null || die "nvidia-smi not found"

SUDO=""
if [ "$(id -u)" != 0 ]; then
  if sudo -n true 2>/dev/null; then SUDO="--become"; else
    die "needs root or passwordless sudo (the roles write /etc/ansible/facts.d and /opt/scc)"; fi
fi

# --- Ansible, offline -------------------------------------------------------------------------------------------
# The torch venv's python runs Ansible, its modules and the GPU gates (GATES_PYTHON overrides).
DEVICE_PYTHON=${GATES_PYTHON:-}
# shellcheck source=scripts/device/lib.sh
. "$REPO/scripts/device/lib.sh"
device_setup || die "device setup failed (see above)"
PY=$DEVICE_PY
"$PY" -c 'import torch' 2>/dev/null || die "$PY cannot import torch; set GATES_PYTHON to the torch venv's python"
log "python3: $PY ($("$PY" --version 2>&1))"
export ANSIBLE_ROLES_PATH=$REPO/roles
ansible-playbook --version | head -1 || die "ansible-playbook does not start"
# The validate role delivers the gates as the sccnlp-node wheel, built here with setuptools (pip wheel
# --no-build-isolation --no-index) by the Python that runs Ansible: put a setuptools (>= 68) wheel into .whl/ when
# this Python has none.
"$PY" -c 'import setuptools, sys; sys.exit(int(setuptools.__version__.split(".")[0]) < 68)' 2>/dev/null \
  || die "setuptools >= 68 (the build backend of the node wheel) is missing for $PY: add its wheel to .whl/"
"$PY" -m pip --version >/dev/null 2>&1 || die "$PY has no pip (needed to build and install the node wheel)"

# --- What this machine has --------------------------------------------------------------------------------------
if [ -x /usr/local/cuda/bin/nvcc ]; then CUDA_HOME=/usr/local/cuda; else
  NVCC=$(command -v nvcc) || die "nvcc not found (needed to build nccl-tests)"
  CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$NVCC")")")
fi
NVCC=$CUDA_HOME/bin/nvcc
{ [ -x "$NVCC" ] && ls "$CUDA_HOME"/lib64/libcudart.so* >/dev/null 2>&1; } \
  || die "no nvcc + lib64/libcudart.so under CUDA_HOME=$CUDA_HOME (set it by putting the toolkit's nvcc on PATH)"
VENV=${GATES_VENV:-$(dirname "$(dirname "$PY")")}
GPUS=$(nvidia-smi -L | grep -c '^GPU ')
# One node: the single-process build is enough (GATES_MPI_BUILD=1 also builds the MPI variant, if mpicc exists).
MPI=false; [ "${GATES_MPI_BUILD:-0}" = 1 ] && command -v mpicc >/dev/null && MPI=true
MPIRUN=$(command -v mpirun || echo mpirun)
TARSUM=$(sha256sum "$REPO/.device/nccl-tests.tar.gz" | cut -d' ' -f1)
JOBS=$(nproc)
log "GPUs: $GPUS; CUDA_HOME=$CUDA_HOME; venv=$VENV; mpicc: $MPI; nccl-tests tarball sha256 $TARSUM"

# Raw outputs other engineers use as recorded fixtures (nvidia-smi -q and --query-gpu are also in raw/<node>/).
nvidia-smi -q > "$DEST/raw-extra/nvidia-smi-q.txt" 2>&1
nvidia-smi --query-gpu=index,name,uuid,pci.bus_id,driver_version,vbios_version,persistence_mode,pstate,temperature.gpu,power.draw,power.limit,memory.total,memory.used,utilization.gpu,ecc.mode.current,ecc.errors.uncorrected.volatile.total,clocks.sm,clocks.max.sm,compute_cap \
  --format=csv > "$DEST/raw-extra/nvidia-smi-query-gpu.csv" 2>&1
nvidia-smi -L > "$DEST/raw-extra/nvidia-smi-L.txt" 2>&1
nvidia-smi topo -m > "$DEST/raw-extra/nvidia-smi-topo-m.txt" 2>&1
"$NVCC" --version > "$DEST/raw-extra/nvcc-version.txt" 2>&1
for tool in "ibv_devinfo -v" ibstat "rdma link show" ibv_devices; do
  name=$(echo "$tool" | tr ' ' '_')
  if command -v "${tool%% *}" >/dev/null; then $tool > "$DEST/raw-extra/$name.txt" 2>&1; fi
done
ls /sys/class/infiniband > "$DEST/raw-extra/sys_class_infiniband.txt" 2>&1
"$PY" -c 'import torch; print(torch.__version__, torch.version.cuda, torch.cuda.nccl.version())' \
  > "$DEST/raw-extra/torch-versions.txt" 2>&1

# --- Inventory: this machine as one local node ------------------------------------------------------------------
mkdir -p "$WORK/shared"
echo "localhost slots=$GPUS" > "$WORK/mpihosts"
cat > "$WORK/inventory.yml" <<INV
scc_cluster:
  hosts:
    $NODE:
      ansible_connection: local
      ansible_python_interpreter: $PY
      gpu_count: $GPUS
      rdma: false
  vars:
    scc_venv: $VENV
    scc_shared_dir: $WORK/shared
    # One GPU node without shared storage: the storage checks are reported as skipped, with the reason.
    validate_storage_check: false
    scc_mpi_hostfile: $WORK/mpihosts
    scc_env_file: $WORK/scc.env
    validate_python: $PY
    validate_nccl_conf_path: $WORK/nccl.conf
    validate_mpirun: $MPIRUN
    ib_check_nccl_conf_path: $WORK/nccl.conf
    ib_check_install_packages: false
    nccl_tests_src: $REPO/.device/nccl-tests.tar.gz
    nccl_tests_sha256: $TARSUM
    nccl_tests_version: NVIDIA/nccl-tests snapshot (.device/nccl-tests.tar.gz)
    nccl_tests_prefix: $WORK/nccl-tests
    nccl_tests_cuda_home: $CUDA_HOME
    nccl_tests_venv: $VENV
    nccl_tests_mpi: $MPI
    nccl_tests_make_jobs: $JOBS
    nccl_tests_build_packages: []
INV
cat > "$WORK/ib_check.yml" <<'PB'
- name: RDMA facts and NCCL settings (TCP fallback where there is no RDMA)
  hosts: scc_cluster
  gather_facts: false
  tasks:
    - name: Run the ib_check role
      ansible.builtin.include_role:
        name: scc.nlp_training.ib_check
PB

# --- 1. ib_check ------------------------------------------------------------------------------------------------
log "1/3 ib_check"
ansible-playbook $SUDO -i "$WORK/inventory.yml" "$WORK/ib_check.yml" > "$DEST/ansible-ib_check.log" 2>&1
log "ib_check exit $? ($(grep -h -o 'no RDMA devices, NCCL will use TCP over [A-Za-z0-9_.:-]*' "$DEST/ansible-ib_check.log" | head -1))"
cp "$WORK/nccl.conf" "$DEST/raw-extra/nccl.conf" 2>/dev/null

# --- 2. validate ------------------------------------------------------------------------------------------------
log "2/3 playbooks/validate.yml (builds nccl-tests on the first run: a few minutes)"
T0=$(date +%s)
ansible-playbook $SUDO -i "$WORK/inventory.yml" "$REPO/playbooks/validate.yml" \
  -e "validate_report_dir=$DEST" -e validate_merge_report=false > "$DEST/ansible-validate.log" 2>&1
PLAY_RC=$?
log "validate.yml exit $PLAY_RC after $(( $(date +%s) - T0 )) s (log: gates/ansible-validate.log)"
grep -E '^(fatal|failed):' "$DEST/ansible-validate.log" | cut -c1-400 | head -5
"$PY" -m sccnlp.commands.validate --from-fragments --report-dir "$DEST" | tee "$DEST/summary.txt"
RC=${PIPESTATUS[0]}
log "report: gates/report.json gates/report.html (summary exit $RC)"

# --- 3. a floor that must fail ----------------------------------------------------------------------------------
if [ "${GATES_SKIP_FAILING:-0}" != 1 ]; then
  log "3/3 failing floor: gemm_bf16_tflops >= 100000 (quick gates, no nccl-tests rebuild)"
  FAIL_DIR=$DEST/failing-floor
  mkdir -p "$FAIL_DIR"
  ansible-playbook $SUDO -i "$WORK/inventory.yml" "$REPO/playbooks/validate.yml" -e "validate_report_dir=$FAIL_DIR" \
    -e validate_merge_report=false -e validate_gpu_quick=true -e validate_nccl=false \
    -e '{"validate_floors_override": {"gpu": {"H200": {"gemm_bf16_tflops": 100000}, "H100": {"gemm_bf16_tflops": 100000}, "A100": {"gemm_bf16_tflops": 100000}}}}' \
    > "$FAIL_DIR/ansible-validate.log" 2>&1
  log "failing-floor validate.yml exit $? (expected non-zero)"
  "$PY" -m sccnlp.commands.validate --from-fragments --report-dir "$FAIL_DIR" > "$FAIL_DIR/summary.txt"
  FRC=$?
  if grep -q "$NODE: gemm_bf16_tflops [0-9.]* < floor 100000" "$FAIL_DIR/summary.txt" "$FAIL_DIR/ansible-validate.log" && [ "$FRC" = 1 ]; then
    log "PROOF failing floor: $(grep -h -o "$NODE: gemm_bf16_tflops [0-9.]* < floor 100000" "$FAIL_DIR/ansible-validate.log" | head -1) (summary exit $FRC)"
  else
    log "PROOF failing floor NOT shown (summary exit $FRC); see gates/failing-floor/"
  fi
fi
exit "$RC"
