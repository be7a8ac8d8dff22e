#!/usr/bin/env python
"""Usage: snapshot.py UNIT [LISTING]

Fingerprint what a drift check must never change: every file's bytes and metadata
under the given roots (path, type, mode, owner, size, mtime, sha256 or link target),
and the vLLM unit's runtime state. Prints JSON: {root: digest, ..., "unit": {...}}; with
LISTING, also writes every entry there (to find what differs)."""
import hashlib
import json
import os
import stat
import subprocess
import sys

ROOTS = ["/etc", "/root/ml-env", "/root/models", "/opt/inference-gpu-host", "/usr/local", "/var/lib/dpkg/status"]
# Rewritten by the DHCP client on a lease renewal, whatever Ansible does.
VOLATILE = {"/etc/resolv.conf"}
VOLATILE_DIRS = set(os.path.dirname(p) for p in VOLATILE)
UNIT = sys.argv[1] if len(sys.argv) > 1 else "vllm-tiny.service"


def entry(path):
    st = os.lstat(path)
    # The directory of a volatile file changes its mtime when the file is replaced by a rename.
    mtime = 0 if path in VOLATILE_DIRS else st.st_mtime_ns
    line = "%s %o %d:%d %d %d" % (path, st.st_mode, st.st_uid, st.st_gid, st.st_size, mtime)
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
        if listing:
            listing.write(entry(root))
        return {"sha256": digest.hexdigest(), "entries": 1}
    for base, dirs, files in os.walk(root):
        dirs.sort()
        for name in [base] + sorted(os.path.join(base, f) for f in files):
            if name in VOLATILE:
                continue
            line = entry(name)
            digest.update(line.encode("utf-8", "surrogateescape"))
            if listing:
                listing.write(line)
            count += 1
        # Directories that are mount points of other filesystems are left alone (proc-like trees).
        dirs[:] = [d for d in dirs if not os.path.ismount(os.path.join(base, d))]
    return {"sha256": digest.hexdigest(), "entries": count}


LISTING = sys.argv[2] if len(sys.argv) > 2 else None
listing = open(LISTING, "w") if LISTING else None
out = dict((root, fingerprint(root)) for root in ROOTS if os.path.exists(root))
if listing:
    listing.close()
props = subprocess.run(["systemctl", "show", UNIT, "-p", "ActiveState,SubState,InvocationID,NRestarts,MainPID,"
                        "NeedDaemonReload,UnitFileState,ExecMainStartTimestampMonotonic"],
                       capture_output=True, text=True, check=False).stdout
out["unit"] = dict(line.split("=", 1) for line in props.splitlines() if "=" in line)
print(json.dumps(out, sort_keys=True))
