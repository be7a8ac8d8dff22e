#!/usr/bin/env bash
# The whole test suite, from nothing: lint, ansible-test sanity, unit tests,
# every Molecule scenario on real LXC containers. Run as root on Debian bookworm.
# Usage: bash scripts/test-all.sh [--help]
#   bash scripts/test-all.sh                 everything, in two lanes (IGH_JOBS, default 2)
#   IGH_STAGES="unit molecule" bash scripts/test-all.sh
#   IGH_SCENARIOS="base drafter" bash scripts/test-all.sh
#   IGH_JOBS=1 bash scripts/test-all.sh      one stage at a time, every log on the console
#   IGH_MITOGEN=1 IGH_STAGES=molecule IGH_SCENARIOS="site drift" bash scripts/test-all.sh
#                                            the scenarios under the opt-in mitogen strategy (README "Speed")
# Two lanes: the scenarios mostly wait (apt, downloads, vLLM starting), so lane 1 runs
# the checks that need no container (lint, sanity, build, unit, inventory) while lane 2
# starts on the scenarios; then both take the next scenario from one queue, in the order
# of molecule/ORDER (longest first). Scenarios never share a container (igh-<scenario>).
set -uo pipefail
case "${1:-}" in -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0;; esac
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 1
T_START=$SECONDS
cpu_ticks() {
  # All CPUs' busy and total ticks since boot (/proc/stat): what the whole run kept busy, shown at the end.
  awk '/^cpu / {t = 0; for (i = 2; i <= NF; i++) t += $i; print t - $5 - $6, t}' /proc/stat
}
read -r CPU_BUSY0 CPU_ALL0 < <(cpu_ticks)
bash scripts/bootstrap.sh || { echo "bootstrap failed"; exit 1; }
echo "bootstrap: $((SECONDS-T_START)) s"
export PATH="$ROOT/.venv/bin:$PATH"
export ANSIBLE_COLLECTIONS_PATH="$ROOT/.collections"
export UV_NATIVE_TLS=1

if [ "${IGH_MITOGEN:-0}" = 1 ]; then
  # README "Speed": mitogen takes host key checking from Ansible, not from the inventory's ssh options.
  MITOGEN_DIR="$(python -c 'import ansible_mitogen, os; print(os.path.dirname(ansible_mitogen.__file__))')" ||
    { echo "IGH_MITOGEN=1: mitogen is not in the dev venv (requirements-dev.txt)"; exit 1; }
  export ANSIBLE_STRATEGY_PLUGINS="$MITOGEN_DIR/plugins/strategy" ANSIBLE_STRATEGY=mitogen_linear ANSIBLE_HOST_KEY_CHECKING=False
  echo "every Ansible run under mitogen_linear ($MITOGEN_DIR)"
fi
STAGES="${IGH_STAGES:-lint sanity build unit inventory molecule}"
SCENARIOS="${IGH_SCENARIOS:-$(grep -v '^#' molecule/ORDER)}"
JOBS="${IGH_JOBS:-2}"
LOGS="$ROOT/.cache/test-logs"; mkdir -p "$LOGS"
RESULTS="$LOGS/results"; : > "$RESULTS"
QUEUE="$LOGS/queue"
LANE=1

say() {
  # One write per message under a lock: two lanes share the console.
  flock "$LOGS/.console.lock" cat
}
why_failed() {
  # What ended a failed stage, for the summary at the very end (CI shows the head and the tail of the
  # output): the last task failure Ansible printed (the earlier ones of a scenario are the expected
  # failures its rescues and bad-input cases check) under its task's name, and pytest's summary lines.
  sed 's/\x1b\[[0-9;]*m//g' "$1" | awk '
    /TASK \[|RUNNING HANDLER \[/ { task = $0 }
    /fatal: \[|failed: \[/ { last = task; kn = 0; grab = 30 }
    grab > 0 { kept[++kn] = $0; grab-- }
    /^(FAILED|ERROR) tests\/|^=+ .*(failed|error)/ { py = py "\n" $0 }
    END {
      if (kn) { print last; for (i = 1; i <= kn; i++) print kept[i] }
      if (py != "") print "pytest:" py
    }' | cut -c1-200 | head -n 60
}
stage() {
  # Every stage's output goes to its log (and, one lane only, to the console too); a
  # failed stage's log tail is printed again at its end, so the reason is next to the verdict.
  local name="$1"; shift
  local t0=$SECONDS rc log="$LOGS/stage-$name.log"
  if [ "$JOBS" -gt 1 ]; then
    echo "--- $name: started (lane $LANE, log $log)" | say
    "$@" > "$log" 2>&1; rc=$?
  else
    echo; echo "=================== $name"
    "$@" 2>&1 | tee "$log"; rc=${PIPESTATUS[0]}
  fi
  local dt=$((SECONDS-t0))
  if [ "$rc" -eq 0 ]; then
    echo "=== $name: ok ($dt s)" | say
    echo "ok $name $dt" >> "$RESULTS"
  else
    echo "FAILED $name $dt" >> "$RESULTS"
    {
      echo "=== $name: FAILED ($dt s); the last lines of its log:"; tail -n 40 "$log" | sed 's/^/  | /'
      # Molecule cleans up after a failure, so the tail is often the destroy step:
      # the first failure lines, wherever they are, go next to the verdict too.
      echo "=== $name: the first failure lines ($log):"
      sed 's/\x1b\[[0-9;]*m//g' "$log" |
        grep -n -m 8 -E 'fatal: |FAILED!|^E  |Executed: Failed|CRITICAL|Error:|failed=[1-9]|[0-9]+ failed' | sed 's/^/  | /' || true
    } | say
    why_failed "$log" > "$LOGS/why-$name.txt"
  fi
}
molecule_test() {
  # Molecule's own exit status, and also its log: a failed action must never pass.
  molecule test -s "$1" 2>&1 | tee "$LOGS/molecule-$1.log"
  local rc=${PIPESTATUS[0]}
  if grep -q "Executed: Failed" "$LOGS/molecule-$1.log"; then rc=1; fi
  return "$rc"
}
static_stage() {
  case "$1" in
    lint) stage lint bash -c 'ansible-lint --profile production && antsibull-changelog lint' ;;
    sanity) stage sanity bash scripts/sanity.sh ;;
    # Workers by file (a module's fixtures are built once): most tests wait on sockets, subprocesses
    # and timeouts, so more workers than cores pays (IGH_UNIT_WORKERS, default 4).
    unit) stage unit pytest -q -p no:cacheprovider -n "${IGH_UNIT_WORKERS:-4}" --dist loadfile tests/unit ;;
    build) stage build bash scripts/build-check.sh ;;
    inventory) stage inventory python3 scripts/validate_inventories.py ;;
    *) echo "unknown stage $1" | say; echo "FAILED $1 0" >> "$RESULTS" ;;
  esac
}
next_scenario() {
  # Take the first scenario off the queue (both lanes take from it).
  (
    flock 9
    head -n 1 "$QUEUE"
    sed -i 1d "$QUEUE"
  ) 9> "$QUEUE.lock"
}
run_scenarios() {
  local sc
  while sc="$(next_scenario)" && [ -n "$sc" ]; do stage "molecule-$sc" molecule_test "$sc"; done
}

with_molecule=0; static=()
for s in $STAGES; do
  if [ "$s" = molecule ]; then with_molecule=1; else static+=("$s"); fi
done
printf '%s\n' $SCENARIOS > "$QUEUE"
if [ "$with_molecule" -eq 1 ] && [ "$JOBS" -gt 1 ]; then
  # Made once before the lanes start: several scenarios place the same tiny models.
  ansible-playbook -i inventories/local -i localhost, -e ansible_python_interpreter="$ROOT/.venv/bin/python" \
    playbooks/standin_models.yml --limit localhost > "$LOGS/tiny-models.log" 2>&1 ||
    { echo "the tiny models could not be made:"; tail -n 20 "$LOGS/tiny-models.log"; exit 1; }
  # The provisioned images the scenarios clone (molecule/_shared/lxc_harness.py IMAGES), built beside the
  # first stages in the order the queue needs them; a scenario that needs one still building waits for it.
  # A failed build is not fatal here: the scenario that needs the image builds it again and fails with the reason.
  ordered=""
  for sc in $SCENARIOS; do
    img="$(sed -n 's/^ *image: *\([^ #]*\).*/\1/p' "molecule/$sc/molecule.yml" | head -n 1)"
    case " $ordered " in *" $img "*) ;; *) [ -z "$img" ] || ordered="$ordered $img" ;; esac
  done
  if [ -n "$ordered" ]; then
    ( for img in $ordered; do
        t0=$SECONDS
        if python3 molecule/_shared/lxc_harness.py image "$img" >> "$LOGS/images.log" 2>&1; then
          echo "ok image-$img $((SECONDS-t0))" >> "$RESULTS"
        else
          echo "--- image $img could not be built here (the scenario that needs it will say why): $LOGS/images.log" | say
        fi
      done ) &
    echo "images:$ordered (built beside the first stages; log $LOGS/images.log)"
  fi
fi
if [ "$JOBS" -gt 1 ]; then
  echo "lanes: $JOBS (lane 1: ${static[*]:-nothing}, then scenarios; the others: scenarios); logs in $LOGS"
  (
    LANE=1
    for s in "${static[@]}"; do static_stage "$s"; done
    [ "$with_molecule" -eq 0 ] || run_scenarios
  ) &
  if [ "$with_molecule" -eq 1 ]; then
    for lane in $(seq 2 "$JOBS"); do ( LANE=$lane; run_scenarios ) & done
  fi
  wait
else
  for s in "${static[@]}"; do static_stage "$s"; done
  [ "$with_molecule" -eq 0 ] || run_scenarios
fi

passed=$(grep -c '^ok ' "$RESULTS"); failed=$(grep -c '^FAILED ' "$RESULTS")
echo
echo "stage times:"; awk '{printf "  %-24s %5d s%s\n", $2, $3, ($1 == "ok" ? "" : "  FAILED")}' "$RESULTS"
echo "total: $((SECONDS-T_START)) s ($(( (SECONDS-T_START)/60 )) min), bootstrap included"
read -r CPU_BUSY1 CPU_ALL1 < <(cpu_ticks)
# Whether the run waited or computed: at ~100% busy only less work makes it shorter, not more lanes.
awk -v b=$((CPU_BUSY1-CPU_BUSY0)) -v a=$((CPU_ALL1-CPU_ALL0)) -v n="$(nproc)" -v hz="$(getconf CLK_TCK)" \
  'BEGIN { if (a > 0) printf "cpu: %.0f%% busy of %d cores, %d core-seconds (the machine as a whole)\n", 100 * b / a, n, b / hz }'
if [ "$failed" -ne 0 ]; then
  for f in $(awk '$1 == "FAILED" {print $2}' "$RESULTS"); do
    echo; echo "=== what ended $f (the last failure in $LOGS/stage-$f.log):"
    sed 's/^/  | /' "$LOGS/why-$f.txt" 2>/dev/null
  done
  echo; echo "failed stages: $(awk '$1 == "FAILED" {printf "%s ", $2}' "$RESULTS")"
fi
echo "stages: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
