#!/usr/bin/env python3
"""Fingerprint what a drift check must never change: every file's bytes and metadata
under the given roots (path, type, mode, owner, size, mtime, sha256 or link target),
and the vLLM unit's runtime state. Prints JSON: {root: digest, ..., "unit": {...}}."""
import hashlib
import json
import os
import stat
import subprocess
import sys

ROOTS = ["/etc", "/root/ml-env", "/root/models", "/opt/inference-gpu-host", "/usr/local", "/var/lib/dpkg/status"]
# Rewritten by the DHCP client on a lease renewal, whatever Ansible does.
VOLATILE = {"/etc/resolv.conf"}
UNIT = sys.argv[1] if len(sys.argv) > 1 else "vllm-tiny.service"


def entry(path):
    st = os.lstat(path)
    line = "%s %o %d:%d %d %d" % (path, st.st_mode, st.st_uid, st.st_gid, st.st_size, st.st_mtime_ns)
    if stat.S_ISLNK(st.st_mode):
        line += " -> " + os.readlink(path)
    elif stat.S_ISREG(st.st_mode):
        digest = hashlib.sha256()
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
        line += " " + digest.hexdigest()
    return line + "\n"


def fingerprint(root):
    digest = hashlib.sha256()
    count = 0
    if os.path.isfile(root):
        digest.update(entry(root).encode())
        return {"sha256": digest.hexdigest(), "entries": 1}
    for base, dirs, files in os.walk(root):
        dirs.sort()
        for name in [base] + sorted(os.path.join(base, f) for f in files):
            if name in VOLATILE:
                continue
            digest.update(entry(name).encode("utf-8", "surrogateescape"))
            count += 1
        # Directories that are mount points of other filesystems are left alone (proc-like trees).
        dirs[:] = [d for d in dirs if not os.path.ismount(os.path.join(base, d))]
    return {"sha256": digest.hexdigest(), "entries": count}


out = dict((root, fingerprint(root)) for root in ROOTS if os.path.exists(root))
props = subprocess.run(["systemctl", "show", UNIT, "-p", "ActiveState,SubState,InvocationID,NRestarts,MainPID,"
                        "NeedDaemonReload,UnitFileState,ExecMainStartTimestampMonotonic"],
                       capture_output=True, text=True, check=False).stdout
out["unit"] = dict(line.split("=", 1) for line in props.splitlines() if "=" in line)
print(json.dumps(out, sort_keys=True))
