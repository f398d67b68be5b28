#!/usr/bin/env bash
# NVIDIA's packages installed by the roles, for real, on a GPU machine without network (run from the repository
# root, as root; results in $OUT/package/):
#   1. the machine's CUDA toolkit, NCCL and cuDNN packages (from NVIDIA's repository) and the installed NVIDIA
#      packages they pull in are repacked into a local flat apt repository (python -m sccnlp.bundle.repack), signed
#      with a throwaway key: it stands in for NVIDIA's repository (cuda/nccl/cudnn_repo_url, _repo_key_src);
#   2. those packages are removed (never the driver or its libraries: the GPU keeps working), with every other
#      apt source set aside, so only that repository can serve them;
#   3. playbooks/gpu_stack.yml with cuda/nccl/cudnn_method=package installs them back, pinned and held: run 1, run 2
#      (changed=0), --check (changed=0), and a V100 + CUDA 13 plan that must be refused;
#   4. the pinned versions installed and held, nvcc builds and runs a kernel on the GPU (role cuda's verify), the NCCL
#      and cuDNN the stack loads are the pinned ones (the roles' verify), then the machine is put back: the packages
#      the roles do not manage reinstalled from the same repository, holds released, sources restored.
set -uo pipefail
# shellcheck source=scripts/device/lib.sh
. "$(dirname "$0")/lib.sh"
device_setup || exit 2
cd "$REPO" || exit 2
D=${OUT:-/tmp/out}/package
W=/tmp/scc-package-path
NVREPO=$W/repo
rm -rf "$W"; mkdir -p "$D" "$W"
export DEBIAN_FRONTEND=noninteractive ANSIBLE_CALLBACK_RESULT_FORMAT=json
log() { printf '[package %s] %s\n' "$(date -u +%H:%M:%S)" "$*" | tee -a "$D/steps.txt"; }
die() { log "ERROR: $*"; exit 1; }
ver() { dpkg-query -W -f='${Version}' "$1" 2>/dev/null; }

first() { dpkg-query -W -f='${Package} ${Status}\n' "$1" 2>/dev/null | awk '/ installed$/ {print $1}' | sort -V | tail -1; }
# CUDA: the toolkit's meta-package where it is installed, else the parts of it that are (compiler, libraries, tools).
CUDA_META=$(first 'cuda-toolkit-[0-9]*-[0-9]*' | grep -E '^cuda-toolkit-[0-9]+-[0-9]+$')
if [ -n "$CUDA_META" ]; then CUDA_PKGS=("$CUDA_META"); else
  mapfile -t CUDA_PKGS < <(dpkg-query -W -f='${Package} ${db:Status-Abbrev}\n' 'cuda-compiler-*' 'cuda-libraries-*' \
    'cuda-command-line-tools-*' 'cuda-minimal-build-*' 2>/dev/null | awk '$2 ~ /^[ih]i/ {print $1}' | sort)
fi
NCCL_PKG=${NCCL_PKG:-libnccl2}
CUDNN_PKG=${CUDNN_PKG:-$(first 'libcudnn9-cuda-*')}
for p in "${CUDA_PKGS[0]:-}" "$NCCL_PKG" "$CUDNN_PKG"; do
  if [ -z "$p" ] || [ -z "$(ver "$p")" ]; then
    die "not installed from packages here: ${p:-a cuda-toolkit-X-Y / cuda-compiler-X-Y / libcudnn9-cuda-X package} (dpkg -l | grep -E 'cuda|nccl|cudnn')"
  fi
done
CUDA_PKG=${CUDA_PKGS[0]}
CUDA_VER=$(ver "$CUDA_PKG") NCCL_VER=$(ver "$NCCL_PKG") CUDNN_VER=$(ver "$CUDNN_PKG")
for p in "${CUDA_PKGS[@]}"; do [ "$(ver "$p")" = "$CUDA_VER" ] || die "$p is at $(ver "$p"), not $CUDA_VER like $CUDA_PKG"; done
CUDA_MM=$(echo "$CUDA_PKG" | sed -E 's/^.*-([0-9]+)-([0-9]+)$/\1.\2/')
log "packages: ${CUDA_PKGS[*]}=$CUDA_VER $NCCL_PKG=$NCCL_VER $CUDNN_PKG=$CUDNN_VER (CUDA $CUDA_MM)"

# 1. The removal set: what apt removes with the three (reverse dependencies too), never a driver package.
DRIVER_RE=$("$DEVICE_PY" -c 'import sys; sys.path.insert(0, sys.argv[1]); from sccnlp.bundle.repack import DRIVER; print(DRIVER)' "$REPO")
# Held dependents (NVIDIA's images hold libnccl-dev, libcudnn9-dev-*, ...) block the resolver: every hold but the
# driver's is released for the removal and put back in step 4.
apt-mark showhold >"$D/holds-before.txt"
grep -vE "$DRIVER_RE" "$D/holds-before.txt" | xargs -r apt-mark unhold >/dev/null
apt-get -s remove "${CUDA_PKGS[@]}" "$NCCL_PKG" "$CUDNN_PKG" >"$D/remove-simulation.txt" 2>&1 || die "apt-get -s remove failed (remove-simulation.txt)"
mapfile -t REMOVE < <(awk '/^Remv / {print $2}' "$D/remove-simulation.txt" | sed 's/:.*//' | sort -u)
if printf '%s\n' "${REMOVE[@]}" | grep -Eq "$DRIVER_RE"; then
  die "removing them would remove driver packages: $(printf '%s\n' "${REMOVE[@]}" | grep -E "$DRIVER_RE" | tr '\n' ' ')"
fi
log "removal set: ${#REMOVE[@]} packages"
T0=$(date +%s)
PYTHONPATH=$REPO:$PYTHONPATH "$DEVICE_PY" -m sccnlp.bundle.repack --out "$NVREPO" --maintainer nvidia "${REMOVE[@]}" \
  >"$D/repacked.txt" 2>"$D/repack.err" || die "repack failed: $(tail -3 "$D/repack.err")"
log "repacked $(wc -l <"$D/repacked.txt") packages in $(( $(date +%s) - T0 )) s ($(du -sh "$NVREPO" | cut -f1))"
# Removing only the meta-packages leaves their parts (nvcc, the libraries) installed: the whole repacked closure goes,
# and nothing apt would remove with it may be missing from the stand-in (it could not come back).
mapfile -t REMOVE < <(sed -E 's/_[^_]+_[^_]+\.deb$//' "$D/repacked.txt" | sort -u)
apt-get -s remove "${REMOVE[@]}" >"$D/remove-simulation-closure.txt" 2>&1 \
  || die "apt-get -s remove of the closure failed (remove-simulation-closure.txt)"
OUTSIDE=$(awk '/^Remv / {print $2}' "$D/remove-simulation-closure.txt" | sed 's/:.*//' | sort -u | comm -23 - <(printf '%s\n' "${REMOVE[@]}"))
[ -z "$OUTSIDE" ] || die "removing the closure would also remove packages the stand-in lacks: $(echo "$OUTSIDE" | tr '\n' ' ')"
dpkg-query -W "${REMOVE[@]}" >"$D/before.txt"
log "removal set with the parts: ${#REMOVE[@]} packages"
export GNUPGHOME=$W/gnupg; mkdir -m 700 "$GNUPGHOME"
gpg --batch --passphrase '' --quick-gen-key 'scc device check <scc-device@localhost>' ed25519 sign 1d >/dev/null 2>&1 \
  || die "gpg could not make a signing key"
gpg --batch --yes --armor --export >"$W/key.asc"
if ! gpg --batch --yes --clearsign -o "$NVREPO/InRelease" "$NVREPO/Release" \
   || ! gpg --batch --yes -abs -o "$NVREPO/Release.gpg" "$NVREPO/Release"; then
  die "signing the repository failed"
fi
KEYSUM=$(sha256sum "$W/key.asc" | cut -d' ' -f1)

# 2. Only the stand-in can serve them: other sources set aside, the packages removed.
mkdir -p "$W/sources"
for f in /etc/apt/sources.list /etc/apt/sources.list.d/*; do [ -f "$f" ] && mv "$f" "$W/sources/$(echo "$f" | tr / _)"; done
restore_sources() { for f in "$W"/sources/*; do [ -f "$f" ] && mv "$f" "$(basename "$f" | tr _ /)"; done; }
trap restore_sources EXIT
apt-get remove -y --allow-change-held-packages "${REMOVE[@]}" >"$D/remove.log" 2>&1 || die "apt-get remove failed (remove.log)"
nvidia-smi -L >/dev/null 2>&1 || die "the GPU is gone after the removal (nvidia-smi)"
[ ! -x /usr/local/cuda-"$CUDA_MM"/bin/nvcc ] || die "nvcc still there after the removal"
log "removed; nvidia-smi still works; no nvcc"

# 3. The roles install them back from the stand-in.
cat >"$W/vars.yml" <<VARS
gpu_count: $(nvidia-smi -L | grep -c '^GPU ')
cuda_method: package
cuda_version: "$CUDA_MM"
cuda_packages: [$(IFS=,; echo "${CUDA_PKGS[*]}")]
cuda_package_version: "$CUDA_VER"
nccl_method: package
nccl_version: "${NCCL_VER%%-*}"
nccl_package_version: "$NCCL_VER"
cudnn_method: package
cudnn_version: "${CUDNN_VER%%-*}"
cudnn_package_version: "$CUDNN_VER"
VARS
for c in cuda nccl cudnn; do
  printf '%s_repo_url: file://%s/\n%s_repo_key_src: %s\n%s_repo_key_checksum: "sha256:%s"\n' \
    "$c" "$NVREPO" "$c" "$W/key.asc" "$c" "$KEYSUM" >>"$W/vars.yml"
done
cp "$W/vars.yml" "$D/vars.yml"
play() {  # name [args]
  local name=$1; shift
  ansible-playbook -i inventory/localhost_gpu.yml playbooks/gpu_stack.yml -e "@$W/vars.yml" "$@" >"$D/$name.log" 2>&1
  echo $? >"$D/$name.rc"
}
recap() { grep -E '^gpu-node-1 +:' "$D/$1.log" | tail -1; }
changed() { recap "$1" | sed -E 's/.*changed=([0-9]+).*/\1/'; }
T0=$(date +%s); play run1; log "run 1 rc $(cat "$D/run1.rc") in $(( $(date +%s) - T0 )) s: $(recap run1)"
T0=$(date +%s); play run2; log "run 2 rc $(cat "$D/run2.rc") in $(( $(date +%s) - T0 )) s: $(recap run2)"
T0=$(date +%s); play check --check; log "--check rc $(cat "$D/check.rc") in $(( $(date +%s) - T0 )) s: $(recap check)"
play refuse -e gpu_arch=volta
REFUSED=$(grep -o 'cuda [0-9.]* does not support gpu_arch volta[^|"]*' "$D/refuse.log" | head -1)
dpkg-query -W "${CUDA_PKGS[@]}" "$NCCL_PKG" "$CUDNN_PKG" >"$D/installed.txt" 2>&1
apt-mark showhold >"$D/holds.txt"
/usr/local/cuda-"$CUDA_MM"/bin/nvcc --version >"$D/nvcc-version.txt" 2>&1

# 4. Put the machine back: the rest of the removal set from the same repository, holds released.
apt-mark unhold "${CUDA_PKGS[@]}" "$NCCL_PKG" "$CUDNN_PKG" >/dev/null 2>&1
rm -f /etc/apt/preferences.d/scc-*
mapfile -t PINS < <(awk '{print $1"="$2}' "$D/before.txt")
apt-get install -y --allow-downgrades --allow-change-held-packages "${PINS[@]}" >"$D/restore.log" 2>&1
RESTORE_RC=$?
xargs -r apt-mark hold <"$D/holds-before.txt" >/dev/null 2>&1 || RESTORE_RC=1
dpkg-query -W "${REMOVE[@]}" >"$D/after.txt" 2>&1
restore_sources; trap - EXIT
rm -f /etc/apt/sources.list.d/scc-nvidia-cuda.sources
apt-get update -qq >/dev/null 2>&1 || true

PASS=0; FAIL=0
verdict() { local label=$1; shift; if "$@"; then echo "PASS  $label"; PASS=$((PASS+1)); else echo "FAIL  $label"; FAIL=$((FAIL+1)); fi; }
all_held() { for p in "$@"; do grep -qx "$p" "$D/holds.txt" || return 1; done; }
{
  echo "== NVIDIA packages by the roles from a local repository ($(date -u +%FT%TZ))"
  verdict "run 1 installs them (rc $(cat "$D/run1.rc"); $(recap run1))" test "$(cat "$D/run1.rc")" = 0
  verdict "pinned versions installed: $(tr '\t' '=' <"$D/installed.txt" | tr '\n' ' ')" \
    diff -q <({ for p in "${CUDA_PKGS[@]}"; do printf '%s\t%s\n' "$p" "$CUDA_VER"; done
              printf '%s\t%s\n' "$NCCL_PKG" "$NCCL_VER" "$CUDNN_PKG" "$CUDNN_VER"; } | sort) <(sort "$D/installed.txt")
  verdict "held: $(tr '\n' ' ' <"$D/holds.txt")" all_held "${CUDA_PKGS[@]}" "$NCCL_PKG" "$CUDNN_PKG"
  verdict "nvcc built a kernel and the GPU ran it: $(grep -ho 'nvcc [0-9.]* built a kernel[^"]*' "$D/run1.log" | head -1)" \
    grep -q 'built a kernel and the GPU ran it (sum 523776)' "$D/run1.log"
  verdict "the NCCL the stack loads is the pinned one: $(grep -ho 'gpu-node-1: nccl [0-9.]* loads[^"]*' "$D/run1.log" | head -1)" \
    grep -q "gpu-node-1: nccl ${NCCL_VER%%-*}" "$D/run1.log"
  verdict "the cuDNN the stack loads is the pinned one: $(grep -ho 'gpu-node-1: cudnn [0-9.]* loads[^"]*' "$D/run1.log" | head -1)" \
    grep -q "gpu-node-1: cudnn $(echo "${CUDNN_VER%%-*}" | cut -d. -f1-3)" "$D/run1.log"
  verdict "run 2 changes nothing (changed=$(changed run2))" test "$(cat "$D/run2.rc"):$(changed run2)" = 0:0
  verdict "--check changes nothing (changed=$(changed check))" test "$(cat "$D/check.rc"):$(changed check)" = 0:0
  verdict "V100 + CUDA 13 refused: ${REFUSED:-no message}" test "$(cat "$D/refuse.rc")" != 0 -a -n "$REFUSED"
  verdict "machine put back (restore rc $RESTORE_RC): the removal set at its versions again" diff -q "$D/before.txt" "$D/after.txt"
  echo "-- $PASS passed, $FAIL failed"
  echo "-- first error: $(grep -m1 -hE '^fatal|ERROR' "$D/run1.log" "$D/run2.log" "$D/check.log" 2>/dev/null | cut -c1-300)"
} >"$D/summary.txt"
cat "$D/summary.txt"
[ "$FAIL" = 0 ]
