#!/usr/bin/env bash
# Produce a python_env lock (constraints) file from pins with `uv pip compile`.
#   scripts/lock-vllm.sh OUT.lock.txt 'vllm==0.20.1' [more requirements...]
# Resolved for the managed nodes' platform (Debian bookworm: CPython 3.11,
# x86_64 manylinux_2_28). flash-attn is not in the lock: it is built or taken
# from a wheelhouse after torch (python_env_flash_attn_wheel, python_env_find_links
# and python_env_flash_attn_source_build in roles/python_env/README.md).
set -euo pipefail
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0;; esac
out="$1"; shift
tmp="$(mktemp)"; trap 'rm -f "$tmp"' EXIT
printf '%s\n' "$@" wheel packaging ninja psutil > "$tmp"
UV_NATIVE_TLS=1 "${UV:-uv}" pip compile "$tmp" -o "$out" --python-version 3.11 \
  --python-platform x86_64-manylinux_2_28 --no-header --no-annotate ${LOCK_EXTRA_ARGS:-}
sed -i "1i # python_env lock for: $* (+ flash-attn build requirements)\n# regenerate: scripts/lock-vllm.sh $(basename "$out") $*" "$out"
echo "wrote $out ($(grep -c '==' "$out") pins)"
