#!/usr/bin/env bash
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
#
# On a machine WITH registry access: download the offline wheel set that tests/gpu/run_on_gpu.sh installs on an
# air-gapped GPU host (Python 3.12, manylinux x86_64, torch 2.11.0+cu130 preinstalled there), and cut it into tar
# parts small enough for a size-limited transfer. See tests/gpu/README.md.
#
#   tests/gpu/prepare_wheels.sh [OUT]          # default OUT: ./gpu-wheels
#
# Writes OUT/wheels-0.22.0/*.whl, OUT/wheels-0.20.1-extra/*.whl and OUT/parts-0.22.0/wheels-0.22.0.tar.part-NN,
# OUT/parts-0.20.1/wheels-0.20.1-extra.tar.part-NN. On the GPU host either copy the wheel folders and set
# WHEELHOUSE / WHEELHOUSE_020, or copy the parts and set PARTS_DIR / PARTS_DIR_020.
#
# Environment:
#   PART_SIZE   size of one part, as split(1) takes it                              [60M]
#   RESOLVE     1: resolve vLLM 0.22.0's dependencies again with uv (needs `uv`) instead of the pinned
#               wheels-0.22.0.txt, leaving out the names in image-packages.txt       [0]
#   WITH_020    0: skip the vLLM 0.20.1 extra set (step 5)                           [1]
#   PIP         the pip to download with                                             [python3 -m pip]
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
OUT="${1:-./gpu-wheels}"
PART_SIZE="${PART_SIZE:-60M}"
RESOLVE="${RESOLVE:-0}"
WITH_020="${WITH_020:-1}"
read -r -a PIP <<< "${PIP:-python3 -m pip}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"

# The GPU host's interpreter and platform, whatever this machine is (pip matches manylinux_2_N exactly: list them).
PLATFORM_ARGS=(--python-version 3.12 --implementation cp --only-binary=:all: --no-deps)
for n in $(seq 5 39); do PLATFORM_ARGS+=(--platform "manylinux_2_${n}_x86_64"); done
PLATFORM_ARGS+=(--platform manylinux2014_x86_64 --platform manylinux1_x86_64 --platform linux_x86_64)

pins_022="$HERE/wheels-0.22.0.txt"
if [ "$RESOLVE" = 1 ]; then
    # Resolve for the GPU host's platform, then drop what its image already has and what the tiny run never loads.
    printf 'vllm==0.22.0\ntorch==2.11.0\n' > "$OUT/requirements-0.22.0.in"
    uv pip compile "$OUT/requirements-0.22.0.in" --python-version 3.12 --python-platform x86_64-manylinux_2_28 \
        --no-header --no-annotate -o "$OUT/resolved-0.22.0.txt"
    python3 - "$HERE/image-packages.txt" "$OUT/resolved-0.22.0.txt" "$OUT/wheels-0.22.0.txt" <<'EOF'
import re
import sys

def norm(name):
    return re.sub(r"[-_.]+", "-", name).lower()

image = set(norm(line.strip()) for line in open(sys.argv[1]) if line.strip() and not line.startswith("#"))
skip = {"flashinfer-cubin", "nvidia-cuda-nvcc", "nvidia-nvvm", "nvidia-cutlass-dsl-libs-cu13"}
pins = [line.strip() for line in open(sys.argv[2]) if "==" in line]
keep = [p for p in pins if norm(p.split("==")[0]) not in image | skip]
keep += ["ansible-core==2.19.14", "resolvelib==1.2.1", "flash-attn-4==4.0.0b12"]
open(sys.argv[3], "w").write("\n".join(keep) + "\n")
print("%d resolved, %d to carry" % (len(pins), len(keep)))
EOF
    pins_022="$OUT/wheels-0.22.0.txt"
fi

download() {  # download <pins file> <dest>
    mkdir -p "$2"
    grep -v '^#' "$1" | grep . > "$2.req"
    "${PIP[@]}" download -q "${PLATFORM_ARGS[@]}" -d "$2" -r "$2.req"
    rm -f "$2.req"
}

split_parts() {  # split_parts <wheel dir> <parts dir> <name>
    rm -rf "$2"
    mkdir -p "$2"
    (cd "$1" && tar -cf - ./*.whl) | split -b "$PART_SIZE" -d -a 2 - "$2/$3.tar.part-"
}

download "$pins_022" "$OUT/wheels-0.22.0"
split_parts "$OUT/wheels-0.22.0" "$OUT/parts-0.22.0" wheels-0.22.0
if [ "$WITH_020" = 1 ]; then
    download "$HERE/wheels-0.20.1-extra.txt" "$OUT/wheels-0.20.1-extra"
    split_parts "$OUT/wheels-0.20.1-extra" "$OUT/parts-0.20.1" wheels-0.20.1-extra
fi
du -sh "$OUT"/wheels-* "$OUT"/parts-*
ls "$OUT"/parts-*
