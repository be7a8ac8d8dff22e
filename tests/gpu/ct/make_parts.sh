#!/usr/bin/env bash
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
#
# Every part the roles' GPU proof carries to the device machine (tests/gpu/README.md, "The roles on the H200"), from a
# fresh clone, as root on a Debian machine that reaches Debian's registry and PyPI:
#   bash tests/gpu/ct/make_parts.sh
# It installs what it needs (debootstrap, xz-utils, git, python3-pip), then writes under the git-ignored .gpu-parts/:
#   cache/rootfs.tar.xz     the container's rootfs (build_rootfs.sh; kept for the next run, REBUILD=1 makes it again)
#   cache/wheels-0.26.0/    the wheelhouse: ../wheels-0.26.0.txt less flash-attn-4, plus wheels-ct-extra.txt
#   cache/wheels-0.26.0.tar, cache/code.tar.gz (git archive HEAD: commit your changes first)
#   c00/ c01/ ...           one folder per device call: parts of at most PART_MIB MiB, each folder under the
#                           transfer limit together with the repository's own files
#   SHA256SUMS              every carried file (checked here, and on the device before anything is unpacked)
#   device-calls.txt        the device calls, in order (also printed at the end)
# Environment: PART_MIB (50), LIMIT_MIB (64: what one call carries), MARGIN_MIB (4), REBUILD (0).
set -euo pipefail
case "${1:-}" in -h|--help) sed -n '5,/^[^#]/s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0;; esac
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../../.." && pwd)"
P="$ROOT/.gpu-parts"; C="$P/cache"; V=0.26.0
[ "$(id -u)" = 0 ] || { echo "make_parts.sh: run as root (debootstrap and chroot build the container's rootfs)" >&2; exit 2; }
t0=$SECONDS; step() { echo "== $* ($((SECONDS-t0)) s)"; }

need=()
for pkg in debootstrap xz-utils git; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || need+=("$pkg")
done
python3 -m pip --version >/dev/null 2>&1 || need+=(python3-pip)
if [ "${#need[@]}" -gt 0 ]; then
  step "apt-get install ${need[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
mkdir -p "$C"

if [ "${REBUILD:-0}" = 1 ] || [ ! -s "$C/rootfs.tar.xz" ]; then
  step "rootfs: Debian trixie with debootstrap (tests/gpu/ct/build_rootfs.sh)"
  bash "$HERE/build_rootfs.sh" "$C/rootfs.tar.xz.new" && mv "$C/rootfs.tar.xz.new" "$C/rootfs.tar.xz"
else
  step "rootfs: $C/rootfs.tar.xz kept from an earlier run (REBUILD=1 builds it again)"
fi

step "wheels: ../wheels-$V.txt less flash-attn-4, plus wheels-ct-extra.txt (pip download, Python 3.12 manylinux)"
{ grep -v '^#' "$HERE/../wheels-$V.txt" | grep . | grep -v '^flash-attn-4=='
  grep -v '^#' "$HERE/wheels-ct-extra.txt" | grep .; } > "$C/wheelhouse-$V.txt"
rm -rf "$C/wheels-$V"
VLLM_VERSION=$V PINS_FILE="$C/wheelhouse-$V.txt" SPLIT=0 bash "$HERE/../prepare_wheels.sh" "$C"
pins=$(wc -l < "$C/wheelhouse-$V.txt"); got=$(find "$C/wheels-$V" -name '*.whl' | wc -l)
[ "$pins" = "$got" ] || { echo "make_parts.sh: $got wheels for $pins pins in $C/wheelhouse-$V.txt" >&2; exit 1; }
# The same bytes for the same wheels: a re-run gives the same manifest.
(cd "$C/wheels-$V" && tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -cf "$C/wheels-$V.tar" -- *.whl)
git -C "$ROOT" archive --format=tar.gz -o "$C/code.tar.gz" HEAD
echo "$pins wheels ($(du -h "$C/wheels-$V.tar" | cut -f1)), rootfs $(du -h "$C/rootfs.tar.xz" | cut -f1)," \
  "code.tar.gz of $(git -C "$ROOT" rev-parse --short HEAD) ($(du -h "$C/code.tar.gz" | cut -f1))"

step "parts, folders, manifest, device calls"
python3 "$HERE/parts.py" "$P" --split "$C/rootfs.tar.xz" "$C/wheels-$V.tar" --whole "$C/code.tar.gz" \
  --part-mib "${PART_MIB:-50}" --limit-mib "${LIMIT_MIB:-64}" --margin-mib "${MARGIN_MIB:-4}"
step "done: the calls are in $P/device-calls.txt"
