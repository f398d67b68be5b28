# shellcheck shell=bash
# Sourced by every device step (scripts/device/*.sh) on a GPU node without network: Ansible from the wheels in
# .whl/, the collections galaxy.yml declares from .device/collections/ (both made by scripts/device/pack.sh on the
# build machine), this checkout as scc.nlp_training in a private collections path, and the settings every step uses.
# Sets REPO, DEVICE_PY (the Python that runs Ansible and the gates: the PyTorch venv's), DEVICE_COLL.
device_setup() {
  REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
  DEVICE_PY=${DEVICE_PYTHON:-$(command -v python3)}
  if ! "$DEVICE_PY" -c 'import torch' 2>/dev/null && [ -x /opt/torch/.venv/bin/python3 ]; then
    DEVICE_PY=/opt/torch/.venv/bin/python3
  fi
  ls "$REPO"/.whl/*.whl >/dev/null 2>&1 || { echo "device: .whl/ is empty: run scripts/device/pack.sh on the build machine and carry .whl" >&2; return 2; }
  ls "$REPO"/.device/collections/*.tar.gz >/dev/null 2>&1 \
    || { echo "device: .device/collections/ is empty: run scripts/device/pack.sh and carry .device" >&2; return 2; }
  local site=/tmp/scc-device-site
  if [ ! -f "$site/.done" ]; then
    "$DEVICE_PY" -m pip install -q --no-index --no-deps --no-compile --disable-pip-version-check --target "$site" \
      "$REPO"/.whl/*.whl || { echo "device: offline install of .whl/*.whl failed" >&2; return 2; }
    touch "$site/.done"
  fi
  export PYTHONPATH=$site${PYTHONPATH:+:$PYTHONPATH} PATH=$site/bin:$PATH
  DEVICE_COLL=/tmp/scc-device-collections
  if [ ! -f "$DEVICE_COLL/.done" ]; then
    mkdir -p "$DEVICE_COLL"
    printf '[defaults]\n' >"$DEVICE_COLL/ansible.cfg"
    ANSIBLE_CONFIG=$DEVICE_COLL/ansible.cfg ansible-galaxy collection install --offline -p "$DEVICE_COLL" \
      "$REPO"/.device/collections/*.tar.gz >/dev/null || { echo "device: installing .device/collections failed" >&2; return 2; }
    touch "$DEVICE_COLL/.done"
  fi
  mkdir -p "$DEVICE_COLL/ansible_collections/scc" /tmp/scc-ansible-tmp
  ln -sfn "$REPO" "$DEVICE_COLL/ansible_collections/scc/nlp_training"
  export ANSIBLE_COLLECTIONS_PATH=$DEVICE_COLL ANSIBLE_CONFIG=$REPO/ansible.cfg ANSIBLE_NOCOLOR=1 ANSIBLE_FORCE_COLOR=0
  export ANSIBLE_LOCALHOST_WARNING=0 ANSIBLE_INVENTORY_UNPARSED_WARNING=0 ANSIBLE_RETRY_FILES_ENABLED=0
  export ANSIBLE_LOCAL_TEMP=/tmp/scc-ansible-tmp ANSIBLE_REMOTE_TEMP=/tmp/scc-ansible-tmp
  export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
  export DEVICE_PY
}
