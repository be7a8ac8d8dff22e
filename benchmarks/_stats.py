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
"""

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
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
