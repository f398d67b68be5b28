#!/usr/bin/env bash
# Prepare, on the build machine, everything the device check (scripts/device/check_all.sh) carries to a GPU machine
# that has no network. Run from the repository root after `make bootstrap`:
#   bash scripts/device/pack.sh            # then carry .whl and .device (device tool: carry: [".whl", ".device"])
# Fills (both folders are git-ignored):
#   .whl/                 ansible-core (requirements/ci.txt's pin) and the dependencies a GPU image with a PyTorch
#                         venv lacks (resolvelib, cryptography, cffi, pycparser, python-debian; torchao for the
#                         trainer's --precision fp8), for CPython 3.12 on x86-64; DEVICE_PY=3.11 etc. for another
#                         node Python
#   .whl/python_apt-*.whl the Python bindings of apt (ansible.builtin.apt needs them) built for that Python from
#                         Debian's python-apt source package, for GPU images without python3-apt (Ubuntu server
#                         ships it; the lent machines' image does not): needs pyenv's Python $DEVICE_PY
#   .device/collections/  the collections galaxy.yml declares, as tarballs built offline from the pinned `ansible`
#                         package (python -m sccnlp.bundle.collections)
#   .device/corpus.txt.gz the demo corpus (Debian's python3-doc, unpacked here, not installed; the first
#                         CORPUS_MB=8 MB of text) for the BERT run through the role path
#   .device/nccl-tests.tar.gz   a snapshot of NVIDIA/nccl-tests: made from NCCL_TESTS_GIT=<a clone> (git archive of its
#                         HEAD) when missing; the validate role builds it there against the venv's NCCL
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${DEVICE_PY:-3.12}
pin() { grep -iE "^$1==" requirements/ci.txt | head -1; }
want=("$(pin ansible-core)" "$(pin resolvelib)" "$(pin cryptography)" "$(pin cffi)" "$(pin pycparser)"
      "$(pin torchao)" "python-debian==${PYTHON_DEBIAN_VERSION:-1.0.1}")
for w in "${want[@]}"; do [[ $w == *==* ]] || { echo "pack: requirements/ci.txt pins no ${w:-a package} (${want[*]})" >&2; exit 2; }; done
rm -rf .whl && mkdir -p .whl .device/collections
.venv/bin/python -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
  --python-version "$PY" --implementation cp --abi "cp${PY/./}" --abi abi3 --abi none \
  --platform manylinux_2_34_x86_64 --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 --platform any -d .whl "${want[@]}"
# python-apt: the source package through a private deb-src list made from this machine's own sources.
pyenv_py=$(printf '%s\n' "$HOME"/.pyenv/versions/"$PY".*/bin/python | grep -v "\*" | sort -V | tail -1)
[ -n "$pyenv_py" ] || { echo "pack: no Python $PY under pyenv to build python-apt for" >&2; exit 2; }
apt_tmp=$(mktemp -d); chmod 755 "$apt_tmp"
mkdir -p "$apt_tmp/parts" "$apt_tmp/lists/partial" "$apt_tmp/src"
for f in /etc/apt/sources.list.d/*.sources; do
  [ -f "$f" ] && sed 's/^Types: deb$/Types: deb-src/' "$f" >"$apt_tmp/parts/$(basename "$f")"
done
src_opts=(-o "Dir::Etc::SourceParts=$apt_tmp/parts" -o Dir::Etc::SourceList=/dev/null -o "Dir::State::Lists=$apt_tmp/lists")
dpkg-query -W -f='${Status}' libapt-pkg-dev 2>/dev/null | grep -q "ok installed" \
  || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libapt-pkg-dev >/dev/null
apt-get "${src_opts[@]}" update -qq >/dev/null 2>&1
chmod 777 "$apt_tmp/src"
(cd "$apt_tmp/src" && apt-get "${src_opts[@]}" source -qq python-apt >/dev/null 2>&1) \
  || { echo "pack: apt-get source python-apt failed" >&2; exit 2; }
"$pyenv_py" -m venv "$apt_tmp/venv" && "$apt_tmp/venv/bin/pip" install -q --disable-pip-version-check setuptools wheel
src_dir=$(ls -d "$apt_tmp"/src/python-apt-*/)
(cd "$src_dir" && DEBVER=$(basename "$src_dir" | sed 's/^python-apt-//') "$apt_tmp/venv/bin/python" setup.py -q bdist_wheel \
  >"$apt_tmp/build.log" 2>&1) || { echo "pack: building python-apt failed ($apt_tmp/build.log)" >&2; exit 2; }
cp "$src_dir"/dist/python_apt-*.whl .whl/
rm -rf "$apt_tmp"
rm -f .device/collections/*.tar.gz
.venv/bin/python -m sccnlp.bundle.collections "$PWD/.device/collections" >/dev/null
if [ ! -s .device/nccl-tests.tar.gz ]; then
  [ -n "${NCCL_TESTS_GIT:-}" ] || { echo "pack: .device/nccl-tests.tar.gz missing: set NCCL_TESTS_GIT to a clone of NVIDIA/nccl-tests" >&2; exit 2; }
  git --git-dir "$NCCL_TESTS_GIT" archive --format=tar.gz --prefix=nccl-tests/ HEAD >.device/nccl-tests.tar.gz
fi
if [ ! -s .device/corpus.txt.gz ]; then
  tmp=$(mktemp -d)
  # python3-doc and the versioned package holding the HTML (python3.11-doc), unpacked only
  mapfile -t docs < <(echo python3-doc; apt-cache depends python3-doc | awk '$1 == "Depends:" {print $2}')
  chmod 777 "$tmp"
  (cd "$tmp" && apt-get download -q "${docs[@]}" >/dev/null 2>&1) || { echo "pack: apt-get download ${docs[*]} failed" >&2; exit 2; }
  for deb in "$tmp"/*.deb; do dpkg-deb -x "$deb" "$tmp/root"; done
  .venv/bin/python -m sccnlp.node.bert.corpus build --from-debian-docs --package python3-doc --root "$tmp/root" \
    --max-mb "${CORPUS_MB:-8}" "$tmp/corpus.txt" >/dev/null
  gzip -9n <"$tmp/corpus.txt" >.device/corpus.txt.gz
  rm -rf "$tmp"
fi
echo "pack: .whl:" .whl/*.whl
echo "pack: .device:" .device/collections/*.tar.gz .device/nccl-tests.tar.gz .device/corpus.txt.gz
du -sh .whl .device | tr '\n' ' '; echo
