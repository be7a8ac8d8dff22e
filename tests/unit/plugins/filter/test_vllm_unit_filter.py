# -*- coding: utf-8 -*-
# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""The vllm_unit filters as the vllm_service role calls them (module_utils/_vllm/unit.py decides)."""

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.inference.gpu_host.plugins.filter.vllm_unit import FilterModule
from _result_checks import LazyLike  # noqa: E402  pylint: disable=wrong-import-position

FILTERS = FilterModule().filters()


def test_env_file_gives_the_lines_and_whether_a_secret_is_there():
    got = FILTERS["vllm_env_file"]("/root/.cache/huggingface", LazyLike({"CUDA_VISIBLE_DEVICES": "0,1"}),
                                   LazyLike({"IGH_TOKEN": "a b"}), "", "sk-1")
    assert got == {"lines": ["HF_HOME=/root/.cache/huggingface", "PYTHONUNBUFFERED=1", "CUDA_VISIBLE_DEVICES=0,1",
                             "IGH_TOKEN='a b'", "VLLM_API_KEY=sk-1"], "secret": True}
    assert FILTERS["vllm_env_file"]("/h", {}, {}, "", "")["secret"] is False


def test_env_file_errors_name_the_filter_and_never_the_secret():
    with pytest.raises(AnsibleFilterError, match="^vllm_env_file: vllm_service_secret_environment.A_TOKEN") as info:
        FILTERS["vllm_env_file"]("/h", {}, {"A_TOKEN": "hunter2-secret\n"})
    assert "hunter2" not in str(info.value)


def test_hardening_as_the_role_calls_it():
    got = FILTERS["vllm_hardening"]("full", LazyLike({}), ["/root", "/root/.cache/huggingface"],
                                    LazyLike({"vllm_service_venv_dir": "/root/ml-env"}))
    assert ["ReadOnlyPaths", "-/home -/run/user"] in got
    with pytest.raises(AnsibleFilterError, match="^vllm_hardening: vllm_service_hardening: expected one of"):
        FILTERS["vllm_hardening"]("strict", {}, [])


def test_drain_as_the_role_calls_it():
    assert FILTERS["vllm_drain"](60, True)["kill_mode"] == "mixed"
    assert FILTERS["vllm_drain"](60)["kill_mode"] == "control-group"
    with pytest.raises(AnsibleFilterError, match="^vllm_drain: vllm_service_shutdown_timeout"):
        FILTERS["vllm_drain"](-1, True)


def test_device_access_as_the_role_calls_it():
    group_db = LazyLike({"video": ["x", "44", ""], "root": ["x", "0", ""]})
    nodes = [LazyLike({"path": "/dev/nvidia0", "mode": "0660", "uid": 0, "gid": 44, "ischr": True})]
    got = FILTERS["vllm_device_access"]("vllm", ["video", "render"], ["x", "999", "999", "", "/var/lib/vllm", "/bin/false"],
                                        group_db, nodes)
    assert got == {"groups": ["video"], "inaccessible": []}
    assert FILTERS["vllm_device_access"]("root", ["video"], ["x", "0", "0"], group_db, nodes) == {
        "groups": [], "inaccessible": []}
    # Check mode on a blank host: the account does not exist yet, so nothing is checked.
    assert FILTERS["vllm_device_access"]("vllm", ["video"], None, group_db, nodes) == {
        "groups": ["video"], "inaccessible": []}
    with pytest.raises(AnsibleFilterError, match="^vllm_device_access: vllm_service_user=vllm: not in the account"):
        FILTERS["vllm_device_access"]("vllm", [], ["x"], group_db, nodes)
