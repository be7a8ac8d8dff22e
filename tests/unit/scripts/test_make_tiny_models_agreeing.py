"""playbooks/files/make_tiny_models.py: the default outputs stay byte-identical, and --agreeing makes a pair
whose drafter proposes the target's greedy token (a numpy forward pass of both, as vLLM's Qwen3 and DFlash
layers compute it: residual stream, RMSNorm, attention output, SiLU MLP; docs/benchmark.md)."""
import hashlib
import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(ROOT, "playbooks", "files"))
import make_tiny_models as tiny  # noqa: E402  pylint: disable=wrong-import-position

# The default outputs other scenarios place (seed 0, bfloat16), as made before --agreeing existed.
DEFAULT_MD5 = {
    "target/config.json": "463d9708f276f9d157c3dc42da79630f",
    "target/generation_config.json": "b7fb0b7ecc24e498fd27b0579d514c6d",
    "target/model.safetensors": "f8513bf3c60f5f9e1e20feaa63ebe564",
    "target/tokenizer.json": "34041fe3b37d5626a1af684f32b8a96c",
    "target/tokenizer_config.json": "c07d7fb34e640f18915fec1be3208679",
    "drafter.safetensors": "6645c35e72772024a071c4ba160feb4a",
}


def _make(tmp_path, *extra):
    tiny.main(["--target", str(tmp_path / "target"), "--drafter", str(tmp_path / "drafter.safetensors")] + list(extra))
    return tmp_path


def test_default_outputs_unchanged(tmp_path):
    pytest.importorskip("tokenizers")
    out = _make(tmp_path)
    for name, md5 in DEFAULT_MD5.items():
        assert hashlib.md5((out / name).read_bytes()).hexdigest() == md5, name


def _load(path):
    return tiny.read_safetensors(str(path))


def _rms(x):
    return x / np.sqrt((x * x).mean() + tiny.RMS_EPS)


def _layer(w, prefix, h, heads, kv_heads, head_dim):
    # Attention over the token itself stands for any context: its output goes through o_proj either way.
    v = w[prefix + "self_attn.v_proj.weight"] @ _rms(h)
    v = np.tile(v.reshape(kv_heads, head_dim), (heads // kv_heads, 1)).reshape(-1)
    h = h + w[prefix + "self_attn.o_proj.weight"] @ v
    x = _rms(h)
    gate = w[prefix + "mlp.gate_proj.weight"] @ x
    act = gate / (1 + np.exp(-gate)) * (w[prefix + "mlp.up_proj.weight"] @ x)
    return h + w[prefix + "mlp.down_proj.weight"] @ act


def _next(target, drafter, token):
    """Greedy next token of the target, or of the drafter with the target's embedding and lm_head."""
    h = target["model.embed_tokens.weight"][token].copy()
    if drafter is None:
        for i in range(tiny.LAYERS):
            h = _layer(target, "model.layers.%d." % i, h, tiny.HEADS, tiny.KV_HEADS, tiny.HEAD_DIM)
    else:
        for i in range(2):
            h = _layer(drafter, "layers.%d." % i, h, tiny.D_HEADS, tiny.D_KV_HEADS, tiny.D_HEAD_DIM)
    logits = target["lm_head.weight"] @ _rms(h)
    return int(np.argmax(logits))


def test_agreeing_pair(tmp_path):
    pytest.importorskip("tokenizers")
    plain = _make(tmp_path / "plain")
    agreeing = _make(tmp_path / "agreeing", "--agreeing")
    target, target_header = _load(agreeing / "target" / "model.safetensors")
    good, good_header = _load(agreeing / "drafter.safetensors")
    random_drafter, random_header = _load(plain / "drafter.safetensors")
    # Same names, shapes and order as the default pair: the drafter role derives the same config.json.
    assert list(good_header) == list(random_header)
    assert [(k, v["shape"]) for k, v in good_header.items() if k != "__metadata__"] == [
        (k, v["shape"]) for k, v in random_header.items() if k != "__metadata__"]
    assert list(target_header) == list(_load(plain / "target" / "model.safetensors")[1])
    vocab = tiny._vocab()  # pylint: disable=protected-access
    agree, disagree = vocab[tiny.AGREE_TOKEN], vocab[tiny.DISAGREE_TOKEN]
    for token in (0, 5, vocab["boy"], vocab["the"], 1000, tiny.VOCAB - 1):  # 1000: the drafter's mask token
        assert _next(target, None, token) == agree
        assert _next(target, good, token) == agree
        assert _next(target, random_drafter, token) == disagree


def test_agreeing_refuses_text_config(tmp_path):
    with pytest.raises(SystemExit):
        _make(tmp_path, "--agreeing", "--text-config")
