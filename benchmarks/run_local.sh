#!/usr/bin/env bash
# Issue 37 item 4: bare machine to serving, `bash scripts/run-local.sh` from nothing, against the same from an
# earlier commit, alternating in one run. Target: serving within 180 s.
#
# "From nothing" here: a fresh clone (no .venv, no .cache) and no LXC base container. Each clone builds its own
# base under a scratch recipe (one more key in BASE_RECIPE, so the shared base and every clone standing on it are
# never touched, and no other base is removed) and serves from LXC `igh-bench-run-local` (run-local.sh's
# container name changed in the clone, so a ct129-local that other work uses is neither reused nor removed).
# What a machine keeps stays: Debian's packages (apt), the Debian template's debootstrap cache, uv's caches
# (~/.cache/uv for the dev venv, /var/cache/inference-gpu-host/uv for the serving venv) and /opt/wheels.
#
#   benchmarks/run_local.sh [-n ROUNDS] [-k LOGDIR] [--baseline REF] [--rev REV]
#
#   -n ROUNDS       rounds, each one run per revision, the baseline first (default 1)
#   -k LOGDIR       keep each run's log (every line prefixed with its second) there
#   --baseline REF  the earlier commit (default HEAD~1)
#   --rev REV       the commit measured (default: the working tree as committed, HEAD)
#
# Per run: seconds to the served completion ("== serving" / "== served at"), to the end (with the benchmark
# beside the plain target where the revision runs one), and the load average at its start.
# Run as root from a bootstrapped clone. Takes 5-20 minutes a round on 2 shared cores.
set -euo pipefail
# shellcheck source=benchmarks/_lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/_lib.sh"
ROUNDS=1
KEEP=""
BASE_REF=HEAD~1
REV=HEAD
while [ $# -gt 0 ]; do
  case "$1" in
    -n) ROUNDS=$2; shift 2 ;;
    -k) KEEP=$2; shift 2 ;;
    --baseline) BASE_REF=$2; shift 2 ;;
    --rev) REV=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/s/^# \{0,1\}//p' "${BASH_SOURCE[0]}" | sed '$d'; exit 0 ;;
    *) echo "$0: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
bench_require
bench_work bench-run-local
[ -n "$KEEP" ] && BENCH_KEEP_LOGS=$KEEP
SCRATCH_BASES=()
remove_scratch() {
  local base
  for base in "${SCRATCH_BASES[@]}"; do
    case "$base" in igh-base-*-scratch-*) ;; *) continue ;; esac
    lxc-destroy -f -n "$base" >/dev/null 2>&1 && bench_log "removed scratch base $base" || true
  done
}

# clone REV DIR: a fresh clone of this repository at REV, patched for the measurement only (see the header).
clone() {
  git clone -q "$BENCH_ROOT" "$2"
  git -C "$2" checkout -q "$1"
  "$BENCH_PY" - "$2" <<'PY'
import sys
root = sys.argv[1]
harness = root + "/molecule/_shared/lxc_harness.py"
s = open(harness).read()
for old, new in (('"addressing": "static",', '"addressing": "static",\n    "scratch": "benchmarks/run_local.sh",'),
                 ('PREFIX + "base-" + digest', 'PREFIX + "base-" + digest + "-scratch-bench"'),
                 ("        for other in list_owned():\n            if other.startswith(PREFIX + \"base-\")",
                  "        for other in []:\n            if other.startswith(PREFIX + \"base-\")")):
    if old not in s:
        raise SystemExit("benchmarks/run_local.sh: %s no longer has %r" % (harness, old))
    s = s.replace(old, new, 1)
open(harness, "w").write(s)
script = root + "/scripts/run-local.sh"
s = open(script).read()
if "create run-local-ct129" not in s:
    raise SystemExit("benchmarks/run_local.sh: %s no longer creates run-local-ct129" % script)
open(script, "w").write(s.replace("create run-local-ct129", "create bench-run-local", 1))
PY
}

# one LABEL REV: run-local.sh of REV from nothing; sets SERVING, TOTAL, RC and LOAD.
one() {
  local label=$1 rev=$2 dir="$BENCH_WORK/$1" log="$BENCH_WORK/logs/$1.log"
  rm -rf "$dir"
  clone "$rev" "$dir"
  SCRATCH_BASES+=("$(cd "$dir/molecule/_shared" && "$BENCH_PY" -c 'import lxc_harness; print(lxc_harness.base_name())')")
  BENCH_CONTAINERS+=(bench-run-local)
  LOAD="$(cut -d' ' -f1 /proc/loadavg)"
  bench_log "$label: run-local.sh of $(git -C "$dir" log -1 --format=%h) from nothing (load $LOAD)"
  (
    cd "$dir"
    unset ANSIBLE_COLLECTIONS_PATH
    SECONDS=0
    set +e
    PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" bash scripts/run-local.sh 2>&1 |
      while IFS= read -r line; do printf '%4d %s\n' "$SECONDS" "$line"; done
    echo "rc ${PIPESTATUS[0]} total $SECONDS"
  ) >"$log"
  SERVING="$(awk '$2 == "==" && ($3 == "serving" || ($3 == "served" && $4 == "at")) { print $1; exit }' "$log")"
  RC="$(awk '$1 == "rc" { print $2 }' "$log")"
  TOTAL="$(awk '$1 == "rc" { print $4 }' "$log")"
  remove_all
}

# The clone before its base: a base is removed only once nothing stands on it.
remove_all() {
  "${BENCH_HARNESS[@]}" destroy bench-run-local >/dev/null 2>&1 || true
  remove_scratch
}
trap 'rc=$?; remove_all; (exit "$rc"); bench_cleanup' EXIT

bench_machine start
echo "| round | revision | serving s | total s | rc | load at start |"
echo "|---|---|---|---|---|---|"
for round in $(seq 1 "$ROUNDS"); do
  for rev in "$BASE_REF" "$REV"; do
    one "round$round-$(git -C "$BENCH_ROOT" rev-parse --short "$rev")" "$rev"
    echo "| $round | $rev ($(git -C "$BENCH_ROOT" rev-parse --short "$rev")) | ${SERVING:--} | ${TOTAL:--} | ${RC:--} | $LOAD |"
  done
done
bench_machine end
