# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""Write python_env's lock for the GPU test from a wheelhouse: one name==version line for each distribution named in
the closure files (tests/gpu/ct/*-closure-0.26.0.txt), at the version of its wheel there.
    wheelhouse_lock.py WHEELHOUSE CLOSURE_FILE...
"""
import os
import re
import sys


def norm(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def main(wheelhouse, *closure_files):
    wanted = set()
    for path in closure_files:
        wanted |= set(norm(line.strip()) for line in open(path) if line.strip() and not line.startswith("#"))
    pins = {}
    for wheel in os.listdir(wheelhouse):
        if wheel.endswith(".whl"):
            name, version = wheel.split("-")[:2]
            if norm(name) in wanted:
                pins[norm(name)] = version
    missing = sorted(wanted - set(pins))
    if missing:
        sys.exit("no wheel in %s for: %s" % (wheelhouse, ", ".join(missing)))
    print("# python_env lock for: vllm==0.26.0 torch==2.11.0 on the H200 test container (tests/gpu/ct/run_site.sh):")
    print("# vLLM 0.26.0's closure (uv pip compile, Python 3.12, manylinux_2_28) at the versions of the host's wheelhouse")
    for name in sorted(pins):
        print("%s==%s" % (name, pins[name]))


if __name__ == "__main__":
    main(*sys.argv[1:])
