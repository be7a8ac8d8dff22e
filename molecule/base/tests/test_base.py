"""testinfra checks of the base role on a real LXC system container."""

import json


def test_service_account(host):
    user = host.user("vllm")
    assert user.exists
    assert user.group == "vllm"
    assert user.home == "/var/lib/vllm"
    assert user.shell == "/usr/sbin/nologin"


def test_directory_layout(host):
    for path in ("/srv/models", "/var/log/vllm", "/var/lib/vllm/.cache/huggingface"):
        d = host.file(path)
        assert d.is_directory, path
        assert d.user == "vllm" and d.group == "vllm", path
        assert d.mode == 0o750, path


def test_packages(host):
    for pkg in ("python3-venv", "build-essential", "curl", "ca-certificates"):
        assert host.package(pkg).is_installed, pkg


def test_limits(host):
    limits = host.file("/etc/security/limits.d/90-inference-gpu-host.conf")
    assert limits.mode == 0o644
    assert limits.contains("vllm  hard  nofile   1048576")
    assert limits.contains("vllm  hard  memlock  unlimited")


def test_extra_ca_trusted_by_curl(host):
    """The site's private CA is trusted: curl inside the container reaches the package index over HTTPS."""
    certs = host.run("ls /usr/local/share/ca-certificates/inference-gpu-host/").stdout.split()
    assert certs, "no extra CA certificates were installed"
    cmd = host.run("curl -sS -o /dev/null -w '%{http_code}' https://pypi.org/simple/pip/")
    assert cmd.rc == 0, cmd.stderr
    assert cmd.stdout.strip() == "200"


def test_local_facts_dir(host):
    assert host.file("/etc/ansible/facts.d").is_directory


def test_record_of_what_was_installed(host):
    """One local fact records the package set and the CA certificates' hashes the store was rebuilt for."""
    record = json.loads(host.file("/etc/ansible/facts.d/inference_gpu_host_base.fact").content_string)
    assert {"python3-venv", "build-essential", "curl", "ca-certificates"} <= set(record["packages"])
    ca_dir = "/usr/local/share/ca-certificates/inference-gpu-host/"
    assert record["ca_certificates"], record
    for name, digest in record["ca_certificates"].items():
        assert host.file(ca_dir + name).sha256sum == digest, name
