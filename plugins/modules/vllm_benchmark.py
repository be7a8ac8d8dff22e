#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
---
module: vllm_benchmark
short_description: Benchmark a served vLLM instance with vLLM's own client, record the figures and gate on them
version_added: "0.2.0"
description:
  - Runs C(vllm bench serve) (vLLM's benchmark client, from the serving venv O(venv) with its own python, so the venv
    stays exactly its lock) against the instance at O(url) - three short runs at concurrency 1 (the single-request
    tok/s is their median, their spread is kept) and one at O(concurrency) - with the fixed ShareGPT-format prompt
    file O(prompts), greedy sampling, a fixed output length and no Hub access.
  - Reads C(/metrics) before and after each run; the deltas give the draft tokens, the accepted tokens, the mean
    acceptance length (1 + accepted / drafts) and the acceptance at each draft position.
  - The API key is read from the unit's environment file O(env_file) (C(VLLM_API_KEY)) and handed to the client as
    C(OPENAI_API_KEY) in its environment - never on a command line, never in the result.
  - The figures are kept under O(results_dir), one file per key (venv generation, drafter fingerprint, unit hash).
    When the key already has a record, nothing is sent (O(force) measures again).
  - With O(gate), the new figures are compared with the instance's reference (never simply the last run) and a fall
    beyond O(acceptance_drop) or O(tok_s_drop) fails. With O(baseline), the run is the plain target's instead, which
    the caller serves beforehand without C(--speculative-config) (RV(baseline_plan)).
  - The method, the records, the gate's rules and what bad input gets - C(docs/benchmark.md) and C(docs/bad-input.md)
    in the collection; the decisions are in C(plugins/module_utils/_bench/).
author:
  - inference.gpu_host contributors (!UNKNOWN)
extends_documentation_fragment:
  - inference.gpu_host._attributes
  - inference.gpu_host._attributes.CHECK_MODE_DIFF_MODE
  - inference.gpu_host._attributes.PLATFORM_LINUX
attributes:
  check_mode:
    details: Check mode sends no load - it returns the recorded figures and whether a run would measure.
  diff_mode:
    details: The diff is the record under the key, before and after the run.
  idempotent:
    details: A key already recorded is not measured again (changed=false) unless O(force).
options:
  url:
    description: The instance's OpenAI URL as the vllm_service record holds it (C(http://host:port/v1)).
    type: str
    required: true
  served_model_name:
    description: The model name the server answers to.
    type: str
    required: true
  tokenizer:
    description: The target model's directory on the host (the client counts tokens with its tokenizer).
    type: path
    required: true
  venv:
    description: The serving venv (its real generation directory, or the link to it); its python runs the client.
    type: path
    required: true
  unit_path:
    description: The instance's systemd unit file (its hash is part of the key).
    type: path
    required: true
  env_file:
    description: The unit's environment file; its C(VLLM_API_KEY), when set, authenticates the client.
    type: path
    required: true
  drafter_dir:
    description: The drafter's directory (its fingerprint is part of the key); empty without speculation.
    type: path
    default: ""
  prompts:
    description: The ShareGPT-format prompt file on the host.
    type: path
    required: true
  results_dir:
    description: Where the instance's records are kept on the host.
    type: path
    required: true
  num_prompts:
    description: Requests per run (at least O(concurrency)); each of the three short single-request runs sends this
      many.
    type: int
    default: 16
  concurrency:
    description: The concurrency of the second run (1 runs once).
    type: int
    default: 4
  output_len:
    description: Output tokens per request (the client ignores EOS).
    type: int
    default: 64
  max_seconds:
    description: A client that takes longer is killed and the module fails (the three short runs are one client).
    type: int
    default: 300
  force:
    description: Measure even when the key has a record.
    type: bool
    default: false
  gate:
    description: Fail when the figures fall below the instance's reference (see O(acceptance_drop), O(tok_s_drop)).
    type: bool
    default: false
  acceptance_drop:
    description: Allowed fall of the mean acceptance length from the reference, a fraction (V(0.1) is 10 %).
    type: float
    default: 0.1
  tok_s_drop:
    description: Allowed fall of the single-request output tok/s from the reference, a fraction; the spread of the
      short runs measured on the host (the reference's or the new run's) is allowed when it is larger.
    type: float
    default: 0.15
  accept_new:
    description: Make the new figures the instance's reference (and the last recorded ones) whatever the comparison
      says.
    type: bool
    default: false
  baseline:
    description: Benchmark the baseline (the target served without speculation) rather than the instance as its unit
      serves it.
    type: bool
    default: false
  measured_with:
    description: With O(baseline), the key of the speculative record the baseline is measured beside (kept in the
      record, so the report can say whether the ratio compares figures measured together).
    type: str
    default: ""
"""

EXAMPLES = r"""
- name: Benchmark the served instance and gate on its reference figures
  inference.gpu_host.vllm_benchmark:
    url: http://127.0.0.1:30000/v1
    served_model_name: tiny-qwen3
    tokenizer: /root/models/tiny-qwen3
    venv: /root/ml-env
    unit_path: /etc/systemd/system/vllm-tiny.service
    env_file: /etc/vllm/tiny.env
    drafter_dir: /root/models/tiny-qwen3-dflash
    prompts: /var/lib/inference-gpu-host/benchmarks/prompts.json
    results_dir: /var/lib/inference-gpu-host/benchmarks/tiny
    gate: true
"""

RETURN = r"""
ran:
  description: Whether load was sent in this call.
  returned: always
  type: bool
key:
  description: The record's key, C(<generation>__d-<drafter 12 hex>__u-<unit 12 hex>).
  returned: always
  type: str
key_parts:
  description: C(generation), C(drafter_fingerprint), C(unit_hash) (sha256 hex).
  returned: always
  type: dict
record:
  description: The record under the key (this run's, or the one found); C(figures) holds tok_s_c1, tok_s_cN,
    concurrency, ttft_p50_ms, ttft_p99_ms, itl_p50_ms, itl_p99_ms, mean_acceptance_length, acceptance_rate,
    per_position_acceptance, draft_tokens, accepted_tokens, tok_s_c1_runs (the short runs' tok/s, whose median is
    tok_s_c1), tok_s_c1_spread ((highest - lowest) / median) and the runs.
  returned: always
  type: dict
last:
  description: The last recorded figures of the instance, or null.
  returned: always
  type: dict
reference:
  description: The instance's reference, what the gate compares with - its first recorded run, or the last accepted
    with O(accept_new) (an instance recorded before references were kept - its last recorded run); null when none.
  returned: without O(baseline)
  type: dict
records:
  description: Every record of the instance, oldest first.
  returned: always
  type: list
  elements: dict
gate:
  description:
    - The comparison with the reference, when a run was measured - verdict (first, passed, failed, accepted, or
      recorded without O(gate)), reference (whether the run became the reference), checks (per figure - reference,
      current, change, limit, and for tok/s the spreads), message.
  returned: always
  type: dict
measure:
  description: Whether this call measures (or, in check mode, would measure) - the key has no record, or O(force).
  returned: always
  type: bool
baseline_last:
  description: The last recorded baseline of the instance (O(results_dir)C(/baseline/last.json)), or null.
  returned: without O(baseline)
  type: dict
baseline_plan:
  description: How the baseline is served - C(speculative) (the unit serves with C(--speculative-config); without
    it there is no baseline), C(dropin_dir), C(dropin_path) and C(dropin) (the runtime drop-in's text, the unit's
    ExecStart= less C(--speculative-config)).
  returned: with O(baseline)
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.inference.gpu_host.plugins.module_utils._bench.run import BenchError, benchmark


def main():
    module = AnsibleModule(
        argument_spec=dict(
            url=dict(type="str", required=True), served_model_name=dict(type="str", required=True),
            tokenizer=dict(type="path", required=True), venv=dict(type="path", required=True),
            unit_path=dict(type="path", required=True), env_file=dict(type="path", required=True, no_log=False),
            drafter_dir=dict(type="path", default=""), prompts=dict(type="path", required=True),
            results_dir=dict(type="path", required=True), num_prompts=dict(type="int", default=16),
            concurrency=dict(type="int", default=4), output_len=dict(type="int", default=64),
            max_seconds=dict(type="int", default=300), force=dict(type="bool", default=False),
            gate=dict(type="bool", default=False), acceptance_drop=dict(type="float", default=0.1),
            tok_s_drop=dict(type="float", default=0.15), accept_new=dict(type="bool", default=False),
            baseline=dict(type="bool", default=False), measured_with=dict(type="str", default=""),
        ),
        supports_check_mode=True,
    )
    try:
        module.exit_json(**benchmark(module.params, module.check_mode))
    except BenchError as exc:
        module.fail_json(**dict(exc.result, msg=str(exc)))


if __name__ == "__main__":
    main()
