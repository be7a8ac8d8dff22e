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
  - Runs C(vllm bench serve) from the serving venv O(venv) against O(url) - three short runs at concurrency 1 (their
    median tok/s and spread kept) and one at O(concurrency) - with the prompts O(prompts), greedy sampling, a fixed
    output length and no Hub; C(/metrics) deltas give the acceptance. The API key comes from O(env_file), never a
    command line.
  - The figures are kept under O(results_dir), one file per (venv generation, drafter, unit) key; a recorded key is
    not measured again unless O(force).
  - With O(gate), a fall from the instance's reference beyond O(acceptance_drop) or O(tok_s_drop) fails. With
    O(baseline), the run is the plain target's, served by the caller without C(--speculative-config).
  - Method, records and gate - C(docs/benchmark.md); what bad input gets - C(docs/bad-input.md).
author: inference.gpu_host contributors (!UNKNOWN)
extends_documentation_fragment:
  - inference.gpu_host._attributes
  - inference.gpu_host._attributes.CHECK_MODE_DIFF_MODE
  - inference.gpu_host._attributes.PLATFORM_LINUX
attributes:
  check_mode:
    details: Sends no load; returns the recorded figures and whether a run would measure.
  diff_mode:
    details: The record under the key, before and after.
  idempotent:
    details: A key already recorded is not measured again unless O(force).
options:
  url:
    description: The instance's OpenAI URL (C(http://host:port/v1)).
    type: str
    required: true
  served_model_name:
    description: The model name the server answers to.
    type: str
    required: true
  tokenizer:
    description: The target model's directory on the host.
    type: path
    required: true
  venv:
    description: The serving venv; its python runs the client.
    type: path
    required: true
  unit_path:
    description: The instance's systemd unit file (its hash is part of the key).
    type: path
    required: true
  env_file:
    description: The unit's environment file; its C(VLLM_API_KEY) authenticates the client.
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
    description: Requests per run (at least O(concurrency)).
    type: int
    default: 16
  concurrency:
    description: The concurrency of the second run (1 runs once).
    type: int
    default: 4
  output_len:
    description: Output tokens per request.
    type: int
    default: 64
  max_seconds:
    description: A client that takes longer is killed and the module fails.
    type: int
    default: 300
  force:
    description: Measure even when the key has a record.
    type: bool
    default: false
  gate:
    description: Fail when the figures fall below the instance's reference.
    type: bool
    default: false
  acceptance_drop:
    description: Allowed fall of the mean acceptance length from the reference (V(0.1) is 10 %).
    type: float
    default: 0.1
  tok_s_drop:
    description: Allowed fall of the single-request tok/s, or the spread measured on the host when larger.
    type: float
    default: 0.15
  accept_new:
    description: Make the new figures the instance's reference whatever the comparison says.
    type: bool
    default: false
  baseline:
    description: Benchmark the baseline (the target served without speculation).
    type: bool
    default: false
  measured_with:
    description: With O(baseline), the key of the speculative record it is measured beside.
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
  description: Whether load was sent.
  returned: always
  type: bool
measure:
  description: Whether this call measures (or would, in check mode).
  returned: always
  type: bool
key:
  description: The record's key, C(<generation>__d-<drafter 12 hex>__u-<unit 12 hex>).
  returned: always
  type: str
key_parts:
  description: C(generation), C(drafter_fingerprint), C(unit_hash).
  returned: always
  type: dict
record:
  description: >-
    The record under the key; C(figures) holds tok_s_c1, tok_s_cN, ttft and itl p50/p99, mean_acceptance_length,
    acceptance_rate, per_position_acceptance, tok_s_c1_runs, tok_s_c1_spread ...
  returned: always
  type: dict
last:
  description: The last recorded figures of the instance, or null.
  returned: always
  type: dict
reference:
  description: The instance's reference (its first recorded run, or the last accepted), or null.
  returned: without O(baseline)
  type: dict
records:
  description: Every record of the instance, oldest first.
  returned: always
  type: list
  elements: dict
gate:
  description: The comparison - C(verdict) (first, passed, failed, accepted, recorded), C(reference), C(checks), C(message).
  returned: always
  type: dict
baseline_last:
  description: The last recorded baseline, or null.
  returned: without O(baseline)
  type: dict
baseline_plan:
  description: How the baseline is served - C(speculative), C(dropin_dir), C(dropin_path), C(dropin) (its text).
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
