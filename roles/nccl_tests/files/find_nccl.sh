#!/bin/sh
# Print "INCLUDE_DIR LIB_FILE" of the NCCL to build against: NCCL_HOME if given, else the system paths, else the
# pip wheel (nvidia-nccl-cu12 / -cu13: site-packages/nvidia/nccl/{include,lib} or nvidia/cu13/...) of a venv.
# Usage: find_nccl.sh NCCL_HOME_OR_EMPTY VENV [SYSTEM_PREFIXES]   (prefixes default: "/usr /usr/local /usr/local/nccl")
home="$1"; venv="$2"; prefixes="${3:-/usr /usr/local /usr/local/nccl}"
# shellcheck disable=SC2086  # the prefixes are a word list
for dir in ${home:+"$home"} $prefixes; do
  if [ -f "$dir/include/nccl.h" ]; then
    for lib in "$dir/lib/libnccl.so" "$dir/lib64/libnccl.so" "$dir/lib/x86_64-linux-gnu/libnccl.so" \
               "$dir/lib/aarch64-linux-gnu/libnccl.so" "$dir/lib/libnccl.so.2"; do
      if [ -e "$lib" ]; then echo "$dir/include $lib"; exit 0; fi
    done
  fi
done
if [ -d "$venv" ]; then
  header=$(find -H "$venv" -path '*nvidia*' -name nccl.h 2>/dev/null | sort | head -n 1)
  lib=$(find -H "$venv" -path '*nvidia*' -name 'libnccl.so*' 2>/dev/null | sort | head -n 1)
  if [ -n "$header" ] && [ -n "$lib" ]; then echo "$(dirname "$header") $lib"; exit 0; fi
fi
echo "no NCCL found (nccl.h + libnccl.so) under ${home:+$home }$prefixes or the pip wheel in $venv" >&2
exit 1
