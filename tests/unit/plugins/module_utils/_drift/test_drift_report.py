"""The drift report's decisions (module_utils/_drift/report.py): resources, merging, statuses, exit code, table."""

from ansible_collections.inference.gpu_host.plugins.module_utils._drift import report


def _changed(**extra):
    return dict({"changed": True}, **extra)


def test_resource_of_a_finding_a_unit_a_package_and_a_path():
    finding = {"msg": {"drift_resource": "/root/ml-env", "drift_kind": "packages"}}
    assert report.resource_of("ansible.builtin.debug", {}, finding, False) == ("packages", "/root/ml-env")
    assert report.resource_of("ansible.builtin.systemd_service", {"name": "vllm"}, {}, False) == ("unit", "vllm.service")
    assert report.resource_of("apt", {"name": ["b", "a"]}, {}, False) == ("package", "a, b")
    assert report.resource_of("template", {}, {"dest": "/etc/x.conf"}, False) == ("path", "/etc/x.conf")
    # A loop argument that was never rendered is not a resource name.
    assert report.resource_of("command", {"chdir": "{{ item }}"}, {}, False) == ("task", None)
    assert report.resource_of("debug", {}, {"msg": "would restart vllm-tiny.service"}, False) == ("unit", "vllm-tiny.service")


def test_changes_on_one_resource_merge_and_a_specific_kind_wins():
    entry = report.new_host()
    report.record_change(entry, "drafter", "Note", "debug", {}, _changed(msg="would write /m/config.json"),
                         False, False, 200)
    finding = _changed(msg={"drift_resource": "/m/config.json", "drift_kind": "path", "summary": "stale",
                            "detail": {"VLLM_API_KEY": "s3cret"}})
    report.record_change(entry, "drift", "Stale ids", "debug", {}, finding, False, False, 200)
    report.record_change(entry, None, "Secret", "copy", {"dest": "/etc/env"}, _changed(diff={"before": "a", "after": "b"}),
                         True, False, 200)
    assert entry["order"] == ["/m/config.json", "/etc/env"]
    item = entry["items"]["/m/config.json"]
    assert [c["task"] for c in item["changes"]] == ["Note", "Stale ids"]
    assert item["changes"][1]["check"] is True and item["changes"][1]["summary"] == "stale"
    assert "s3cret" not in str(item["changes"][1]["detail"])
    assert entry["items"]["/etc/env"]["changes"] == [
        {"role": None, "task": "Secret", "action": "copy", "redacted": "no_log: diff and details hidden"}]


def test_host_status_and_exit_code():
    clean, drift = report.new_host(), report.new_host()
    report.record_change(drift, "base", "Write", "copy", {"dest": "/etc/a"}, _changed(), False, False, 200)
    violated = report.new_host()
    violated["violations"].append({"role": None, "task": "t", "action": "command", "msg": "ran outside check mode"})
    assert report.host_report({}, clean)["status"] == "clean"
    assert report.host_report({}, drift)["status"] == "drift"
    assert report.host_report({}, violated)["status"] == "failed"
    assert report.host_report({"unreachable": 1}, drift)["status"] == "unreachable"
    totals = {"clean": ["a"], "drift": [], "failed": [], "unreachable": []}
    assert report.exit_code_of(totals) == report.EXIT_CLEAN
    assert report.exit_code_of(dict(totals, drift=["b"])) == report.EXIT_DRIFT
    assert report.exit_code_of(dict(totals, drift=["b"], unreachable=["c"])) == report.EXIT_HOST_FAILED


def test_format_table_rows_and_verdict():
    entry = report.new_host()
    report.record_change(entry, "drift", "Packages differ from the lock", "debug", {},
                         _changed(msg={"drift_resource": "/root/ml-env", "drift_kind": "packages",
                                       "summary": "1 package(s) differ from the lock: six"}), False, False, 200)
    host = report.host_report({}, entry)
    table = report.format_table({"hosts": {"h1": host}, "exit_code": 2, "check_mode": True,
                                 "summary": {"items": 1, "hosts": 1, "clean": [], "drift": ["h1"], "failed": [],
                                             "unreachable": []}})
    lines = table.splitlines()
    assert lines[0].split() == ["HOST", "RESOURCE", "CHANGED", "BY", "DETAIL"]
    assert "packages /root/ml-env" in lines[1] and "drift: Packages differ from the lock" in lines[1]
    assert lines[1].endswith("1 package(s) differ from the lock: six")
    assert lines[-1] == ("drift: 1 item(s) on 1 host(s); clean 0, drifted 1, failed 0, unreachable 0 -> drift found "
                         "(exit 2)")
