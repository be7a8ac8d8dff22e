#!/usr/bin/env bash
# Install everything the collection's tests and local run need, from nothing,
# on a Debian bookworm machine (as root): LXC, the dev venv, the test harness.
# Safe to run again: each step is skipped when already done.
#   bash scripts/bootstrap.sh            (PYTHON: the python3 that makes .venv)
set -euo pipefail
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0;; esac
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

if [ "$(id -u)" != 0 ]; then
  echo "bootstrap.sh: run as root (classic LXC containers are the test hosts)" >&2
  exit 2
fi

need_apt=()
for pkg in lxc debootstrap openssh-client rsync git curl dnsmasq-base iptables python3-venv; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || need_apt+=("$pkg")
done
if [ "${#need_apt[@]}" -gt 0 ]; then
  echo "== apt-get install ${need_apt[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

# promtool (Debian's prometheus package) checks and tests the alert rules
# (tests/unit/test_prometheus_rules.py). Only that binary is taken from the
# package: installing it would also start a Prometheus server on this machine.
if ! command -v promtool >/dev/null; then
  echo "== promtool from Debian's prometheus package"
  tmp="$(mktemp -d)"
  chown _apt: "$tmp" 2>/dev/null || true   # apt downloads as _apt where it can
  (cd "$tmp" && apt-get download -qq prometheus) \
    || { apt-get update -qq && (cd "$tmp" && apt-get download -qq prometheus); }
  dpkg-deb --fsys-tarfile "$tmp"/prometheus_*.deb | tar -x -C "$tmp" ./usr/bin/promtool
  install -m 0755 "$tmp/usr/bin/promtool" /usr/local/bin/promtool
  rm -rf "$tmp"
fi

# The base container (debootstrap, about a minute) and the dev venv need nothing of each other: the base
# is built beside the venv (the harness is stdlib-only, so the system python3 runs it).
python3 molecule/_shared/lxc_harness.py base >/dev/null &
base_pid=$!

# uv ships its own CA roots; the system store carries the site's private CA.
export UV_NATIVE_TLS=1
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ] || ! cmp -s requirements-dev.txt .venv/.requirements-dev.txt; then
  echo "== dev venv from requirements-dev.txt (locked, hashed)"
  [ -x .venv/bin/python ] || "$PY" -m venv .venv
  .venv/bin/python -m pip --version >/dev/null 2>&1 || .venv/bin/python -m ensurepip >/dev/null
  .venv/bin/python -m pip install -q uv==0.9.30
  # Bytecode compiled once here: uv leaves it out, and where PYTHONDONTWRITEBYTECODE is set every
  # ansible-playbook (and each of its task workers) would compile ansible-core again (BENCHMARKS.md).
  .venv/bin/uv pip install -q --compile-bytecode --python .venv/bin/python --require-hashes -r requirements-dev.txt
  cp requirements-dev.txt .venv/.requirements-dev.txt
fi

# ansible-test's pip bootstrap, offline (see scripts/ansible_test_get_pip.py).
mkdir -p ~/.ansible/test/cache
cp scripts/ansible_test_get_pip.py ~/.ansible/test/cache/get_pip_24_2.py

# LXC: the bridge (no systemd here to start lxc-net), the base container.
wait "$base_pid" || { echo "bootstrap.sh: the LXC base container could not be built (above)" >&2; exit 1; }
echo "== bootstrap done"
