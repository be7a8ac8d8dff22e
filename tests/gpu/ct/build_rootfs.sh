#!/usr/bin/env bash
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
#
# On a machine WITH Debian's registry: the root filesystem of the systemd container that stands in for a Proxmox CT
# on the GPU host (tests/gpu/README.md, "The roles on the H200"). Debian trixie, not bookworm: the GPU host's own
# Python (Ubuntu 24.04's python3.12, the one its torch 2.11.0+cu130 is built for) needs glibc >= 2.38
# (GLIBC_2.38 symbols, read on the host), and bookworm has 2.36. The container gets that interpreter bound in
# (start_ct.sh); everything else is Debian's.
# The base role installs nothing there (no registry): what it would install is installed here.
#   tests/gpu/ct/build_rootfs.sh OUT.tar.xz
set -euo pipefail
OUT="$1"
command -v debootstrap >/dev/null || { echo "build_rootfs.sh: needs debootstrap (apt-get install -y debootstrap; tests/gpu/ct/make_parts.sh installs it)" >&2; exit 2; }
mkdir -p "$(dirname "$OUT")"
R="$(mktemp -d /var/tmp/igh-gpu-rootfs.XXXXXX)"
trap 'rm -rf "$R"' EXIT
# What a Proxmox Debian CT template ships (systemd, sshd, python3) plus the base role's packages and python3-apt
# (the apt module's helper). A C compiler even though the venv is built from wheels only: Triton compiles a C
# launcher for each CUDA kernel at its first use, and run 7 stopped at vLLM's warm-up without one (Python's
# headers come with the machine's python3.12, bound in by start_ct.sh).
PKGS=systemd-sysv,openssh-server,python3,python3-apt,iproute2,dbus,ca-certificates,curl,git,acl,sudo,less,gcc,libc6-dev
debootstrap --variant=minbase --include="$PKGS" trixie "$R" http://deb.debian.org/debian >/dev/null
echo "deb http://deb.debian.org/debian trixie main" > "$R/etc/apt/sources.list"
chroot "$R" apt-get clean
rm -rf "$R"/usr/share/{doc,man,locale,info}/* "$R"/var/lib/apt/lists/* "$R"/var/cache/apt/*.bin
# sshd keys made at first boot inside (ssh.service's ExecStartPre does that in Debian? not in trixie: make them now).
chroot "$R" ssh-keygen -A >/dev/null
# mktemp made the root 0700: a container whose / only root may enter fails every service account.
chmod 755 "$R"
tar -C "$R" --numeric-owner -cf - . | xz -T0 -6 > "$OUT"
ls -l "$OUT"
