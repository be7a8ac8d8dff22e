"""The scheduled drift check's command line (module_utils/drift_check_cli.py) and its filter."""

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.inference.gpu_host.plugins.filter.drift_check_argv import FilterModule
from ansible_collections.inference.gpu_host.plugins.module_utils.drift_check_cli import (
    DriftCheckCliError,
    drift_check_argv,
)

BASE = dict(python="/usr/bin/python3", script="/srv/c/scripts/drift_check.py", playbook="/srv/c/playbooks/drift.yml",
            report_dir="/var/lib/x/drift", keep_reports=30, rotate_artifacts=10,
            notify_on=["drift", "failed"], timeout_sec=3600)
TAIL = ["--quiet", "--report-dir", "/var/lib/x/drift", "--keep-reports", "30",
        "--private-data-dir", "/var/lib/x/drift/runner", "--rotate-artifacts", "10", "--notify-on", "drift,failed",
        "--timeout", "3540"]


def test_defaults_give_only_the_required_parts():
    assert drift_check_argv(**BASE) == [
        "/usr/bin/python3", "/srv/c/scripts/drift_check.py", "--playbook", "/srv/c/playbooks/drift.yml"] + TAIL


def test_every_optional_part_in_its_place():
    argv = drift_check_argv(inventories=["/inv/a", "/inv b"], limit="ct129", tags="drafter", extra_vars=["x=1"],
                            vault_password_file="/v", notify_command="/bin/notify", webhook_url_set=True,
                            private_env_names=["Z_TOKEN", "A_TOKEN"], **BASE)
    assert argv == (["/usr/bin/python3", "/srv/c/scripts/drift_check.py", "--playbook", "/srv/c/playbooks/drift.yml",
                     "--inventory=/inv/a", "--inventory=/inv b", "--limit", "ct129", "--tags", "drafter",
                     "--extra-vars=x=1", "--vault-password-file", "/v"] + TAIL
                    + ["--notify-command", "/bin/notify", "--webhook-url-env", "DRIFT_WEBHOOK_URL",
                       "--private-env=A_TOKEN", "--private-env=Z_TOKEN"])


def test_the_webhook_url_itself_never_appears():
    assert not any("https://" in item for item in drift_check_argv(webhook_url_set=True, **BASE))


@pytest.mark.parametrize("key, value, variable", [
    ("keep_reports", "30", "drift_schedule_keep_reports"),
    ("timeout_sec", True, "drift_schedule_timeout_sec"),
    ("limit", 5, "drift_schedule_limit"),
    ("inventories", [None], "drift_schedule_inventories"),
])
def test_a_wrong_type_names_its_variable(key, value, variable):
    with pytest.raises(DriftCheckCliError, match=variable):
        drift_check_argv(**dict(BASE, **{key: value}))


def test_filter_maps_settings_and_errors():
    fltr = FilterModule().filters()["drift_check_argv"]
    assert fltr(dict(BASE)) == drift_check_argv(**BASE)
    with pytest.raises(AnsibleFilterError, match="unexpected keyword"):
        fltr(dict(BASE, unknown_key=1))
    with pytest.raises(AnsibleFilterError, match="mapping"):
        fltr(["not", "a", "mapping"])
