#!/usr/bin/env bash
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
#
# The GPU proof of issue 10 (and issue 11's GPU part, and issue 16's with VLLM_VERSION=0.26.0), run on an
# air-gapped NVIDIA host with the wheel set that tests/gpu/prepare_wheels.sh made on a connected machine.
# Uses the collection's own modules, from this clone.
# See tests/gpu/README.md. Nothing here needs a registry or the internet.
#
#   tests/gpu/run_on_gpu.sh                  # everything, written under $OUT_DIR
#
# Environment (all optional):
#   VLLM_VERSION    the vLLM of the main venv (steps setup, 3, 1): its wheel must be in WHEELHOUSE  [0.22.0]
#   WHEELHOUSE      directory of .whl files (vLLM $VLLM_VERSION set + ansible-core + flash-attn-4) [$WORK/wheels]
#   PARTS_DIR       instead of WHEELHOUSE: directory holding wheels-$VLLM_VERSION.tar.part-* to unpack
#   WHEELHOUSE_020  directory of the vLLM 0.20.1 extra wheels (step 5 runs only when it exists)  [$WORK/wheels-020]
#   PARTS_DIR_020   instead of WHEELHOUSE_020: directory holding wheels-0.20.1-extra.tar.part-*
#   OUT_DIR         where the evidence goes                                                      [$WORK/out]
#   WORK            scratch directory (venvs, tiny models)                                      [/root/gpu-proof]
#   PYTHON          the host's Python with torch 2.11.0+cu130                                   [python3]
#   STEPS           which steps, in this order: setup 4 3 1 2 5 6                               [setup 4 3 1 5]
#                   (step 2 runs inside step 1: it reads step 1's failing log; step 6, DFlash2, needs a vLLM
#                   >= 0.28.0 as VLLM_VERSION, whose wheel set carries its own torch)
#   PORT            the tiny server's port                                                      [8000]
#   FAIL_TIMEOUT    seconds to wait for the broken start (step 1, before the guard) to fail      [300]
#   READY_TIMEOUT   seconds to wait for a good start to be ready                                 [420]
#   SERVER_ENV_JSON the server's environment as a JSON object, given to the role as vllm_service_environment;
#                   its environment file's lines (the role's filter) are applied to every start      [{}]
#                   (run 5: {"VLLM_USE_FLASHINFER_SAMPLER": "0"}, see README)
set -uo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
WORK="${WORK:-/root/gpu-proof}"
OUT_DIR="${OUT_DIR:-$WORK/out}"
PYTHON="${PYTHON:-python3}"
STEPS="${STEPS:-setup 4 3 1 5}"
VLLM_VERSION="${VLLM_VERSION:-0.22.0}"
PORT="${PORT:-8000}"
FAIL_TIMEOUT="${FAIL_TIMEOUT:-300}"
READY_TIMEOUT="${READY_TIMEOUT:-420}"
SERVER_ENV_JSON="${SERVER_ENV_JSON:-{\}}"
WHEELHOUSE="${WHEELHOUSE:-$WORK/wheels}"
WHEELHOUSE_020="${WHEELHOUSE_020:-$WORK/wheels-020}"
VENV="$WORK/vllm-venv"          # the python_env venv: vLLM $VLLM_VERSION (+ flash-attn-4 for step 1's first start)
VENV020="$WORK/vllm020-venv"    # vLLM 0.20.1, ct129's version (step 5)
AVENV="$WORK/ansible-venv"      # the controller: ansible-core, apart from the venv it manages
TINY="$WORK/tiny"
PB="$REPO/tests/gpu/playbooks"
mkdir -p "$WORK" "$OUT_DIR"
SUMMARY="$OUT_DIR/summary.txt"

say() { printf '%s %s\n' "$(date -u +%H:%M:%S)" "$*" | tee -a "$SUMMARY"; }
# Record a command and its output: cmd <name> <argv...> -> $OUT_DIR/<name>.txt (command line first).
cmd() {
    local name="$1"; shift
    { printf '$'; printf ' %q' "$@"; printf '\n'; } > "$OUT_DIR/$name.txt"
    "$@" >> "$OUT_DIR/$name.txt" 2>&1
    local rc=$?
    printf '[rc=%s]\n' "$rc" >> "$OUT_DIR/$name.txt"
    return $rc
}

export LC_ALL=C.UTF-8 LANG=C.UTF-8 PYTHONUNBUFFERED=1
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1
export ANSIBLE_CONFIG="$REPO/ansible.cfg" ANSIBLE_COLLECTIONS_PATH="$REPO/.collections"
export ANSIBLE_FORCE_COLOR=0 ANSIBLE_NOCOLOR=1

playbook() {  # playbook <logname> <file> [extra args]: ansible-playbook -c local against localhost
    local name="$1" file="$2"; shift 2
    cmd "$name" "$AVENV/bin/ansible-playbook" -c local -i localhost, \
        -e "ansible_python_interpreter=$AVENV/bin/python" -e "out_dir=$OUT_DIR" -e "tiny_dir=$TINY" \
        "$PB/$file" "$@"
}

unpack_parts() {  # unpack_parts <parts dir> <dest>
    mkdir -p "$2"
    cat "$1"/*.tar.part-* | tar -x -C "$2"
}

make_venv() {  # make_venv <dir>: a venv that also sees the host image's site-packages (torch 2.11.0+cu130)
    local dir="$1" image_site
    image_site="$("$PYTHON" -c 'import site; print(site.getsitepackages()[0])')"
    rm -rf "$dir"
    # The image's python3 is itself a venv, so --system-site-packages would not see its torch: a .pth does.
    "$PYTHON" -m venv "$dir" || return 1
    local site
    site="$("$dir/bin/python" -c 'import site; print(site.getsitepackages()[0])')"
    echo "$image_site" > "$site/zz-host-image-site-packages.pth"
}

venv_site() { "$1/bin/python" -c 'import site; print(site.getsitepackages()[0])'; }

pip_offline() {  # pip_offline <venv> <wheel files...>
    local venv="$1"; shift
    "$venv/bin/python" -m pip install -q --no-index --no-deps --no-compile --disable-pip-version-check "$@"
}

flash_attn_state() {  # flash_attn_state <name>: what Python and the file system say about flash_attn
    cmd "$1" bash -c "ls -la '$(venv_site "$VENV")/flash_attn' 2>&1 | head -20; ls -d '$(venv_site "$VENV")'/flash_attn*dist-info 2>&1;
        '$VENV/bin/python' -c 'import importlib.util as u; s = u.find_spec(\"flash_attn\"); print(\"find_spec(flash_attn) =\", s)'"
}

SERVER_PID=""
start_server() {  # start_server <log> <argv json file>: the rendered command line, in the foreground's stead
    local log="$1" argv_file="$2"
    local -a argv envs=()
    mapfile -d '' argv < <("$PYTHON" -c 'import json,sys; sys.stdout.write("\0".join(json.load(open(sys.argv[1]))) + "\0")' "$argv_file")
    # The environment file the role would write beside the unit (<argv>.env, from render_command.yml): its
    # KEY=VALUE lines, unquoted as systemd's EnvironmentFile= does.
    if [ -s "${argv_file%.json}.env" ]; then
        mapfile -d '' envs < <("$PYTHON" -c 'import shlex,sys
for line in open(sys.argv[1]):
    line = line.strip()
    if line and not line.startswith("#"):
        key, _, value = line.partition("=")
        sys.stdout.write("%s=%s\0" % (key, "".join(shlex.split(value))))' "${argv_file%.json}.env")
    fi
    { printf '$'; [ ${#envs[@]} -gt 0 ] && printf ' env' && printf ' %q' "${envs[@]}"; printf ' %q' "${argv[@]}"; printf '\n'; } > "${log%.log}.cmd.txt"
    setsid env "${envs[@]}" "${argv[@]}" > "$log" 2>&1 < /dev/null &
    SERVER_PID=$!
    say "started pid $SERVER_PID: ${argv[*]}"
}

stop_server() {
    [ -n "$SERVER_PID" ] || return 0
    if kill -0 "$SERVER_PID" 2>/dev/null; then
        kill -TERM -- "-$SERVER_PID" 2>/dev/null
        for _ in $(seq 60); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 1; done
        kill -KILL -- "-$SERVER_PID" 2>/dev/null
    fi
    wait "$SERVER_PID" 2>/dev/null
    SERVER_PID=""
}
trap stop_server EXIT

serve_and_wait() {  # serve_and_wait <name> <argv json> <timeout>: start, wait with vllm_wait_ready, keep metrics, stop
    local name="$1" argv_file="$2" timeout="$3" t0 t1 drafter ready
    local -a check=()
    # The drafter of the speculative config: vllm_wait_ready's drafter_dir compares the captured layers with it.
    drafter="$("$PYTHON" -c 'import json,sys; a=json.load(open(sys.argv[1]))
print(json.loads(a[a.index("--speculative-config") + 1])["model"])' "$argv_file" 2>/dev/null)"
    [ -n "$drafter" ] && check=(-e "drafter_dir=$drafter")
    t0=$(date +%s)
    start_server "$OUT_DIR/$name.log" "$argv_file"
    playbook "$name-wait_ready" wait_ready.yml -e "server_pid=$SERVER_PID" -e "server_log=$OUT_DIR/$name.log" \
        -e "server_port=$PORT" -e "ready_timeout=$timeout" -e "result_name=$name-wait_ready" "${check[@]}"
    t1=$(date +%s)
    ready="$("$PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1])).get("ready") is True)' \
        "$OUT_DIR/$name-wait_ready.json" 2>/dev/null)"
    if ! kill -0 "$SERVER_PID" 2>/dev/null; then
        say "$name: server exited after $((t1 - t0)) s"
    elif [ "$ready" != True ]; then
        # (run 4 printed "server up" here: its process was alive, but wait_ready had timed out)
        say "$name: process alive but NOT ready after $((t1 - t0)) s (wait_ready: see $name-wait_ready.json)"
    else
        say "$name: server up after $((t1 - t0)) s (wait_ready: see $name-wait_ready.json)"
        cmd "$name-completion" curl -sS --max-time 120 "http://127.0.0.1:$PORT/v1/completions" \
            -H 'Content-Type: application/json' \
            -d '{"model": "tiny", "prompt": "the water of the", "max_tokens": 16, "temperature": 0}'
        cmd "$name-metrics" curl -sS --max-time 30 "http://127.0.0.1:$PORT/metrics"
        grep -E '^vllm:spec_decode' "$OUT_DIR/$name-metrics.txt" > "$OUT_DIR/$name-spec_decode.txt"
    fi
    stop_server
    # V1 logs 'Using auxiliary layers from speculative config', V2 'Using Eagle3 auxiliary layers from config'.
    grep -nE 'auxiliary layers from|Resolved architecture|attention backend|Model Runner|top-p & top-k sampling|Building JIT module|No module named|undefined symbol|Engine core initialization failed|Application startup complete' \
        "$OUT_DIR/$name.log" | sed 's/\x1b\[[0-9;]*m//g' > "$OUT_DIR/$name-keylines.txt"
    sed 's/^/    /' "$OUT_DIR/$name-keylines.txt" | head -20 | tee -a "$SUMMARY"
}

step_setup() {
    say "== setup: host facts, wheels, venvs"
    cmd host-nvidia-smi nvidia-smi
    cmd host-nvidia-smi-query nvidia-smi --query-gpu=index,name,uuid,compute_cap,driver_version,memory.total --format=csv
    cmd host-versions bash -c "uname -a; cat /etc/os-release | head -4; cat /proc/driver/nvidia/version;
        $PYTHON -V; $PYTHON -c 'import torch; print(\"torch\", torch.__version__, \"cuda\", torch.version.cuda, torch.cuda.get_device_name(0), torch.cuda.get_device_capability(0))'"
    if [ -n "${PARTS_DIR:-}" ]; then unpack_parts "$PARTS_DIR" "$WHEELHOUSE" || return 1; fi
    if [ -n "${PARTS_DIR_020:-}" ] && [ -d "$PARTS_DIR_020" ]; then unpack_parts "$PARTS_DIR_020" "$WHEELHOUSE_020"; fi
    ls "$WHEELHOUSE" > "$OUT_DIR/wheelhouse-$VLLM_VERSION.txt"
    make_venv "$AVENV" && make_venv "$VENV" || { say "venv creation failed"; return 1; }
    local -a ans=() rest=()
    local w
    for w in "$WHEELHOUSE"/*.whl; do
        case "$(basename "$w")" in
            ansible_core-*|resolvelib-*) ans+=("$w") ;;
            flash_attn_4-*) ;;
            cryptography-*|cffi-*|pycparser-*) ans+=("$w"); rest+=("$w") ;;
            *) rest+=("$w") ;;
        esac
    done
    local t0; t0=$(date +%s)
    cmd setup-pip-ansible pip_offline "$AVENV" "${ans[@]}" || return 1
    if compgen -G "$WHEELHOUSE/vllm-$VLLM_VERSION-*.whl" > /dev/null; then
        cmd setup-pip-vllm pip_offline "$VENV" "${rest[@]}" || return 1
        say "installed ${#rest[@]} wheels into $VENV and ${#ans[@]} into $AVENV in $(( $(date +%s) - t0 )) s"
    else  # a wheelhouse for step 5 alone (vLLM 0.20.1): no main venv
        say "no vllm $VLLM_VERSION wheel in $WHEELHOUSE: only $AVENV (${#ans[@]} wheels) installed"
    fi
    cmd setup-versions bash -c "'$AVENV/bin/ansible-playbook' --version; '$VENV/bin/python' -m pip list --disable-pip-version-check 2>/dev/null \
        | grep -iE '^(vllm|torch|transformers|tokenizers|flashinfer-python|triton|flash)[ -]'"
    tail -n +2 "$OUT_DIR/setup-versions.txt" | tee -a "$SUMMARY"
    cmd setup-tiny-models "$PYTHON" "$REPO/playbooks/files/make_tiny_models.py" \
        --target "$TINY/target" --drafter "$TINY/drafter/model.safetensors"
}

step4() {
    say "== step 4: nvidia_gpu_info (flash_attn_major 2 and 4)"
    playbook step4-gpu_facts gpu_facts.yml
    grep -A8 '"msg": \[' "$OUT_DIR/step4-gpu_facts.txt" | tee -a "$SUMMARY"
}

step3_config() {  # the drafter config for vLLM $VLLM_VERSION and the command line (used by steps 1 and 3)
    say "== step 3: dflash_drafter_config for vllm $VLLM_VERSION, then the vllm_service command line"
    playbook step3-dflash_drafter_config drafter_config.yml -e "vllm_version=$VLLM_VERSION"
    cp "$TINY/drafter/config.json" "$OUT_DIR/step3-drafter-config.json"
    playbook step3-render_command render_command.yml -e "venv=$VENV" -e "server_port=$PORT" -e result_name=step3-vllm_service-argv \
        -e "{\"server_env\": $SERVER_ENV_JSON}"
    [ -s "$OUT_DIR/step3-vllm_service-argv.json" ] || { say "no argv rendered"; return 1; }
    tail -c 600 "$OUT_DIR/step3-vllm_service-argv.json" | tee -a "$SUMMARY"
}

step1() {
    # vLLM < 0.24.0 dies on flash-attn-4 alone (No module named 'flash_attn.ops'); 0.24.0+ imports the rotary
    # kernel inside suppress(ModuleNotFoundError) (vllm-project/vllm PR 42679): whichever happens is recorded.
    say "== step 1 (+2): flash-attn-4 alone in the vLLM $VLLM_VERSION venv -> served or not; guard (policy remove) -> serves"
    cmd step1-pip-install-flash-attn-4 pip_offline "$VENV" "$WHEELHOUSE"/flash_attn_4-*.whl
    flash_attn_state step1-flash_attn-before
    serve_and_wait step1-before "$OUT_DIR/step3-vllm_service-argv.json" "$FAIL_TIMEOUT"
    say "== step 2: the root cause of that log (module_utils/_vllm/log.py and vllm_failure_cause)"
    cmd step2-root_cause "$PYTHON" "$REPO/tests/gpu/root_cause.py" "$OUT_DIR/step1-before.log"
    grep -E '"(cause|hint|hint_id|exception_type|process|message)"' "$OUT_DIR/step2-root_cause.txt" | tee -a "$SUMMARY"
    playbook step1-guard-report flash_attn_guard.yml -e "venv=$VENV" -e policy=report -e result_name=step1-flash_attn_guard-report
    playbook step1-guard-remove flash_attn_guard.yml -e "venv=$VENV" -e policy=remove -e result_name=step1-flash_attn_guard-remove
    grep -A6 '"msg": \[' "$OUT_DIR/step1-guard-remove.txt" | tee -a "$SUMMARY"
    flash_attn_state step1-flash_attn-after-guard
    # The measured trap: `pip uninstall flash-attn-4` leaves an empty flash_attn/ that Python still finds.
    cmd step1-leftover-reinstall pip_offline "$VENV" "$WHEELHOUSE"/flash_attn_4-*.whl
    cmd step1-leftover-pip-uninstall "$VENV/bin/python" -m pip uninstall -y flash-attn-4
    flash_attn_state step1-flash_attn-after-pip-uninstall
    playbook step1-guard-leftover flash_attn_guard.yml -e "venv=$VENV" -e policy=remove -e result_name=step1-flash_attn_guard-leftover
    grep -A6 '"msg": \[' "$OUT_DIR/step1-guard-leftover.txt" | tee -a "$SUMMARY"
    flash_attn_state step1-flash_attn-after-guard-leftover
    playbook step1-guard-recheck flash_attn_guard.yml -e "venv=$VENV" -e policy=fail -e result_name=step1-flash_attn_guard-recheck
    say "== step 1/3: the same command after the guard"
    serve_and_wait step1-after "$OUT_DIR/step3-vllm_service-argv.json" "$READY_TIMEOUT"
    cat "$OUT_DIR/step1-after-spec_decode.txt" 2>/dev/null | tee -a "$SUMMARY"
    tail -n 3 "$OUT_DIR/step1-after-completion.txt" 2>/dev/null | tee -a "$SUMMARY"
    # What the collection's log reader finds in both starts: root cause (if any) and the captured-layers line.
    cmd step1-log_reading "$PYTHON" "$REPO/tests/gpu/root_cause.py" "$OUT_DIR/step1-before.log" "$OUT_DIR/step1-after.log"
    grep -E '"(line|runner|layers|found)"' "$OUT_DIR/step1-log_reading.txt" | tee -a "$SUMMARY"
}

step5() {
    if [ ! -d "$WHEELHOUSE_020" ]; then say "== step 5 skipped: no $WHEELHOUSE_020"; return 0; fi
    say "== step 5: vLLM 0.20.1 with the drafter config written under layer_id_policy compensate"
    ls "$WHEELHOUSE_020" > "$OUT_DIR/wheelhouse-0.20.1-extra.txt"
    make_venv "$VENV020" || return 1
    local -a set020=() w
    local base name
    # The 0.22.0 set, with the 0.20.1-specific wheels (wheels-0.20.1-extra.txt: vllm, flashinfer-python, llguidance)
    # instead of its own; 0.22.0-only kernels packages are left out.
    for w in "$WHEELHOUSE_020"/*.whl; do set020+=("$w"); done
    for w in "$WHEELHOUSE"/*.whl; do
        base="$(basename "$w")"; name="${base%%-*}"
        case "$name" in ansible_core|resolvelib|flash_attn_4|tokenspeed_mla|tokenspeed_triton|humming_kernels) continue ;; esac
        compgen -G "$WHEELHOUSE_020/${name}-*.whl" > /dev/null || set020+=("$w")
    done
    cmd step5-pip-vllm020 pip_offline "$VENV020" "${set020[@]}" || return 1
    cmd step5-versions bash -c "'$VENV020/bin/python' -m pip list --disable-pip-version-check 2>/dev/null | grep -iE '^(vllm|flashinfer-python|nvidia-cutlass-dsl) '"
    mkdir -p "$TINY/drafter020"
    ln -sf "$TINY/drafter/model.safetensors" "$TINY/drafter020/model.safetensors"
    playbook step5-dflash_drafter_config drafter_config.yml -e vllm_version=0.20.1 -e layer_id_policy=compensate \
        -e "drafter_dir=$TINY/drafter020" -e result_name=step5-dflash_drafter_config
    cp "$TINY/drafter020/config.json" "$OUT_DIR/step5-drafter-config.json"
    playbook step5-render_command render_command.yml -e "venv=$VENV020" -e "server_port=$PORT" \
        -e "drafter_dir=$TINY/drafter020" -e result_name=step5-vllm_service-argv
    serve_and_wait step5-vllm020-compensated "$OUT_DIR/step5-vllm_service-argv.json" "$READY_TIMEOUT"
}

step6() {  # issue 16: a tiny DFlash2 drafter, its config derived by the module, served by vLLM $VLLM_VERSION
    say "== step 6: DFlash2 drafter for vllm $VLLM_VERSION: derived config, the role's command line, served"
    cmd step6-tiny-dflash2 "$PYTHON" "$REPO/playbooks/files/make_tiny_models.py" \
        --target "$TINY/target" --drafter "$TINY/drafter2/model.safetensors" --drafter-format dflash2
    # The tensors give conv_kernel_size, conv_group_size and selector_rank; selector_top_k and is_causal they cannot.
    playbook step6-dflash_drafter_config drafter_config.yml -e "vllm_version=$VLLM_VERSION" \
        -e "drafter_dir=$TINY/drafter2" -e selector_top_k=4 -e is_causal=false -e result_name=step6-dflash_drafter_config
    cp "$TINY/drafter2/config.json" "$OUT_DIR/step6-drafter-config.json"
    playbook step6-render_command render_command.yml -e "venv=$VENV" -e "server_port=$PORT" \
        -e "drafter_dir=$TINY/drafter2" -e result_name=step6-vllm_service-argv -e "{\"server_env\": $SERVER_ENV_JSON}"
    [ -s "$OUT_DIR/step6-vllm_service-argv.json" ] || { say "no argv rendered"; return 1; }
    serve_and_wait step6-dflash2 "$OUT_DIR/step6-vllm_service-argv.json" "$READY_TIMEOUT"
    cat "$OUT_DIR/step6-dflash2-spec_decode.txt" 2>/dev/null | grep -v _created | tee -a "$SUMMARY"
    cmd step6-log_reading "$PYTHON" "$REPO/tests/gpu/root_cause.py" "$OUT_DIR/step6-dflash2.log"
    grep -E '"(line|runner|found|cause|message)"' "$OUT_DIR/step6-log_reading.txt" | tee -a "$SUMMARY"
}

say "repo $REPO, out $OUT_DIR, steps: $STEPS"
for s in $STEPS; do
    case "$s" in
        setup) step_setup || { say "setup failed"; exit 1; } ;;
        4) step4 ;;
        3) step3_config ;;
        1) step1 ;;
        2) [ -s "$OUT_DIR/step1-before.log" ] && cmd step2-root_cause "$PYTHON" "$REPO/tests/gpu/root_cause.py" "$OUT_DIR/step1-before.log" ;;
        5) step5 ;;
        6) step6 ;;
        *) say "unknown step $s" ;;
    esac
done
say "done"
