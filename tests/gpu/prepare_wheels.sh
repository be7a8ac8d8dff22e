#!/usr/bin/env bash
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
#
# On a machine WITH registry access: download the offline wheel set that tests/gpu/run_on_gpu.sh installs on an
# air-gapped GPU host (Python 3.12, manylinux x86_64, torch 2.11.0+cu130 preinstalled there), and cut it into tar
# parts small enough for a size-limited transfer. See tests/gpu/README.md.
#
#   tests/gpu/prepare_wheels.sh [OUT]                          # default OUT: ./gpu-wheels
#   VLLM_VERSION=0.26.0 tests/gpu/prepare_wheels.sh [OUT]      # run 3's set (issue 16), no 0.20.1 extra set
#   VLLM_VERSION=0.32.0 tests/gpu/prepare_wheels.sh [OUT]      # run 4's set: vLLM 0.32.0 + torch 2.13.0 (DFlash2)
#
# Writes OUT/wheels-$VLLM_VERSION/*.whl, OUT/wheels-0.20.1-extra/*.whl and
# OUT/parts-$VLLM_VERSION/wheels-$VLLM_VERSION.tar.part-NN, OUT/parts-0.20.1/wheels-0.20.1-extra.tar.part-NN.
# On the GPU host either copy the wheel folders and set WHEELHOUSE / WHEELHOUSE_020, or copy the parts and set
# PARTS_DIR / PARTS_DIR_020 (and VLLM_VERSION for run_on_gpu.sh).
#
# Environment:
#   VLLM_VERSION  the vLLM of the main set: wheels-$VLLM_VERSION.txt pins it        [0.22.0]
#   PART_SIZE   size of one part, as split(1) takes it                              [60M]
#   RESOLVE     1: resolve vLLM $VLLM_VERSION's dependencies again with uv (needs `uv`) instead of the pinned
#               wheels-$VLLM_VERSION.txt, leaving out the names in image-packages.txt  [0]
#   TORCH       the torch that RESOLVE pins beside vLLM (the GPU host's)            [2.11.0]
#   WITH_020    0: skip the vLLM 0.20.1 extra set (step 5)                 [1 with 0.22.0, else 0]
#   PIP         the pip to download with                                             [python3 -m pip]
#   PINS_FILE   the pins to download instead of wheels-$VLLM_VERSION.txt (ct/make_parts.sh's wheelhouse)
#   SPLIT       0: only download, no parts                                          [1]
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
OUT="${1:-./gpu-wheels}"
PART_SIZE="${PART_SIZE:-60M}"
RESOLVE="${RESOLVE:-0}"
VLLM_VERSION="${VLLM_VERSION:-0.22.0}"
TORCH="${TORCH:-2.11.0}"
if [ "$VLLM_VERSION" = 0.22.0 ]; then WITH_020="${WITH_020:-1}"; else WITH_020="${WITH_020:-0}"; fi
V="$VLLM_VERSION"
read -r -a PIP <<< "${PIP:-python3 -m pip}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"

# The GPU host's interpreter and platform, whatever this machine is (pip matches manylinux_2_N exactly: list them).
PLATFORM_ARGS=(--python-version 3.12 --implementation cp --only-binary=:all: --no-deps)
for n in $(seq 5 39); do PLATFORM_ARGS+=(--platform "manylinux_2_${n}_x86_64"); done
PLATFORM_ARGS+=(--platform manylinux2014_x86_64 --platform manylinux1_x86_64 --platform linux_x86_64)

pins_main="${PINS_FILE:-$HERE/wheels-$V.txt}"
if [ "$RESOLVE" = 1 ]; then
    # Resolve for the GPU host's platform, then drop what its image already has and what the tiny run never loads.
    printf 'vllm==%s\ntorch==%s\n' "$V" "$TORCH" > "$OUT/requirements-$V.in"
    uv pip compile "$OUT/requirements-$V.in" --python-version 3.12 --python-platform x86_64-manylinux_2_28 \
        --no-header --no-annotate -o "$OUT/resolved-$V.txt"
    python3 - "$HERE/image-packages.txt" "$OUT/resolved-$V.txt" "$OUT/wheels-$V.txt" "$V" "$TORCH" <<'EOF'
import re
import sys

def norm(name):
    return re.sub(r"[-_.]+", "-", name).lower()

image = set(norm(line.strip()) for line in open(sys.argv[1]) if line.strip() and not line.startswith("#"))
skip = {"flashinfer-cubin", "nvidia-cuda-nvcc", "nvidia-nvvm"}
if sys.argv[4] == "0.22.0":
    skip |= {"nvidia-cutlass-dsl-libs-cu13"}  # run 1 served without it (cutlass-dsl 4.5.2)
else:
    # cutlass-dsl 4.6+ keeps its compiled IR in the CUDA flavour wheels: keep cu13, drop cu12. The rest is
    # imported lazily or behind a find_spec check by vLLM 0.26.0 (MLA kernels, tilelang, video decoders).
    skip |= {"nvidia-cutlass-dsl-libs-cu12", "tilelang", "z3-solver", "tokenspeed-mla", "tokenspeed-triton",
             "pynvvideocodec", "torchcodec"}
# Another torch than the image's 2.11.0 (vLLM >= 0.27 pins 2.13.0): carry it and what it cannot take from the image
# (run 4: triton, torchvision, NCCL; the image's cuDNN, cuBLAS, cuSPARSELt, nvJitLink stay: same major version).
if sys.argv[5] != "2.11.0":
    image -= {"torch", "triton", "torchvision", "nvidia-nccl-cu13"}
pins = [line.strip() for line in open(sys.argv[2]) if "==" in line]
# cuda-python 12.x (what uv picks for vLLM 0.32.0) would bring CUDA 12 bindings: take the metapackage over the image's
# cuda-bindings 13.4.4 instead.
pins = ["cuda-python==13.4.4" if p.startswith("cuda-python==12.") else p for p in pins]
keep = [p for p in pins if norm(p.split("==")[0]) not in image | skip]
keep += ["ansible-core==2.19.14", "resolvelib==1.2.1"]
if sys.argv[5] == "2.11.0":
    keep += ["flash-attn-4==4.0.0b12"]  # step 1 (runs 1 and 3)
open(sys.argv[3], "w").write("\n".join(keep) + "\n")
print("%d resolved, %d to carry" % (len(pins), len(keep)))
EOF
    pins_main="$OUT/wheels-$V.txt"
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

download "$pins_main" "$OUT/wheels-$V"
[ "${SPLIT:-1}" = 0 ] || split_parts "$OUT/wheels-$V" "$OUT/parts-$V" "wheels-$V"
if [ "$WITH_020" = 1 ]; then
    download "$HERE/wheels-0.20.1-extra.txt" "$OUT/wheels-0.20.1-extra"
    [ "${SPLIT:-1}" = 0 ] || split_parts "$OUT/wheels-0.20.1-extra" "$OUT/parts-0.20.1" wheels-0.20.1-extra
fi
du -sh "$OUT"/wheels-*/
[ "${SPLIT:-1}" = 0 ] || ls "$OUT"/parts-*
