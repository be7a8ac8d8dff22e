"""testinfra checks of the drafter role: config.json derived from the headers."""
import json

DEST = "/root/models/tiny-dflash"


def _config(host):
    return json.loads(host.file(DEST + "/config.json").content_string)


def test_weights_placed(host):
    f = host.file(DEST + "/model.safetensors")
    assert f.is_file and f.mode == 0o644
    # Weights are checked in a staging file and renamed into place: none is left.
    assert not host.file(DEST + "/.model.safetensors.staged").exists


def test_config_derived(host):
    cfg = _config(host)
    assert cfg["architectures"] == ["DFlashDraftModel"]
    assert cfg["model_type"] == "qwen3"
    # fc.weight [256, 512] on a 256-wide, 8-layer target: 2 captured layers -> [1, 5]
    assert cfg["dflash_config"]["target_layer_ids"] == [1, 5]
    assert cfg["dflash_config"]["mask_token_id"] == 1000
    assert cfg["block_size"] == 4 and cfg["dflash_config"]["block_size"] == 4
    assert cfg["num_target_layers"] == 8
    assert cfg["hidden_size"] == 256
    assert cfg["num_hidden_layers"] == 2
    # the drafter's own head layout (8 x 64), not the target's
    assert cfg["head_dim"] == 64 and cfg["num_attention_heads"] == 8
    assert "eagle_aux_hidden_state_layer_ids" not in json.dumps(cfg)


def test_local_facts(host):
    facts = json.loads(host.file("/etc/ansible/facts.d/inference_drafter.fact").content_string)
    assert facts["dflash_target_layer_ids"] == [1, 5]
    assert facts["written_for_vllm"] == "0.22.0"
