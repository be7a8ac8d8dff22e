# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The causes of a failed vLLM start the root-cause reader (log.py) knows, each with its hint for the operator.

A table: "id", "pattern" (matched against "<type>: <message>" of the cause), "hint", optionally "context" /
"context_hint" (a line elsewhere in the log that changes the hint) and "problems" (the known-problems rows the cause
can be). The vLLM versions a hint names come from the versions table. Stdlib only: it runs on the managed node.
"""
from __future__ import absolute_import, division, print_function
__metaclass__ = type

from ansible_collections.inference.gpu_host.plugins.module_utils._vllm import versions as vllm_versions

# The series ("0.26", "0.34") from which vLLM runs a mixed sliding/full drafter on V2 itself, and has V2 only.
_MIXED_ON_V2, _V2_ONLY = (vllm_versions.first_release(serves).rsplit(".", 1)[0] for serves in (
    lambda row: row["sliding_window"] == "mixed_needs_v2_runner", lambda row: row["model_runner_default"] == "v2_only"))

# Known causes -> hint. First match on "<type>: <message>" wins, so specific before general.
# Hints may use {1}, {2} ... for the pattern's groups. "problems": the rows of the known-problems table
# (module_utils/_vllm/known_problems.py, docs/vllm-versions.md) this cause can be; the hint names them.
KNOWN_CAUSES = (
    {
        "id": "flash_attn_ops",
        "pattern": r"No module named '?flash_attn\.ops",
        "hint": "flash-attn-4 or a leftover flash_attn directory shadows flash-attn 2; "
                "run the python_env role's flash-attn guard (policy remove)",
        "problems": ("flash-attn-4-alone-fatal",),
    },
    {
        "id": "missing_module",
        "pattern": r"No module named '?([\w.]+)'?",
        "hint": "Python module {1} is missing from the environment vLLM runs in: install it in the vLLM venv "
                "(python_env role) and check that the unit's ExecStart uses that venv's python",
    },
    {
        "id": "cuda_oom",
        "pattern": r"CUDA out of memory|OutOfMemoryError|CUDA error: out of memory|cudaErrorMemoryAllocation",
        "hint": "GPU memory exhausted: lower gpu_memory_utilization, max_model_len or max_num_seqs, or use more GPUs "
                "(tensor_parallel_size); check with nvidia-smi that no other process holds GPU memory; a DFlash2 "
                "drafter's codebooks take about 0.5 GiB on every GPU",
        "problems": ("dflash2-codebooks-out-of-memory",),
    },
    {
        # z-lab/dflash issue 146, vllm-project/vllm issue 55279: before nccl, whose watchdog repeats the error.
        "id": "illegal_memory_access",
        "pattern": r"an illegal memory access was encountered|cudaErrorIllegalAddress",
        "hint": "a CUDA illegal memory access killed the engine: with a DFlash drafter and CUDA graphs under 16 or "
                "more concurrent requests run it with --enforce-eager (vllm_service_extra_args) or fewer "
                "--max-num-seqs; with a DFlash2 drafter under sampling, greedy requests avoid it; else check that "
                "vLLM, torch and the driver belong together",
        "problems": ("dflash-cuda-graphs-illegal-address", "dflash2-sampling-out-of-bounds"),
    },
    {
        "id": "memory_utilization_too_high",
        "pattern": r"is less than desired (?:CPU|GPU) memory utilization",
        "hint": "gpu_memory_utilization asks for more memory than is free (on the CPU build it is a fraction of "
                "host RAM): "
                "lower gpu_memory_utilization or free memory held by other processes",
    },
    {
        "id": "kv_cache_allocation",
        "pattern": r"on kv cache allocation is less than requested memory for kv",
        "hint": "the KV cache asked for (kv_cache_memory_bytes / VLLM_CPU_KVCACHE_SPACE, or what "
                "gpu_memory_utilization leaves after the model) does not fit in free memory, or nothing is left "
                "for it: lower the explicit size, "
                "or set gpu_memory_utilization so that model plus KV cache fit",
    },
    {
        "id": "kv_cache_too_small_for_max_model_len",
        "pattern": r"larger than the available KV cache memory|No available memory for the cache blocks",
        "hint": "the KV cache left after loading the model cannot hold one max_model_len sequence: raise "
                "gpu_memory_utilization or lower max_model_len",
    },
    {
        "id": "batched_tokens_below_max_model_len",
        "pattern": r"max_num_batched_tokens \(\d+\) is smaller than max_model_len",
        "hint": "max_num_batched_tokens must be >= max_model_len unless chunked prefill is on: raise "
                "max_num_batched_tokens or lower max_model_len",
    },
    {
        # Triton compiles a C launcher for each kernel at its first use (triton/runtime/build.py: CC, else gcc,
        # else clang); seen on the GPU test host (tests/gpu/README.md, run 7).
        "id": "no_c_compiler",
        "pattern": r"Failed to find C compiler",
        "hint": "Triton (vLLM's sampler and spec-decode kernels) compiles a C launcher on the host at first use and "
                "found no gcc or clang: keep build-essential and python3-dev in base_packages (the base role's "
                "default), or set CC in vllm_service_environment",
    },
    {
        "id": "max_model_len_too_long",
        "pattern": r"max_model_len \(\d+\) is greater than the derived max_model_len",
        "hint": "max_model_len exceeds the model's max_position_embeddings: lower max_model_len (or set "
                "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 only if the model's rope scaling allows it)",
    },
    {
        "id": "no_gpu",
        "pattern": r"Failed to infer device type|No CUDA GPUs are available|Found no NVIDIA driver|"
                   r"CUDA driver initialization failed|cudaErrorNoDevice|no CUDA-capable device",
        "hint": "vLLM found no usable GPU: the CUDA build cannot start without one; check nvidia-smi inside the host/"
                "container, the GPU passthrough (lxc_gpu role: /dev/nvidia* nodes and cgroup allow rules) and "
                "CUDA_VISIBLE_DEVICES in the environment file",
    },
    {
        "id": "nccl",
        "pattern": r"NCCL error|nccl\w*Error|ncclInternalError|ncclSystemError|ncclUnhandledCudaError|NCCL WARN|"
                   r"ProcessGroupNCCL",
        "hint": "NCCL (the GPUs' communication for tensor parallelism) failed: check that /dev/shm is large "
                "enough, that "
                "every GPU in CUDA_VISIBLE_DEVICES is passed through, the NCCL_* settings in the environment file, "
                "and try NCCL_P2P_DISABLE=1 to rule out peer-to-peer",
    },
    {
        "id": "unsupported_attention",
        "pattern": r"head_size not supported|[Hh]ead size \d+ is not supported|No valid attention backend|"
                   r"Selected backend \S+ is not valid for this configuration|mixed sliding/full attention require",
        "hint": "no attention backend accepts this model's attention configuration (head size, dtype, sliding "
                "window, drafter layer types): check head_dim, dtype, the attention backend setting and, for DFlash "
                "drafters with sliding layers, that VLLM_USE_V2_MODEL_RUNNER is unset or 1 (vLLM %s+ picks the "
                "V2 runner for them itself, %s+ has no other; docs/vllm-versions.md)" % (_MIXED_ON_V2, _V2_ONLY),
        "problems": ("dflash-mixed-sliding-not-implemented", "dflash-mixed-sliding-needs-v2-runner"),
    },
    {
        # vllm/platforms/interface.py validate_environ, where the V1 model runner is removed (model_runner_default
        # v2_only in the versions table).
        "id": "v1_runner_removed",
        "pattern": r"VLLM_USE_V2_MODEL_RUNNER=\S* is no longer supported",
        "hint": "this vLLM (%s+) has only the V2 model runner and refuses VLLM_USE_V2_MODEL_RUNNER other than 1: "
                "remove it from vllm_service_environment (the role refuses it there for such a vLLM; "
                "docs/vllm-versions.md)" % _V2_ONLY,
    },
    {
        "id": "port_in_use",
        "pattern": r"Address already in use|\[Errno 98\]|EADDRINUSE",
        "hint": "the port is already taken (an older vLLM still running?): find the holder with "
                "`ss -ltnp 'sport = :PORT'`, stop it, or choose another port",
    },
    {
        "id": "weight_shape_mismatch",
        "pattern": r"Tried to load weights of size torch\.Size\(\[([\d, ]+)\]\)\s*to a parameter of size "
                   r"torch\.Size\(\[([\d, ]+)\]\)|DFlash drafter expects \d+ concatenated aux hidden features",
        "hint": "a checkpoint tensor ([{1}]) does not match the layer built from config.json ([{2}]); for a DFlash "
                "drafter fc.weight's width must be len(dflash_config.target_layer_ids) x the target's hidden_size: "
                "regenerate the drafter's config.json from its safetensors header (drafter role)",
        "problems": ("dflash-fc-width-late-error",),
    },
    {
        "id": "unrecognized_argument",
        "pattern": r"unrecognized arguments: (.*)",
        "hint": "vLLM's argument parser rejected {1}: a misspelt flag, or one this vLLM version does not have; "
                "fix the flag (or the extra args list) to what `--help` of the installed vLLM lists",
    },
    {
        "id": "invalid_argument",
        "pattern": r"^argument (--?[\w-]+)",
        "hint": "vLLM's argument parser rejected the value of {1}: check its type and choices in `--help` "
                "of the installed vLLM",
    },
    {
        "id": "invalid_config_value",
        "pattern": r"^([\w.\[\]-]+): Input should be",
        "hint": "vLLM's configuration rejected the value of {1} (wrong type or out of range): fix the variable that "
                "renders it (a flag, or a key of a JSON option such as speculative_config)",
    },
    {
        "id": "model_not_found",
        "pattern": r"does not appear to have a file named config\.json|Invalid repository ID or local directory|"
                   r"Repo id must be in the form|Can't load the configuration of",
        "hint": "the model (or drafter) path does not exist on the host or holds no config.json: check the path "
                "and that the drafter role wrote its config.json",
    },
    {
        "id": "token_id_out_of_range",
        "pattern": r"index out of (?:bounds|range)|indexSelectLargeIndex|device-side assert",
        "hint": "an index out of range at run time, typically a token id >= the model's vocab_size (tokenizer and "
                "config.json disagree) or a drafter's mask_token_id outside the vocabulary",
    },
    {
        # vllm._C (or _C_AVX2/_C_AVX512) failed to import earlier, logged only as a WARNING; the fatal
        # error later is an AttributeError on torch.ops._C. The warning says why (e.g. libnuma.so.1 missing).
        "id": "vllm_extension_not_loaded",
        "pattern": r"'_OpNamespace' '_C\w*' object has no attribute|No module named '?vllm\._C",
        "context": r"Failed to import from (vllm\._C\w*)(?::| with) ?(.*)$",
        "hint": "vLLM's compiled ops did not load; look for 'Failed to import from vllm._C' earlier in the log: a "
                "missing system library (vllm-cpu needs libnuma1) or a torch other than the one this vLLM was "
                "built for",
        "context_hint": "vLLM's compiled ops ({1}) did not load: {2}; install the missing system library (vllm-cpu "
                        "needs the libnuma1 package) or the torch version this vLLM was built for (python_env lock)",
    },
    {
        "id": "no_cxx_compiler",
        "pattern": r"No working C\+\+ compiler found|InvalidCxxCompiler",
        "hint": "torch.compile (vLLM's default on the CPU backend) needs a C++ compiler on the host: install g++ "
                "(Debian: the g++ package), or start vLLM with --enforce-eager to skip compilation",
    },
    {
        "id": "cuda_library_mismatch",
        "pattern": r"lib\w+\.so(?:\.[\d]+)*: cannot open shared object file|undefined symbol",
        "hint": "vLLM's compiled extensions do not match the installed torch/CUDA libraries: reinstall vLLM with "
                "the torch version it pins (python_env lock), and check the driver supports that CUDA",
    },
    {
        "id": "remote_code",
        "pattern": r"trust_remote_code",
        "hint": "the model needs its own code: pass --trust-remote-code (trust_remote_code: true) if you trust it",
    },
    {
        "id": "killed",
        "pattern": r"code=killed, status=9/KILL",
        "hint": "the process was killed with SIGKILL: most often the kernel's OOM killer (see `journalctl -k | grep -i "
                "'out of memory'`); lower memory use or give the host/container more RAM",
    },
    {
        "id": "crashed",
        "pattern": r"code=dumped, status=\d+/(\w+)|Fatal Python error|Segmentation fault",
        "hint": "the process crashed in native code; read the lines before the crash, and check that vLLM, torch "
                "and the driver versions belong together",
    },
    {
        "id": "exec_failed",
        "pattern": r"status=203/EXEC|Failed at step EXEC|Failed to execute",
        "hint": "systemd could not run ExecStart's program: check the venv path in the unit and that the file exists "
                "and is executable",
    },
)
