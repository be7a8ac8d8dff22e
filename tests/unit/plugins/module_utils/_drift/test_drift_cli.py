"""The scheduled drift check's command line (module_utils/_drift/cli.py) and its filter."""

import pytest
from ansible.errors import AnsibleFilterError
from hypothesis import given, settings, strategies as st

from ansible_collections.inference.gpu_host.plugins.filter.drift import FilterModule
from ansible_collections.inference.gpu_host.plugins.module_utils._drift.cli import (
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
    ("timeout_sec", True, r"drift_schedule_timer\.timeout_sec"),
    ("limit", 5, "drift_schedule_limit"),
    ("inventories", [None], "drift_schedule_inventories"),
    ("notify_command", 5, r"^drift_schedule_notify\.command: expected a string"),
    ("webhook_url_set", "yes", r"^drift_schedule_notify\.webhook_url: expected"),
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


def _argv(**changes):
    settings_ = dict(BASE)
    settings_.update(changes)
    return drift_check_argv(**settings_)


# Issue 27: a string where a list is expected was split into one argument per character, and a
# timeout_sec (drift_schedule_timer.timeout_sec) of 60 or less gave --timeout 0 (no limit) or a negative one.
@pytest.mark.parametrize("key, variable", [
    ("inventories", "drift_schedule_inventories"),
    ("extra_vars", "drift_schedule_extra_vars"),
    ("notify_on", r"drift_schedule_notify\.outcomes"),
    ("private_env_names", r"drift_schedule_notify\.environment"),
])
def test_a_string_where_a_list_is_expected_is_refused_naming_the_variable(key, variable):
    with pytest.raises(DriftCheckCliError, match=r"^%s: expected a list of strings, got the string 'drift'" % variable):
        drift_check_argv(**dict(BASE, **{key: "drift"}))
    with pytest.raises(AnsibleFilterError, match=variable):
        FilterModule().filters()["drift_check_argv"](dict(BASE, **{key: "drift"}))


@pytest.mark.parametrize("value", [0, -1, -3600, 2.5, "3600", None, True])
def test_timeout_must_be_a_positive_whole_number(value):
    with pytest.raises(DriftCheckCliError, match=r"^drift_schedule_timer\.timeout_sec: expected"):
        _argv(timeout_sec=value)


@pytest.mark.parametrize("seconds, given", [(1, "1"), (2, "1"), (60, "30"), (121, "61"), (3600, "3540")])
def test_the_checks_own_timeout_is_always_positive(seconds, given):
    argv = _argv(timeout_sec=seconds)
    assert argv[argv.index("--timeout") + 1] == given


def test_notify_on_outside_its_choices_is_refused():
    with pytest.raises(DriftCheckCliError, match=r"^drift_schedule_notify\.outcomes: expected items of drift, failed, clean"):
        _argv(notify_on=["drift", "sometimes"])


_LIST_KEYS = ("inventories", "extra_vars", "notify_on", "private_env_names")
_not_a_list = st.one_of(st.text(max_size=20), st.integers(), st.none(), st.booleans(), st.floats(allow_nan=True),
                        st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=3),
                        st.lists(st.one_of(st.integers(), st.none(), st.just(""), st.just("  ")), min_size=1, max_size=3))


@settings(max_examples=150, deadline=None, derandomize=True)
@given(key=st.sampled_from(_LIST_KEYS), value=_not_a_list)
def test_property_a_list_setting_is_a_list_of_strings_or_refused(key, value):
    with pytest.raises(DriftCheckCliError, match=r"^drift_schedule_[\w.]+: expected"):
        drift_check_argv(**dict(BASE, **{key: value}))


@settings(max_examples=150, deadline=None, derandomize=True)
@given(items=st.lists(st.text(min_size=1, max_size=12).filter(lambda t: t.strip()), max_size=4),
       timeout=st.integers(min_value=-10 ** 6, max_value=10 ** 6))
def test_property_each_item_is_one_argument_and_the_timeout_positive(items, timeout):
    if timeout < 1:
        with pytest.raises(DriftCheckCliError, match=r"^drift_schedule_timer\.timeout_sec"):
            _argv(inventories=items, extra_vars=items, timeout_sec=timeout)
        return
    argv = _argv(inventories=items, extra_vars=items, timeout_sec=timeout)
    assert [a for a in argv if a.startswith("--inventory=")] == ["--inventory=" + i for i in items]
    assert [a for a in argv if a.startswith("--extra-vars=")] == ["--extra-vars=" + i for i in items]
    assert 1 <= int(argv[argv.index("--timeout") + 1]) <= timeout
