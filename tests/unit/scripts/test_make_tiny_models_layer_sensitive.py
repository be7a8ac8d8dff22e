"""playbooks/files/make_tiny_models.py --layer-sensitive: the drafter proposes the target's token only from the
target layers it was built for (docs/benchmark.md). A numpy forward pass of the target and of the DFlash drafter
as vLLM 0.32.0 computes them (model_executor/models/qwen3_dflash.py, v1/spec_decode/dflash.py): the captured
states (the residual stream after c layers) concatenated in layer order through fc; hidden_norm and each drafter
layer's K/V of the context, K through k_norm and neox RoPE at the context positions; the query block [anchor, mask,
mask, mask] at the next positions, attending to the context and to itself (non-causal, GQA); the target's
embed_tokens and lm_head; the proposals at the mask positions."""
import os
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(ROOT, "playbooks", "files"))
import make_tiny_models as tiny  # noqa: E402  pylint: disable=wrong-import-position
from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.dflash import (  # noqa: E402
    build_target_layer_ids)

SPEC_TOKENS = 3  # the local inventory's block size 4 - 1
ROPE_THETA = tiny.ROPE_THETA


def _load(path):
    return tiny.read_safetensors(str(path))


def _rms(x, weight=None):
    out = x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + tiny.RMS_EPS)
    return out if weight is None else out * weight


def _silu(x):
    return x / (1 + np.exp(-x))


def _rope(x, positions):
    """neox RoPE over the last axis (head_dim), x [tokens, heads, head_dim]."""
    half = x.shape[-1] // 2
    inv = 1.0 / ROPE_THETA ** (np.arange(0, x.shape[-1], 2) / float(x.shape[-1]))
    ang = np.asarray(positions, dtype=np.float64)[:, None] * inv[None, :]
    cos, sin = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
    x1, x2 = x[..., :half], x[..., half:]
    return np.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)


def _target_states(target, tokens):
    """The residual stream after 0 .. LAYERS layers (the states vLLM captures), and the greedy next tokens."""
    for i in range(tiny.LAYERS):  # attention adds nothing in this target: its o_proj is zero
        assert not target["model.layers.%d.self_attn.o_proj.weight" % i].any()
    h = target["model.embed_tokens.weight"][tokens]
    states = [h]
    for i in range(tiny.LAYERS):
        p = "model.layers.%d." % i
        x = _rms(h, target[p + "post_attention_layernorm.weight"])
        h = h + _silu(x @ target[p + "mlp.gate_proj.weight"].T) * (x @ target[p + "mlp.up_proj.weight"].T) @ \
            target[p + "mlp.down_proj.weight"].T
        states.append(h)
    logits = _rms(h, target["model.norm.weight"]) @ target["lm_head.weight"].T
    return states, logits.argmax(axis=-1)


def _attention(q, k, v, heads, kv_heads, head_dim):
    """Non-causal attention of every query over every key, GQA."""
    q = q.reshape(len(q), heads, head_dim)
    out = np.zeros_like(q)
    for head in range(heads):
        kv = head // (heads // kv_heads)
        scores = q[:, head] @ k[:, kv].T * head_dim ** -0.5
        scores = np.exp(scores - scores.max(axis=1, keepdims=True))
        out[:, head] = (scores / scores.sum(axis=1, keepdims=True)) @ v[:, kv]
    return out.reshape(len(q), -1)


def _draft(target, drafter, context, anchor, position):
    """The drafter's proposals for the positions after ``anchor`` (at ``position``); context [N, n*H]."""
    hd, heads, kv_heads = tiny.D_HEAD_DIM, tiny.D_HEADS, tiny.D_KV_HEADS
    ctx = _rms(context @ drafter["fc.weight"].T, drafter["hidden_norm.weight"])
    ctx_pos = np.arange(len(context))
    block = [anchor] + [tiny.MASK_TOKEN_ID] * SPEC_TOKENS
    block_pos = position + np.arange(len(block))
    h = target["model.embed_tokens.weight"][block]
    layers = len([n for n in drafter if n.endswith("input_layernorm.weight")])
    for i in range(layers):
        p = "layers.%d.self_attn." % i
        x = _rms(h, drafter["layers.%d.input_layernorm.weight" % i])

        def kv(states, pos, p=p):
            k = (states @ drafter[p + "k_proj.weight"].T).reshape(len(states), kv_heads, hd)
            k = _rope(_rms(k, drafter[p + "k_norm.weight"]), pos)
            return k, (states @ drafter[p + "v_proj.weight"].T).reshape(len(states), kv_heads, hd)

        ck, cv = kv(ctx, ctx_pos)
        bk, bv = kv(x, block_pos)
        q = (x @ drafter[p + "q_proj.weight"].T).reshape(len(block), heads, hd)
        q = _rope(_rms(q, drafter[p + "q_norm.weight"]), block_pos)
        att = _attention(q.reshape(len(block), -1), np.concatenate([ck, bk]), np.concatenate([cv, bv]),
                         heads, kv_heads, hd)
        h = h + att @ drafter[p + "o_proj.weight"].T
        m = "layers.%d.mlp." % i
        x = _rms(h, drafter["layers.%d.post_attention_layernorm.weight" % i])
        h = h + _silu(x @ drafter[m + "gate_proj.weight"].T) * (x @ drafter[m + "up_proj.weight"].T) @ \
            drafter[m + "down_proj.weight"].T
    logits = _rms(h, drafter["norm.weight"]) @ target["lm_head.weight"].T
    return list(logits.argmax(axis=-1)[1:])


def _acceptance(pair, captured, prompt, steps=4):
    """Greedy decoding with speculation, one target pass per step as vLLM verifies a draft: per-position
    acceptance and the mean acceptance length over ``steps`` drafts."""
    target, drafter = pair
    tokens = list(prompt)
    states, greedy = _target_states(target, tokens)  # the prefill
    accepted_at = [0] * SPEC_TOKENS
    for _step in range(steps):
        anchor = int(greedy[len(tokens) - 1])  # the target's next token: the draft's anchor, at the next position
        context = np.concatenate([states[c][:len(tokens)] for c in sorted(captured)], axis=-1)
        proposals = _draft(target, drafter, context, anchor, len(tokens))
        tokens.append(anchor)
        states, greedy = _target_states(target, tokens + proposals)  # the verify pass
        for pos, proposal in enumerate(proposals):
            if proposal != int(greedy[len(tokens) - 1]):
                break
            accepted_at[pos] += 1
            tokens.append(proposal)
    return [a / float(steps) for a in accepted_at], 1 + sum(accepted_at) / float(steps)


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    pytest.importorskip("tokenizers")
    out = tmp_path_factory.mktemp("ls")
    tiny.main(["--layer-sensitive", "--target", str(out / "target"), "--drafter", str(out / "drafter.safetensors")])
    return _load(out / "target" / "model.safetensors")[0], _load(out / "drafter.safetensors")[0]


PROMPT = [40, 7, 300, 12, 99, 5]


def test_trained_ids_are_the_collections_derivation():
    assert tiny.dflash_target_layer_ids(tiny.LAYERS, 2) == build_target_layer_ids(tiny.LAYERS, 2) == [1, 5]


@pytest.mark.parametrize("ids, per_position, length", [
    ([1, 5], [1.0, 1.0, 1.0], 4.0),   # the derived ids: vLLM captures (2, 6)
    ([0, 4], [1.0, 1.0, 0.0], 3.0),   # one early: vLLM 0.20.x reading the DFlash ids without its +1
    ([2, 6], [1.0, 1.0, 0.0], 3.0),   # one late: ids + 1 written for 0.20.x, read by a vLLM that adds 1
    ([1, 6], [1.0, 1.0, 0.0], 3.0),   # one id one off
    ([1, 7], [0.0, 0.0, 0.0], 1.0),   # the seeds' kind of guess: 1, then the last layer
    ([3, 7], [0.0, 0.0, 0.0], 1.0),   # a spread guess
])
def test_acceptance_by_ids(pair, ids, per_position, length):
    captured = [i + 1 for i in ids]  # vLLM >= 0.22 captures the output of layer i as "after i + 1 layers"
    assert _acceptance(pair, captured, PROMPT) == (per_position, length)


def test_the_target_says_the_after_anything(pair):
    target = pair[0]
    the = tiny._vocab()[tiny.LS_TOKEN]  # pylint: disable=protected-access
    assert set(_target_states(target, list(range(0, 700, 7)))[1]) == {the}


@settings(max_examples=8)
@given(prompt=st.lists(st.integers(min_value=0, max_value=700), min_size=1, max_size=30))
def test_acceptance_does_not_depend_on_the_prompt(pair, prompt):
    # The derived ids accept every position, one id off loses the last, whatever the prompt and its length.
    assert _acceptance(pair, [2, 6], prompt)[1] == 4.0
    assert _acceptance(pair, [2, 7], prompt)[1] == 3.0


def test_same_names_shapes_and_headers_as_the_default_pair(tmp_path, pair):
    del pair
    tiny.main(["--target", str(tmp_path / "p" / "target"), "--drafter", str(tmp_path / "p" / "drafter.safetensors")])
    tiny.main(["--layer-sensitive", "--target", str(tmp_path / "l" / "target"),
               "--drafter", str(tmp_path / "l" / "drafter.safetensors")])
    for name in ("drafter.safetensors", "target/model.safetensors"):
        plain, layered = _load(tmp_path / "p" / name)[1], _load(tmp_path / "l" / name)[1]
        assert [(k, v["shape"], v["dtype"]) for k, v in plain.items() if k != "__metadata__"] == [
            (k, v["shape"], v["dtype"]) for k, v in layered.items() if k != "__metadata__"]
    for name in ("config.json", "tokenizer.json"):
        assert (tmp_path / "p" / "target" / name).read_bytes() == (tmp_path / "l" / "target" / name).read_bytes()


@pytest.mark.parametrize("extra", [["--text-config"], ["--agreeing"], ["--drafter-captured", "3"]])
def test_refused_combinations(tmp_path, extra):
    with pytest.raises(SystemExit):
        tiny.main(["--layer-sensitive", "--target", str(tmp_path / "t"), "--drafter", str(tmp_path / "d")] + extra)
