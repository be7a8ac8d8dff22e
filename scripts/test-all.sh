#!/usr/bin/env bash
# The whole test suite, from nothing: lint, ansible-test sanity, unit tests,
# every Molecule scenario on real LXC containers. Run as root on Debian bookworm.
#   bash scripts/test-all.sh                 everything
#   IGH_STAGES="unit molecule" bash scripts/test-all.sh
#   IGH_SCENARIOS="base drafter" bash scripts/test-all.sh
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 1
T_START=$SECONDS
bash scripts/bootstrap.sh || { echo "bootstrap failed"; exit 1; }
echo "bootstrap: $((SECONDS-T_START)) s"
export PATH="$ROOT/.venv/bin:$PATH"
export ANSIBLE_COLLECTIONS_PATH="$ROOT/.collections"
export UV_NATIVE_TLS=1

STAGES="${IGH_STAGES:-lint sanity build unit inventory molecule}"
SCENARIOS="${IGH_SCENARIOS:-$(cat molecule/ORDER)}"
passed=0; failed=0; failed_names=(); times=()
LOGS="$ROOT/.cache/test-logs"; mkdir -p "$LOGS"
stage() {
  # Every stage's output goes to the console and to its log; a failed stage's
  # log tail is printed again at its end, so the reason is next to the verdict.
  local name="$1"; shift
  echo; echo "=================== $name"
  local t0=$SECONDS rc
  "$@" 2>&1 | tee "$LOGS/stage-$name.log"; rc=${PIPESTATUS[0]}
  if [ "$rc" -eq 0 ]; then passed=$((passed+1)); echo "=== $name: ok ($((SECONDS-t0)) s)";
  else
    failed=$((failed+1)); failed_names+=("$name")
    echo "=== $name: FAILED ($((SECONDS-t0)) s); the last lines of its log:"; tail -n 40 "$LOGS/stage-$name.log" | sed 's/^/  | /'
    # Molecule cleans up after a failure, so the tail is often the destroy step:
    # the first failure lines, wherever they are, go next to the verdict too.
    echo "=== $name: the first failure lines ($LOGS/stage-$name.log):"
    sed 's/\x1b\[[0-9;]*m//g' "$LOGS/stage-$name.log" |
      grep -n -m 8 -E 'fatal: |FAILED!|^E  |Executed: Failed|CRITICAL|Error:|failed=[1-9]|[0-9]+ failed' | sed 's/^/  | /' || true
  fi
  times+=("$(printf '%-24s %5d s' "$name" $((SECONDS-t0)))")
}
molecule_test() {
  # Molecule's own exit status, and also its log: a failed action must never pass.
  molecule test -s "$1" 2>&1 | tee "$LOGS/molecule-$1.log"
  local rc=${PIPESTATUS[0]}
  if grep -q "Executed: Failed" "$LOGS/molecule-$1.log"; then rc=1; fi
  return "$rc"
}
for s in $STAGES; do
  case "$s" in
    lint) stage lint bash -c 'ansible-lint --profile production && antsibull-changelog lint' ;;
    sanity) stage sanity bash scripts/sanity.sh ;;
    unit) stage unit pytest -q -p no:cacheprovider tests/unit ;;
    build) stage build bash scripts/build-check.sh ;;
    inventory) stage inventory python3 scripts/validate_inventories.py ;;
    molecule) for sc in $SCENARIOS; do stage "molecule-$sc" molecule_test "$sc"; done ;;
    *) echo "unknown stage $s"; failed=$((failed+1)) ;;
  esac
done
echo
echo "stage times:"; printf '  %s\n' "${times[@]}"
echo "total: $((SECONDS-T_START)) s ($(( (SECONDS-T_START)/60 )) min), bootstrap included"
[ "$failed" -eq 0 ] || echo "failed stages: ${failed_names[*]}"
echo "stages: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
