"""testinfra checks of the python_env role (ct129's profile on a GPU-less LXC stand-in)."""
import json

VENV = "/root/ml-env"
SITE = VENV + "/lib/python3.11/site-packages"


def test_venv_python(host):
    assert host.file(VENV + "/bin/python").exists


def test_vllm_and_torch_pinned(host):
    assert host.file(SITE + "/vllm-0.20.1.dist-info").is_directory
    assert host.file(SITE + "/torch-2.11.0.dist-info").is_directory


def test_flash_attn_2_owns_rotary(host):
    """The file vLLM imports is there and belongs to flash-attn 2.8.3's RECORD."""
    assert host.file(SITE + "/flash_attn/ops/triton/rotary.py").is_file
    record = host.file(SITE + "/flash_attn-2.8.3.dist-info/RECORD")
    assert record.contains("flash_attn/ops/triton/rotary.py")


def test_no_flash_attn_4(host):
    out = host.run("ls -d %s/flash_attn_4*.dist-info 2>/dev/null" % SITE)
    assert out.stdout.strip() == ""
    # flash-attn 2.8.3 itself ships flash_attn/cute/ (files flash-attn-4 overwrote;
    # the role reinstalled them): they must be 2.x's again.
    record = host.file(SITE + "/flash_attn-2.8.3.dist-info/RECORD").content_string
    assert "flash_attn/cute/__init__.py" in record


def test_local_facts(host):
    facts = json.loads(host.file("/etc/ansible/facts.d/inference_python_env.fact").content_string)
    assert facts["vllm_version"] == "0.20.1"
    assert facts["torch_version"] == "2.11.0"
    assert facts["flash_attn_version"] == "2.8.3"


def test_uv_pinned(host):
    out = host.run("/opt/inference-gpu-host/tools/bin/uv --version")
    assert out.rc == 0 and out.stdout.startswith("uv 0.9.30")


def test_venv_is_a_generation(host):
    """/root/ml-env is a link to its generation, named from the lock and the Python (docs/generations.md)."""
    link = host.file(VENV)
    assert link.is_symlink
    target = link.linked_to
    assert target.startswith("/root/ml-env.generations/vllm-0.20.1-py3.11-")
    assert host.file(target + "/.inference-gpu-host/generation.json").is_file
    facts = json.loads(host.file("/etc/ansible/facts.d/inference_python_env.fact").content_string)
    assert facts["generation_dir"] == target and facts["venv"] == VENV


def test_foreign_entries_in_the_generations_dir_survive(host):
    """Issue 27: side_effect ran the role with keep=1 beside an operator's backup/, lost+found, a file and a
    link to a data directory; a symlinked generations directory was refused. All of it is still there."""
    gens = VENV + ".generations"
    assert host.file(gens + "/backup/operator-notes.txt").content_string == "keep\n"
    assert host.file(gens + "/lost+found").is_directory
    assert host.file(gens + "/notes.txt").is_file
    assert host.file(gens + "/data-disk").is_symlink
    assert host.file("/srv/igh-data/models/model.bin").content_string == "weights\n"
    assert host.file("/root/other-env.generations").is_symlink
    assert host.file("/srv/igh-nvme/models/a.bin").content_string == "weights\n"
    assert host.file("/srv/igh-nvme/datasets/b.csv").content_string == "rows\n"
    assert not host.file(gens + "/vllm-0.19.0-py3.11-aaaaaaaaaaaa").exists  # a marked old one was pruned
    assert host.file(gens + "/vllm-0.19.1-py3.11-bbbbbbbbbbbb").is_directory  # the rollback target was kept
    assert not host.file("/etc/ansible/facts.d/inference_python_env.fact.prev").exists


def test_generation_carries_the_collections_mark(host):
    target = host.file(VENV).linked_to
    assert host.file(target + "/.inference-gpu-host/created.json").is_file
