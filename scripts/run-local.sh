#!/usr/bin/env bash
# The main job on a machine without a GPU: site.yml against a local LXC
# container standing in for ct129 (inventories/local: vLLM's CPU build, a tiny
# Qwen3 target and a tiny DFlash drafter). Prints the served URL and a completion.
# Run as root on Debian bookworm. Re-running reuses the container (a no-change run).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
bash scripts/bootstrap.sh
export PATH="$ROOT/.venv/bin:$PATH" ANSIBLE_COLLECTIONS_PATH="$ROOT/.collections" UV_NATIVE_TLS=1

echo "== local container for inventory host ct129-local (LXC igh-run-local-ct129: systemd, sshd)"
cfg="$(python3 molecule/_shared/lxc_harness.py create run-local-ct129 --reuse \
  --bind /var/cache/inference-gpu-host/uv:var/cache/inference-gpu-host/uv \
  --bind /opt/wheels:opt/wheelhouse:ro)"
mkdir -p .cache
python3 - "$cfg" > .cache/local-hosts.yml <<'PY'
import json, sys
c = json.loads(sys.argv[1])
print("# written by scripts/run-local.sh: where ct129-local is right now")
print("all:\n  hosts:\n    ct129-local:\n      ansible_host: %s\n      ansible_ssh_private_key_file: %s" % (c["address"], c["identity_file"]))
PY
INV=(-i inventories/local -i .cache/local-hosts.yml)
echo "== stand-in models"
ansible-playbook "${INV[@]}" playbooks/standin_models.yml
echo "== site.yml"
ansible-playbook "${INV[@]}" site.yml "$@"
addr="$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["address"])' "$cfg")"
key="$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["identity_file"])' "$cfg")"
echo "== served at http://127.0.0.1:30000/v1 inside ct129-local ($addr); a completion:"
ssh -i "$key" -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR "root@$addr" \
  "curl -s http://127.0.0.1:30000/v1/completions -H 'Content-Type: application/json' -d '{\"model\": \"tiny-qwen3\", \"prompt\": \"The capital of France is\", \"max_tokens\": 8, \"temperature\": 0}'"
echo
