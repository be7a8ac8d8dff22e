#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r"""
---
module: dflash_drafter_config
short_description: Write a DFlash drafter's config.json derived from its safetensors headers
version_added: 0.1.0
description:
  - Reads the drafter's safetensors header(s) (never the tensor data) and the target's C(config.json), and writes the
    drafter's C(config.json) for vLLM - C(DFlashDraftModel) for DFlash v1, C(DFlash2DraftModel) for DFlash2, told by
    the tensor names (RV(format)). A speculators-format C(config.json) (O(speculators_config)) is checked and served
    as it is.
  - Shapes come from the tensors, vocabulary, rope and norm values from the target, the rest from a drafter profile
    (O(profile)) or the options, which win; an unknown drafter without them is an error, not a guess. The ids are
    O(target_layer_ids), else the profile's, else DFlash's C(build_target_layer_ids) formula (never for DFlash2);
    O(layer_id_policy) decides what is written for the vLLM that reads them.
  - Refuses quantized drafters, tensors that do not match the target, DSpark and EAGLE-3 drafters, and a format or key
    the given vLLM cannot serve, naming the version that can. Writes deterministic JSON atomically.
  - How each key is derived and what vLLM does with it - C(docs/dflash.md); what bad input gets - C(docs/bad-input.md).
author: inference.gpu_host contributors (!UNKNOWN)
extends_documentation_fragment:
  - inference.gpu_host._attributes
  - inference.gpu_host._attributes.CHECK_MODE_DIFF_MODE
  - inference.gpu_host._attributes.PLATFORM_POSIX
options:
  drafter:
    description:
      - The drafter checkpoint (absolute) - a C(.safetensors) file, a directory with C(model.safetensors.index.json),
        or a directory holding exactly one C(*.safetensors).
    type: path
    required: true
  target:
    description: The target model directory, or its C(config.json) (absolute).
    type: path
    required: true
  dest:
    description:
      - The C(config.json) to write (absolute); never the target's C(config.json) or a drafter file. An existing one
        must be a JSON object.
    type: path
    required: true
  profile:
    description:
      - The published drafter profile giving what the tensors cannot tell (values - C(docs/dflash.md)). V(auto) picks
        the one whose shapes the drafter fits (none is fine if the options give the values); V(none) uses none.
    type: str
    default: auto
    choices: [auto, none, qwen3.6-27b-dflash, qwen3-8b-dflash-b16, qwen3-4b-dflash-b16, qwen3.8-27b-dflash2]
  block_size:
    description:
      - The training block size (16 for most published drafters; 10 for Llama-3.1 and gpt-oss-120b, 8 for
        gpt-oss-20b). Overrides the profile.
    type: int
  mask_token_id:
    description:
      - The mask token id (Qwen3 151669; Qwen3.5/3.6 248070, 248077 in June 2026 revisions), below the target's vocab
        size. Overrides the profile.
    type: int
  target_layer_ids:
    description:
      - The DFlash ids (0-based target layers captured in training), as published with the drafter. Wins over the
        profile and the formula; K distinct ids below C(num_target_layers).
    type: list
    elements: int
  num_target_layers:
    description: The target's decoder layer count. Default the target config's C(num_hidden_layers).
    type: int
  layer_types:
    description: One entry per drafter layer. Overrides the profile; required for a drafter no profile knows.
    type: list
    elements: str
    choices: [full_attention, sliding_attention]
  sliding_window:
    description: The window of the C(sliding_attention) layers; required when any layer slides.
    type: int
  rope_theta:
    description: Rope base, when the drafter's differs from the target's.
    type: float
  rope_scaling:
    description: Rope scaling dict (legacy form), when the drafter's differs from the target's.
    type: dict
  rope_parameters:
    description: Full rope parameters, when the drafter's differ from the target's. Wins over O(rope_theta) and O(rope_scaling).
    type: dict
  rms_norm_eps:
    description: RMSNorm epsilon. Default the profile's, else the target's.
    type: float
  max_position_embeddings:
    description: Default the profile's, else the target's.
    type: int
  selector_top_k:
    description: DFlash2 - C(dflash_config.selector_top_k). Overrides the profile; required where no profile knows it.
    type: int
  is_causal:
    description: DFlash2 - top-level C(is_causal). Overrides the profile; required where no profile knows it.
    type: bool
  input_embedding_scale:
    description: DFlash2, optional - C(dflash_config.input_embedding_scale).
    type: float
  output_multiplier:
    description: DFlash2, optional - C(dflash_config.output_multiplier).
    type: float
  final_logit_softcapping:
    description: DFlash2, optional - C(dflash_config.final_logit_softcapping).
    type: float
  use_swa:
    description: Optional - C(dflash_config.use_swa); C(true) needs every O(layer_types) C(sliding_attention).
    type: bool
  swa_window_size:
    description:
      - Optional - C(dflash_config.swa_window_size); stands in for O(sliding_window), which must agree. Ignored, with a
        warning, when no layer slides.
    type: int
  causal:
    description: DFlash v1, optional - C(dflash_config.causal).
    type: bool
  is_neox_style:
    description: Optional - top-level C(is_neox_style) of the drafter's rotary embedding.
    type: bool
  attention_value_scale:
    description: Optional - C(dflash_config.attention_value_scale); the tensors cannot tell it.
    type: float
  no_rope_layers:
    description: DFlash2, optional - the layers without rotary embedding of a Ricursive DFlash2 drafter.
    type: list
    elements: int
  speculators_config:
    description:
      - The drafter's own speculators-format C(config.json) (absolute). Default the C(config.json) next to the weights
        when it is one (ignored otherwise); when it is O(dest) it is served in place.
      - Only O(target_layer_ids) (which must agree) and O(num_target_layers) may be given with it.
    type: path
  ids_policy:
    description:
      - When the formula gives the ids although the drafter's layer count differs from K - V(warn) writes them with a
        warning, V(require_explicit) fails until O(target_layer_ids) is set.
    type: str
    default: warn
    choices: [warn, require_explicit]
  vllm_version:
    description:
      - The vLLM version that will read the config, for a venv elsewhere or not yet installed; must agree with O(venv)'s
        (in check mode, before the install, this one is used with a warning).
    type: str
  venv:
    description: A virtualenv (absolute) whose installed vLLM will read the config (read from its METADATA).
    type: path
  layer_id_policy:
    description:
      - For a vLLM that applies the ids without its +1 (the versions table's C(ids_shift) 1) - V(report) writes the
        DFlash ids and warns, V(compensate) writes every id + 1 (rewritten when the vLLM changes), V(fail) refuses.
      - V(compensate) and V(fail) need O(vllm_version) or O(venv). DFlash2 and speculators-format ids are always the
        DFlash ids (C(docs/vllm-versions.md)).
    type: str
    default: report
    choices: [report, compensate, fail]
  mode:
    description: Permissions of O(dest), as for M(ansible.builtin.file).
    type: raw
  owner:
    description: Owner of O(dest).
    type: str
  group:
    description: Group of O(dest).
    type: str
seealso:
  - name: DFlash reference code
    description: z-lab/dflash, the drafter architecture and C(build_target_layer_ids).
    link: https://github.com/z-lab/dflash
"""

EXAMPLES = r"""
- name: ct129's Qwen3.6-27B drafter for vLLM 0.20.1, ids compensated (writes [2, 17, 32, 47, 62])
  inference.gpu_host.dflash_drafter_config:
    drafter: /srv/models/qwen3.6-27b-dflash/model.safetensors
    target: /srv/models/Qwen3.6-27B
    dest: /srv/models/qwen3.6-27b-dflash/config.json
    venv: /opt/vllm
    layer_id_policy: compensate
    mode: "0644"
  register: drafter_config

- name: An unknown drafter, values from its model card, for a pinned vLLM
  inference.gpu_host.dflash_drafter_config:
    drafter: /srv/models/my-dflash
    target: /srv/models/My-Target
    dest: /srv/models/my-dflash/config.json
    profile: none
    block_size: 16
    mask_token_id: 151669
    layer_types: [full_attention, full_attention, full_attention]
    target_layer_ids: [1, 12, 23, 34, 45]
    vllm_version: "0.22.0"
"""

RETURN = r"""
config:
  description: The config.json content written (or that would be written in check mode).
  returned: success
  type: dict
  sample:
    architectures: [DFlashDraftModel]
    hidden_size: 5120
    dflash_config: {block_size: 16, mask_token_id: 248070, target_layer_ids: [2, 17, 32, 47, 62]}
    inference_gpu_host: {dflash_target_layer_ids: [1, 16, 31, 46, 61], ids_shift: 1, layer_id_policy: compensate,
                         written_for_vllm: "0.20.1"}
derived:
  description: Each derived key's value and where it came from (tensor and shape, target key, profile, option, formula).
  returned: success
  type: dict
  sample:
    hidden_size: {value: 5120, source: "fc.weight shape [5120, 25600], dim 0"}
format:
  description: V(dflash), V(dflash2), V(speculators-dflash) or V(speculators-dflash2).
  returned: success
  type: str
  sample: dflash
aux_hidden_state_layer_ids:
  description: A speculators-format drafter's C(aux_hidden_state_layer_ids) (the DFlash ids + 1).
  returned: when the drafter has a speculators-format config
  type: list
  elements: int
  sample: [2, 10, 18, 26, 34]
dest:
  description: The config.json path.
  returned: success
  type: str
dflash_target_layer_ids:
  description: The DFlash ids (the layers the drafter was trained on).
  returned: success
  type: list
  elements: int
  sample: [1, 16, 31, 46, 61]
target_layer_ids:
  description: The ids written to C(dflash_config.target_layer_ids) for the vLLM that reads them.
  returned: success
  type: list
  elements: int
  sample: [2, 17, 32, 47, 62]
profile:
  description: The profile used (name, description, source, how it was selected), or null.
  returned: success
  type: dict
  sample: {name: qwen3.6-27b-dflash, selection: matched by shape signature}
vllm:
  description: The vLLM written for (the versions table's row, its C(known_problems), a C(note) on assumptions), or null.
  returned: success
  type: dict
  sample: {version: "0.20.1", ids_shift: 1, adds_plus_one: false, known: true, note: ""}
note:
  description: One sentence on how the ids were written for this vLLM.
  returned: success
  type: str
messages:
  description: Every warning of this run, kept here too because Ansible strips C(warnings).
  returned: success
  type: list
  elements: str
warnings:
  description: The same messages, shown by Ansible as warnings.
  returned: when there is something to warn about
  type: list
  elements: str
diff:
  description: The config.json text before and after, in diff mode.
  returned: in diff mode
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_native

from ansible_collections.inference.gpu_host.plugins.module_utils._drafter import derive


def main():
    # The options, their checks and the whole job live in module_utils/_drafter/derive.py, which the drafter
    # role's state read (drafter_host_state) asks the same question without writing.
    module = AnsibleModule(argument_spec=derive.config_spec(), supports_check_mode=True)
    try:
        result = derive.run(module)
    except derive.DrafterConfigError as exc:
        module.fail_json(msg=to_native(exc))
    for message in result["messages"]:
        module.warn(message)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
