#!/usr/bin/env bash
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
#
# On the GPU host (a VM without systemd, root with all capabilities, cgroup2): a systemd system container that stands
# in for ct129 (a Proxmox LXC container with the GPU passed through), made the way LXC makes one: its own PID, mount,
# UTS, IPC and cgroup namespaces, a cgroup of its own, /dev with the NVIDIA device nodes, a 16 GiB /dev/shm, and
# systemd as PID 1 (container=lxc). It shares the VM's network namespace: sshd listens on 127.0.0.1:$CT_PORT.
# The NVIDIA userspace (libcuda, libnvidia-ml, nvidia-smi) is copied from the VM's driver folder into the rootfs, as
# a Proxmox CT gets the driver's userspace files of the node's driver version. The VM's python3.12 (the interpreter
# its torch is built for) is bound in read-only: /usr/bin/python3.12, /usr/lib/python3.12, /usr/share/python-wheels.
#   ROOTFS=rootfs.tar.xz CT=igh-gpu CT_PORT=2222 EVIDENCE=dir tests/gpu/ct/start_ct.sh
# A throwaway key for root is made inside: <rootfs>/root/.ssh/igh_id (run_site.sh copies it out).
# Prints "CT_PID=<systemd's pid on the VM>" last; enter it with: nsenter -t <pid> -a -r -w <cmd>
set -euo pipefail
CT="${CT:-igh-gpu}"; R="/srv/$CT"; CT_PORT="${CT_PORT:-2222}"; EV="${EVIDENCE:-/tmp}"
NVIDIA_DIR="${NVIDIA_DIR:-/usr/local/nvidia}"
# The cgroup2 hierarchy (on a hybrid-cgroup machine, for a rehearsal without GPU: CGROOT=/sys/fs/cgroup/unified).
CGROOT="${CGROOT:-/sys/fs/cgroup}"
mkdir -p "$EV"
if [ -e "$R" ]; then echo "start_ct: $R exists (a container of an earlier run): remove it first" >&2; exit 1; fi
mkdir -p "$R"
xz -dc -T0 "$ROOTFS" | tar -C "$R" --numeric-owner -xf -
chmod 755 "$R"   # the archive's own "." may say otherwise; a service account must reach /
install -d -m 700 "$R/root/.ssh"; chroot "$R" ssh-keygen -q -t ed25519 -N '' -C igh-gpu -f /root/.ssh/igh_id
install -m 600 "$R/root/.ssh/igh_id.pub" "$R/root/.ssh/authorized_keys"
sed -i 's/^#\?Port .*/Port '"$CT_PORT"'/; s/^#\?ListenAddress 0.0.0.0/ListenAddress 127.0.0.1/' "$R/etc/ssh/sshd_config"
grep -q "^Port $CT_PORT" "$R/etc/ssh/sshd_config" || echo "Port $CT_PORT" >> "$R/etc/ssh/sshd_config"
echo ct-h200 > "$R/etc/hostname"; printf '127.0.0.1 localhost\n127.0.1.1 ct-h200\n' > "$R/etc/hosts"
# No ttys in this container: the gettys would only fail (as in an LXC container without a console).
for u in getty@tty1 serial-getty@ttyS0 console-getty; do ln -sf /dev/null "$R/etc/systemd/system/$u.service"; done
# The NVIDIA userspace of the node's driver, where a Debian system looks for it.
if [ -d "$NVIDIA_DIR" ]; then
  cp -a "$NVIDIA_DIR"/lib64/*.so* "$R/usr/lib/x86_64-linux-gnu/"
  install -m 755 "$NVIDIA_DIR/bin/nvidia-smi" "$R/usr/bin/nvidia-smi"
  chroot "$R" /sbin/ldconfig
fi
# Mount points for the interpreter bound in below.
touch "$R/usr/bin/python3.12"; mkdir -p "$R/usr/lib/python3.12" "$R/usr/share/python-wheels"
# Its headers too (Python.h, and Ubuntu's pyconfig.h): Triton compiles its kernel launchers against them (run 7).
mkdir -p "$R/usr/include/python3.12" "$R/usr/include/x86_64-linux-gnu/python3.12"
mkdir -p "$CGROOT/$CT"
echo "+cpu +memory +pids +io" > "$CGROOT/cgroup.subtree_control" 2>/dev/null || true
cat > "/run/$CT-init.sh" <<INIT
#!/bin/bash
echo \$\$ > $CGROOT/$CT/cgroup.procs
exec unshare --pid --mount --uts --ipc --cgroup --fork bash -c '
  set -e
  mount --make-rprivate /
  mount --bind $R $R
  mount -t proc proc $R/proc
  mount -t sysfs sysfs $R/sys
  mount -t cgroup2 cgroup2 $R/sys/fs/cgroup
  mount --rbind /dev $R/dev
  mount -t tmpfs tmpfs $R/run
  mount -t tmpfs tmpfs $R/tmp
  mkdir -p $R/dev/shm; mount -t tmpfs -o size=16g tmpfs $R/dev/shm
  for p in /usr/bin/python3.12 /usr/lib/python3.12 /usr/share/python-wheels /usr/include/python3.12 \
           /usr/include/x86_64-linux-gnu/python3.12; do
    [ -e \$p ] || continue
    mount --bind \$p $R\$p; mount -o remount,bind,ro $R\$p
  done
  hostname ct-h200
  export container=lxc
  exec chroot $R /lib/systemd/systemd --system
'
INIT
chmod +x "/run/$CT-init.sh"
setsid "/run/$CT-init.sh" > "$EV/ct-console.txt" 2>&1 < /dev/null &
for _ in $(seq 50); do [ -s "$CGROOT/$CT/cgroup.procs" ] && break; sleep 0.2; done
outer=$(head -n 1 "$CGROOT/$CT/cgroup.procs")
pid=""; for _ in $(seq 50); do pid=$(ps -eo pid=,ppid=,comm= | awk -v p="$outer" '$2==p && $3=="systemd"{print $1}' | head -n 1); [ -n "$pid" ] && break; sleep 0.2; done
[ -n "$pid" ] || { echo "start_ct: systemd did not start"; cat "$EV/ct-console.txt"; exit 1; }
NS=(nsenter -t "$pid" -a -r -w)
state=""; for i in $(seq 60); do state=$("${NS[@]}" systemctl is-system-running 2>/dev/null || true); case "$state" in running|degraded) break;; esac; sleep 1; done
{
  echo "systemd pid on the VM: $pid; is-system-running: $state"
  "${NS[@]}" systemctl --failed --no-pager 2>&1 | head -20
  echo "--- inside"; "${NS[@]}" bash -c 'cat /etc/os-release | head -2; ldd --version | head -1; findmnt -n /sys/fs/cgroup; findmnt -n /dev/shm; ls -la /dev/nvidia*; nvidia-smi -L; /usr/bin/python3.12 -c "import ssl, ctypes, sqlite3, lzma, bz2, decimal, hashlib, uuid, venv; print(\"python3.12 stdlib ok\")"; python3 -V; systemctl is-active ssh'
} 2>&1 | tee "$EV/ct-facts.txt"
echo "CT_PID=$pid"
