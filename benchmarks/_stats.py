#!/usr/bin/env python
"""Small helpers the benchmark shell scripts share (stdlib only).

  _stats.py summary V1 V2 ...        "median (min-max)" of numbers, 2 decimals
  _stats.py median V1 V2 ...         the median alone
  _stats.py recap LOG                 PLAY RECAP summed over hosts: ok= changed= unreachable= failed=
  _stats.py profile N LOG...          profile_tasks' TASKS RECAP of several runs: median per task,
                                      the N slowest as markdown rows
  _stats.py task REGEX LOG            seconds of the first task whose name matches REGEX in LOG's
                                      TASKS RECAP (0 when it did not run)
  _stats.py changed LOG               the tasks that reported "changed" in LOG (default callback output)
  _stats.py timed LOG CMD...          run CMD (output to LOG); print "RC WALL CPU": exit status, wall
                                      seconds, and the CPU seconds (user + system) of CMD and every
                                      process it waited for (getrusage of the children: ssh included)
  _stats.py ratio A B                 A / B, 2 decimals
  _stats.py trips LOG OUT             from LOG (one site.yml run, ansible.builtin.json output), write OUT: a
                                      playbook of that run's round trips alone (take the run lock, each
                                      state read with the arguments the run gave it, release the lock)
"""

import json
import re
import resource
import statistics
import subprocess
import sys
import time

TIME_AT_END = re.compile(r"(\d+\.\d+)s$")
RECAP_LINE = re.compile(r"^\S+\s*:\s*ok=\d+")


def summary(values):
    values = [float(v) for v in values]
    return "%.2f (%.2f-%.2f)" % (statistics.median(values), min(values), max(values))


def recap(path):
    totals = {"ok": 0, "changed": 0, "unreachable": 0, "failed": 0}
    in_recap = False
    with open(path, errors="replace") as fh:
        for line in fh:
            if line.startswith("PLAY RECAP"):
                in_recap = True
                continue
            if in_recap and RECAP_LINE.match(line):
                for key in totals:
                    m = re.search(r"\b%s=(\d+)" % key, line)
                    if m:
                        totals[key] += int(m.group(1))
    return " ".join("%s=%d" % kv for kv in totals.items())


def task_times(path):
    """{task name: seconds} from profile_tasks' summary (a task run twice keeps the sum)."""
    out = {}
    in_recap = False
    with open(path, errors="replace") as fh:
        for line in fh:
            line = line.rstrip("\n")
            if "TASKS RECAP" in line:
                in_recap = True
                continue
            if not in_recap:
                continue
            m = TIME_AT_END.search(line)
            if not m or line.startswith("=") or re.match(r"^\w+day ", line):
                continue
            name = line[:m.start()].rstrip().rstrip("-").rstrip()
            out[name] = out.get(name, 0.0) + float(m.group(1))
    return out


def profile(limit, paths):
    runs = [task_times(p) for p in paths]
    names = set()
    for run in runs:
        names.update(run)
    rows = []
    for name in names:
        values = [run.get(name, 0.0) for run in runs]
        rows.append((statistics.median(values), min(values), max(values), name))
    rows.sort(reverse=True)
    lines = ["| task | median s | min-max s |", "|---|---|---|"]
    for med, lo, hi, name in rows[:limit]:
        lines.append("| %s | %.2f | %.2f-%.2f |" % (name.replace("|", "\\|"), med, lo, hi))
    return "\n".join(lines)


def task(pattern, path):
    rx = re.compile(pattern)
    for name, seconds in task_times(path).items():
        if rx.search(name):
            return "%.2f" % seconds
    return "0"


def changed(path):
    names, task = [], None
    with open(path, errors="replace") as fh:
        for line in fh:
            m = re.match(r"^(?:TASK|RUNNING HANDLER) \[(.*)\]", line)
            if m:
                task = m.group(1)
            elif line.startswith("changed: [") and task and task not in names:
                names.append(task)
    return "\n".join(names)


def timed(log, cmd):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    with open(log, "wb") as out:
        rc = subprocess.call(cmd, stdout=out, stderr=subprocess.STDOUT)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return "%d %.2f %.2f" % (rc, wall, cpu)


# The roles' state reads: the host_state option each one fills (module_utils/_host/host_state.py READS).
READS = ("base", "python_env", "drafter", "vllm_service")
MASKED = "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER"


def state_reads(log):
    """[(task name, read, its arguments)] of the state reads in LOG (the first host's), in run order."""
    with open(log, encoding="utf-8") as f:
        text = f.read()
    # profile_tasks prints its lines around the json callback's one document.
    start = text.find("\n{")
    if start < 0:
        raise SystemExit("%s: no ansible.builtin.json output in it" % log)
    doc, _end = json.JSONDecoder().raw_decode(text[start + 1:])
    reads = []
    for play in doc.get("plays", []):
        for task in play.get("tasks", []):
            results = list(task.get("hosts", {}).values())
            args = ((results[0].get("invocation") or {}).get("module_args") or {}) if results else {}
            reads += [(task["task"]["name"], read, args[read]) for read in READS if args.get(read) is not None]
    if not reads:
        raise SystemExit("%s: no state read ran" % log)
    if MASKED in json.dumps(reads):
        # A no_log option's value is not in the output: the reads cannot be run again as the roles ran them.
        raise SystemExit("%s: a state read's arguments are masked (no_log): no round-trip playbook" % log)
    return reads


def trips(log, out):
    """Write OUT: the round trips of LOG's run alone. JSON is YAML, so each read's arguments go in as they were."""
    lines = ["---",
             "- name: The round trips of a no-change converge alone - the run lock and the state reads",
             "  hosts: inference_hosts",
             "  gather_facts: false",
             "  tasks:",
             "    - name: Take the host's run lock",
             "      inference.gpu_host.host_run_lock: {state: acquired}"]
    for name, read, args in state_reads(log):
        lines += ["    - name: %s" % json.dumps(name),
                  "      inference.gpu_host.host_state:",
                  "        %s: %s" % (read, json.dumps(args, sort_keys=True))]
    lines += ["    - name: Release the host's run lock",
              "      inference.gpu_host.host_run_lock: {state: released}"]
    with open(out, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


def main(argv):
    if len(argv) < 2:
        raise SystemExit(__doc__)
    cmd, args = argv[1], argv[2:]
    if cmd == "summary":
        print(summary(args))
    elif cmd == "median":
        print("%.2f" % statistics.median(float(v) for v in args))
    elif cmd == "recap":
        print(recap(args[0]))
    elif cmd == "profile":
        print(profile(int(args[0]), args[1:]))
    elif cmd == "changed":
        print(changed(args[0]))
    elif cmd == "timed":
        print(timed(args[0], args[1:]))
    elif cmd == "ratio":
        print("%.2f" % (float(args[0]) / float(args[1])) if float(args[1]) else "-")
    elif cmd == "task":
        print(task(args[0], args[1]))
    elif cmd == "trips":
        trips(args[0], args[1])
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
