#!/usr/bin/env bash
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
#
# On the GPU machine, after run_site.sh's converge1 (container up, unit serving): the collection's hardened unit
# against bare `vllm serve` with the exact argv and environment of the unit's main process (so the environment file's
# assignments too), run as root in the same container, on the same GPU, measured by the same client. Order unit,
# bare, unit (A-B-A): drift over time falls on both sides of the ratio. Issue 40 item 4; run_site.sh stage `ratio`.
#   W=/root/igh OUT=<dir> tests/gpu/ct/served_ratio.sh        writes OUT/ratio.txt (and client.py, bare.log)
# What "cost nothing measurable" means here: unit/bare within the spread of unit-1 against unit-2.
set -uo pipefail
W=${W:-/root/igh}; OUT=${OUT:-/tmp/ratio-out}; R=/srv/igh-gpu; CTPID=$(cat "$W/ct.pid"); mkdir -p "$OUT"
ns() { nsenter -t "$CTPID" -a -r -w "$@"; }
say() { echo "$(date -u +%H:%M:%S) $*" | tee -a "$OUT/ratio.txt"; }
U=$(ns bash -c 'ls /etc/systemd/system/vllm-*.service | head -n 1'); U=$(basename "$U")
MAIN=$(ns systemctl show -p MainPID --value "$U")
mkdir -p "$R/root/ratio"
ns cat "/proc/$MAIN/cmdline" > "$R/root/ratio/cmdline.bin"
ns cat "/proc/$MAIN/environ" > "$R/root/ratio/environ.bin"
say "unit $U main pid $MAIN argv: $(tr '\0' ' ' < "$R/root/ratio/cmdline.bin" | cut -c1-400)"
KEY=$(tr '\0' '\n' < "$R/root/ratio/environ.bin" | sed -n 's/^VLLM_API_KEY=//p' | head -n 1)
PORT=$(tr '\0' '\n' < "$R/root/ratio/cmdline.bin" | awk 'p{print; exit} $0=="--port"{p=1}'); PORT=${PORT:-30000}
cat > "$OUT/client.py" <<'PY'
import json, sys, time, urllib.request, concurrent.futures as cf
port, key, label = sys.argv[1], sys.argv[2], sys.argv[3]
H = {"Content-Type": "application/json"}
if key:
    H["Authorization"] = "Bearer " + key
def get(path):
    return json.load(urllib.request.urlopen(urllib.request.Request("http://127.0.0.1:%s%s" % (port, path), headers=H), timeout=10))
model = get("/v1/models")["data"][0]["id"]
PROMPTS = ["The history of the", "Once upon a time", "In the morning we", "A short note on", "The reason why",
           "Numbers and words", "Under the old bridge", "What people say", "At the end of", "Water and air"]
def one(i, n=256):
    body = json.dumps({"model": model, "prompt": PROMPTS[i % len(PROMPTS)], "max_tokens": n, "temperature": 0,
                       "ignore_eos": True}).encode()
    t = time.perf_counter()
    d = json.load(urllib.request.urlopen(urllib.request.Request("http://127.0.0.1:%s/v1/completions" % port, body, H), timeout=300))
    return d["usage"]["completion_tokens"], time.perf_counter() - t
for i in range(3):
    one(i, 64)
toks = secs = 0
for i in range(30):
    n, s = one(i); toks += n; secs += s
c1 = toks / secs
t0 = time.perf_counter()
with cf.ThreadPoolExecutor(8) as ex:
    res = list(ex.map(one, range(48)))
c8 = sum(n for n, _ in res) / (time.perf_counter() - t0)
print("%s tok/s c=1 %.1f c=8 %.1f" % (label, c1, c8))
PY
PY3=/opt/torch/.venv/bin/python3
ready() {  # wait for /v1/models and one completion, 240 s at most
    local t=0
    until $PY3 - "$PORT" "$KEY" <<'PY' >/dev/null 2>&1
import json, sys, urllib.request
port, key = sys.argv[1], sys.argv[2]
H = {"Content-Type": "application/json", "Authorization": "Bearer " + key}
m = json.load(urllib.request.urlopen(urllib.request.Request("http://127.0.0.1:%s/v1/models" % port, headers=H), timeout=5))["data"][0]["id"]
b = json.dumps({"model": m, "prompt": "hi", "max_tokens": 4}).encode()
urllib.request.urlopen(urllib.request.Request("http://127.0.0.1:%s/v1/completions" % port, b, H), timeout=30).read()
PY
    do sleep 2; t=$((t+2)); [ $t -ge 240 ] && return 1; done
    return 0
}
gpu_free() { local t=0; while [ -n "$(nvidia-smi --query-compute-apps=pid --format=csv,noheader 2>/dev/null)" ] && [ $t -lt 60 ]; do sleep 2; t=$((t+2)); done; }
bench() { $PY3 "$OUT/client.py" "$PORT" "$KEY" "$1" 2>&1 | tail -n 1 | tee -a "$OUT/ratio.txt"; }

ready || { say "unit not ready"; exit 1; }
bench "unit-1"
say "stop the unit, start bare vllm serve as root with the same argv and environment"
ns systemctl stop "$U"; gpu_free
BPID=$(ns /opt/vllm-env/bin/python3 - <<'PY'
import subprocess
argv = open("/root/ratio/cmdline.bin", "rb").read().split(b"\0")[:-1]
env = dict(e.split(b"=", 1) for e in open("/root/ratio/environ.bin", "rb").read().split(b"\0")[:-1] if b"=" in e)
p = subprocess.Popen(argv, env=env, cwd="/", stdout=open("/root/ratio/bare.log", "wb"), stderr=subprocess.STDOUT,
                     start_new_session=True)
print(p.pid)
PY
)
say "bare pid (in the container) $BPID"
if ready; then bench "bare"; else say "bare not ready"; tail -n 20 "$R/root/ratio/bare.log" | tee -a "$OUT/ratio.txt"; fi
ns bash -c "kill -TERM -- -$BPID 2>/dev/null; for i in \$(seq 30); do kill -0 $BPID 2>/dev/null || break; sleep 1; done; kill -KILL -- -$BPID 2>/dev/null; true"
gpu_free
say "start the unit again"
ns systemctl reset-failed "$U" 2>/dev/null; ns systemctl start "$U"
ready && bench "unit-2" || say "unit not ready again"
cp "$R/root/ratio/bare.log" "$OUT/bare.log" 2>/dev/null
grep -E 'Using Eagle3|Model Runner|init engine' "$OUT/bare.log" | cut -c1-200 | tee -a "$OUT/ratio.txt"
python3 - "$OUT/ratio.txt" <<'PY' | tee -a "$OUT/ratio.txt"
import re, sys
f = {}
for l in open(sys.argv[1]):
    m = re.match(r"(unit-1|bare|unit-2) tok/s c=1 ([\d.]+) c=8 ([\d.]+)", l)
    if m:
        f[m.group(1)] = (float(m.group(2)), float(m.group(3)))
if len(f) == 3:
    for i, c in ((0, "c=1"), (1, "c=8")):
        unit = (f["unit-1"][i] + f["unit-2"][i]) / 2
        print("ratio unit/bare %s: %.3f (unit %.1f = mean of %.1f and %.1f, bare %.1f)" % (c, unit / f["bare"][i], unit, f["unit-1"][i], f["unit-2"][i], f["bare"][i]))
PY
