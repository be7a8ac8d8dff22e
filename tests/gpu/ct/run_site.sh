#!/usr/bin/env bash
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
#
# On the GPU host: site.yml against a systemd container with the GPU (start_ct.sh), from an ansible-core on the host,
# over SSH like ct129. Everything the host printed goes to $W/out (tests/gpu/README.md, "The roles on the H200").
#   W=/root/igh PARTS=<dir of wheels-*.tar.part-NN> ROOTFS=<rootfs.tar.xz> tests/gpu/ct/run_site.sh
# Stages (STAGES, in order): setup converge1 converge2 evidence bench drift tamper fail final
# (the evidence of the converged host is taken before the drift and failure stages: device time may end first)
# Issue 40 item 4 (run 9): PAIR=layer-sensitive makes the layer-sensitive pair in setup (default: agreeing); after
# converge1, `ratio` (served_ratio.sh: the unit against bare vllm serve) and the acceptance table, one stage per ids:
# `derived` (as converged), `offbyone` (explicit ids [2, 6]), `guess` (the seeds' kind, [1, 7]), then `restore`
# (a converge back to the derived ids, the gate on, against the reference converge1 recorded).
set -uo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
W="${W:-/root/igh}"; O="$W/out"; S="$O/summary.txt"; CT=igh-gpu; R="/srv/$CT"
INV="$REPO/tests/gpu/ct/inventory"
STAGES="${STAGES:-setup converge1 converge2 evidence bench drift tamper fail final}"
mkdir -p "$O" "$W/bin"
say() { echo "$(date -u +%H:%M:%S) $*" | tee -a "$S"; }
# The NVLink multicast switches this machine's image sets (kept for every program started here).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PATH="$W/bin:$W/ansible/bin:$PATH" ANSIBLE_CONFIG="$REPO/ansible.cfg"
export ANSIBLE_COLLECTIONS_PATH="$REPO/.collections" ANSIBLE_FORCE_COLOR=0 PYTHONUNBUFFERED=1
ctpid() { cat "$W/ct.pid"; }
ns() { nsenter -t "$(ctpid)" -a -r -w "$@"; }
play() {  # play <name> <ansible-playbook args...>: the log, the recap in the summary
    local name="$1"; shift; local t0=$SECONDS rc
    ansible-playbook -i "$INV" "$@" > "$O/$name.log" 2>&1; rc=$?
    say "$name: rc=$rc in $((SECONDS-t0)) s: $(grep -A2 'PLAY RECAP' "$O/$name.log" | grep -E 'ct-h200 ' | tr -s ' ')"
    return $rc
}

stage_setup() {
    say "== setup"
    mkdir -p "$W/wheels"; cat "$PARTS"/wheels-*.tar.part-* | tar -C "$W/wheels" -xf - || return 1
    ls "$W/wheels" > "$O/wheelhouse.txt"
    EVIDENCE="$O" ROOTFS="$ROOTFS" CT=$CT bash "$REPO/tests/gpu/ct/start_ct.sh" > "$O/start_ct.txt" 2>&1 || { cat "$O/start_ct.txt"; return 1; }
    sed -n 's/^CT_PID=//p' "$O/start_ct.txt" > "$W/ct.pid"; say "container up, systemd pid $(ctpid)"
    # The VM has no ssh client: the container's, run with the container's own loader and libraries.
    for t in ssh scp sftp; do
        printf '#!/bin/sh\nexec %s/lib64/ld-linux-x86-64.so.2 --library-path %s/lib/x86_64-linux-gnu:%s/usr/lib/x86_64-linux-gnu %s/usr/bin/%s "$@"\n' \
            "$R" "$R" "$R" "$R" "$t" > "$W/bin/$t"; chmod +x "$W/bin/$t"
    done
    cp "$R/root/.ssh/igh_id" "$W/id_ed25519"; chmod 600 "$W/id_ed25519"
    ssh -i "$W/id_ed25519" -p 2222 -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR root@127.0.0.1 \
        'hostname; cat /proc/1/comm; systemctl is-system-running' 2>&1 | tee -a "$S"
    # The controller: ansible-core in a venv of the VM's python3 that also sees the image (jinja2, PyYAML, packaging).
    # (the image's python3 by its path: once the venv exists, "python3" on PATH is the venv's own)
    /opt/torch/.venv/bin/python3 -m venv "$W/ansible" && /opt/torch/.venv/bin/python3 -c 'import site; print(site.getsitepackages()[0])' \
        > "$("$W/ansible/bin/python" -c 'import site; print(site.getsitepackages()[0])')/zz-image.pth"
    local -a a=(); local n
    for n in ansible_core resolvelib cryptography cffi pycparser ansible_runner pexpect ptyprocess python_daemon lockfile; do
        a+=("$W"/wheels/"$n"-[0-9]*.whl); done
    "$W/ansible/bin/pip" install -q --no-index --no-deps "${a[@]}" || return 1
    ansible-playbook --version | head -1 | tee -a "$S"
    # The wheelhouse python_env builds the venv from (python_env_find_links, python_env_no_index): vLLM's carried wheels,
    # and the image's torch 2.11.0+cu130 with its CUDA libraries packed back into wheels (pack_dists.py): 5 GB not carried.
    mkdir -p "$R/opt/wheelhouse"; cp "$W"/wheels/*.whl "$R/opt/wheelhouse/"
    /opt/torch/.venv/bin/python3 "$REPO/tests/gpu/ct/pack_dists.py" /opt/torch/.venv/lib/python3.12/site-packages \
        "$R/opt/wheelhouse" "$REPO/tests/gpu/ct/image-closure-0.26.0.txt" > "$O/pack-dists.txt" 2>&1 || { tail "$O/pack-dists.txt"; return 1; }
    tail -n 1 "$O/pack-dists.txt" | tee -a "$S"
    # The lock: exactly the closure of vllm==0.26.0 + torch==2.11.0 (image-closure + carried-closure), at the versions
    # the wheelhouse holds.
    mkdir -p "$INV/files"
    /opt/torch/.venv/bin/python3 "$REPO/tests/gpu/ct/wheelhouse_lock.py" "$R/opt/wheelhouse" "$REPO/tests/gpu/ct/image-closure-0.26.0.txt" \
        "$REPO/tests/gpu/ct/carried-closure-0.26.0.txt" > "$INV/files/vllm-0.26.0-h200.lock.txt" || return 1
    cp "$INV/files/vllm-0.26.0-h200.lock.txt" "$O/"
    say "lock: $(grep -c '==' "$INV/files/vllm-0.26.0-h200.lock.txt") pins; wheelhouse $(du -sh "$R/opt/wheelhouse" | cut -f1)"
    # The stand-in pair (docs/benchmark.md): PAIR=agreeing (the default: every draft accepted) or layer-sensitive
    # (accepted only from the layers the drafter was built for), made by the image's python3 (torch, safetensors)
    # where standin_models.yml looks: its generator step is then skipped.
    local tiny; tiny=$(sed -n 's/^standin_models_dir: //p' "$INV/group_vars/all.yml")
    case "${PAIR:=agreeing}" in agreeing|layer-sensitive) ;; *) say "PAIR must be agreeing or layer-sensitive"; return 1;; esac
    say "stand-in pair: make_tiny_models.py --$PAIR"
    [ -e "$tiny/drafter.safetensors" ] || /opt/torch/.venv/bin/python3 "$REPO/playbooks/files/make_tiny_models.py" \
        "--$PAIR" --target "$tiny/target" --drafter "$tiny/drafter.safetensors" > "$O/tiny-models.txt" 2>&1 || return 1
    play standin-models "$REPO/playbooks/standin_models.yml"
}

stage_converge1() { say "== converge 1"; play converge1 "$REPO/playbooks/site.yml"; }
stage_bench() {  # the served model's speed (issue 31): the agreeing pair, then the plain target for the ratio
    say "== benchmark (vLLM's own, from the host's venv) with the plain-target baseline"
    play benchmark "$REPO/playbooks/benchmark.yml" -e serving_benchmark_baseline=true -e serving_benchmark_plot=false \
        -e serving_benchmark_report_dir="$O/bench-report"
    grep -hE 'tok/s|acceptance|plain target' "$O"/bench-report/*/benchmarks.txt 2>/dev/null | head -12 | tee -a "$S"
}
stage_converge2() { say "== converge 2 (no change expected)"; play converge2 "$REPO/playbooks/site.yml"; }
drift() {  # drift <name>
    local t0=$SECONDS rc
    "$W/ansible/bin/python" "$REPO/scripts/drift_check.py" -i "$INV" --json "$O/$1.json" > "$O/$1.txt" 2>&1; rc=$?
    say "$1: exit $rc in $((SECONDS-t0)) s: $(tail -n 1 "$O/$1.txt")"
}
stage_drift() { say "== drift check (clean expected)"; PATH="$W/ansible/bin:$PATH" drift drift-clean; }
stage_tamper() {
    say "== a hand edit the drift check must find"
    local f=/etc/security/limits.d/90-inference-gpu-host.conf   # the base role's limits file
    say "tampered: $f (a line added by hand; the next converge puts it back)"
    ns bash -c "echo '* soft nofile 1024' >> $f"
    drift drift-tampered
}
stage_fail() {
    say "== a change whose server fails: rolled back"
    play failed-change "$REPO/playbooks/site.yml" -e vllm_service_gpu_memory_utilization=0.001
    grep -E 'rolled back|was rolled back|root cause|fatal:' "$O/failed-change.log" | head -5 | cut -c1-400 | tee -a "$S"
    play after-rollback "$REPO/playbooks/site.yml"
}
unit_evidence() {  # unit_evidence <suffix>
    local u; u=$(ns bash -c 'ls /etc/systemd/system/vllm-*.service | head -n 1'); u=$(basename "$u")
    ns cat "/etc/systemd/system/$u" > "$O/unit$1.txt"
    ns systemd-analyze security "$u" --no-pager > "$O/systemd-analyze-security$1.txt" 2>&1
    ns journalctl -u "$u" --no-pager -o short-iso > "$O/journal$1.txt" 2>&1
    ns systemctl status "$u" --no-pager -l > "$O/status$1.txt" 2>&1
    grep -E 'auxiliary layers|Resolved architecture|Model Runner|attention backend|init engine|Application startup complete' \
        "$O/journal$1.txt" | tail -n 8 | cut -c1-260 | tee -a "$S"
}
stage_evidence() {
    say "== what the host runs"
    unit_evidence ""
    ns nvidia-smi > "$O/ct-nvidia-smi.txt" 2>&1
    ns bash -c 'ls -la /opt/vllm-env /opt/vllm-env.generations; id vllm' > "$O/ct-venv.txt" 2>&1
    tail -n 3 "$O/systemd-analyze-security.txt" | tee -a "$S"
}
stage_final() { say "== after the rollback"; unit_evidence "-after-rollback"; }
stage_ratio() {  # issue 40 item 4: the unit's served speed against bare vllm serve (same argv, environment, GPU)
    say "== the unit against bare vllm serve (served_ratio.sh)"
    OUT="$O/ratio" W="$W" bash "$REPO/tests/gpu/ct/served_ratio.sh" > "$O/ratio-run.txt" 2>&1
    grep -E '^ratio |tok/s c=1|not ready' "$O/ratio/ratio.txt" | tee -a "$S"
    gzip -f "$O/ratio/bare.log" 2>/dev/null; true
}
# The acceptance table (issue 40 item 1 on CUDA): serve one set of ids, then the collection's benchmark on it.
accept() {  # accept <name> [extra vars as JSON]: no extra vars = what is served now
    local name="$1" ev="${2:-}" u=vllm-tiny.service
    say "== acceptance: $name ${ev:-(as served)}"
    if [ -n "$ev" ]; then play "accept-$name-converge" "$REPO/playbooks/site.yml" -e "$ev" || return 1; fi
    ns cat /srv/models/tiny-qwen3-dflash/config.json > "$O/accept-$name-config.json" 2>&1
    say "$name: config.json target_layer_ids $(grep -A3 '"target_layer_ids"' "$O/accept-$name-config.json" | tr -d ' \n' | cut -c1-60)"
    say "$name: $(ns journalctl -u $u -o short-iso --no-pager | grep 'auxiliary layers' | tail -n 1 | cut -c1-220)"
    play "accept-$name-bench" "$REPO/playbooks/benchmark.yml" -e serving_benchmark_force=true \
        -e serving_benchmark_plot=false -e serving_benchmark_report_dir="$O/accept-$name"
    grep -hE '^20|per-position' "$O"/accept-"$name"/*/benchmarks.txt 2>/dev/null | tail -n 2 | tee -a "$S"
}
stage_derived() { accept derived; }
stage_offbyone() { accept offbyone '{"drafter_target_layer_ids": [2, 6], "vllm_service_benchmark_gate": false}'; }
stage_guess() { accept guess '{"drafter_target_layer_ids": [1, 7], "vllm_service_benchmark_gate": false}'; }
stage_restore() {
    say "== back to the derived ids, the gate on (against the reference converge1 recorded)"
    play restore "$REPO/playbooks/site.yml"
    grep -E 'reference|mean acceptance length|rolled back' "$O/restore.log" | head -4 | cut -c1-400 | tee -a "$S"
    say "restore: $(ns journalctl -u vllm-tiny.service -o short-iso --no-pager | grep 'auxiliary layers' | tail -n 1 | cut -c1-220)"
}
for st in $STAGES; do "stage_$st" || { say "stage $st FAILED"; [ "$st" = setup ] && break; }; done
say "done"
