# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""Pack installed distributions back into wheels, for a wheelhouse on a host without a package index.

The GPU host's image holds torch 2.11.0+cu130 and the CUDA libraries (about 5 GB) installed, not as wheels. python_env
installs a new generation from its lock with `uv pip install --no-index --find-links <wheelhouse>`, so the GPU test
(tests/gpu/ct/run_site.sh) packs what the image holds into that wheelhouse instead of carrying 5 GB of wheels: each
distribution's files, as its RECORD lists them inside site-packages, go into a staging folder with its .dist-info,
and `python -m wheel pack` (the `wheel` project, on the image) writes the wheel with a fresh RECORD.
    pack_dists.py SRC_SITE_PACKAGES WHEELHOUSE NAMES_FILE
"""
import concurrent.futures
import csv
import os
import re
import shutil
import subprocess
import sys
import tempfile


def norm(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def dist_infos(site):
    found = {}
    for entry in os.listdir(site):
        if entry.endswith(".dist-info"):
            with open(os.path.join(site, entry, "METADATA"), encoding="utf-8", errors="replace") as handle:
                for line in handle:
                    if line.startswith("Name:"):
                        found[norm(line.split(":", 1)[1].strip())] = entry
                        break
    return found


def pack(src, dist_info, wheelhouse, stage_root):
    src_real = os.path.realpath(src)
    stage = tempfile.mkdtemp(dir=stage_root)
    with open(os.path.join(src, dist_info, "RECORD"), newline="", encoding="utf-8") as handle:
        for row in csv.reader(handle):
            if not row:
                continue
            path = os.path.realpath(os.path.join(src, row[0]))
            if not path.startswith(src_real + os.sep) or not os.path.isfile(path):
                continue  # bin/ scripts and anything else outside site-packages
            target = os.path.join(stage, os.path.relpath(path, src_real))
            os.makedirs(os.path.dirname(target), exist_ok=True)
            try:
                os.link(path, target)
            except OSError:
                shutil.copy2(path, target)
    for extra in ("RECORD", "INSTALLER", "REQUESTED", "direct_url.json"):
        try:
            os.unlink(os.path.join(stage, dist_info, extra))
        except OSError:
            pass
    out = subprocess.run([sys.executable, "-m", "wheel", "pack", stage, "-d", wheelhouse], check=False,
                         capture_output=True, text=True)
    shutil.rmtree(stage, ignore_errors=True)
    return dist_info, out.returncode, (out.stdout + out.stderr).strip()


def main(src, wheelhouse, names_file):
    wanted = [norm(line.strip()) for line in open(names_file) if line.strip() and not line.startswith("#")]
    have = dist_infos(src)
    missing = [name for name in wanted if name not in have]
    if missing:
        sys.exit("not in %s: %s" % (src, ", ".join(missing)))
    os.makedirs(wheelhouse, exist_ok=True)
    stage_root = tempfile.mkdtemp(dir=os.path.dirname(os.path.realpath(src)))
    failed = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 4) as pool:
        for dist_info, rc, text in pool.map(lambda n: pack(src, have[n], wheelhouse, stage_root), wanted):
            print("%s: %s" % (dist_info, text.splitlines()[-1] if text else rc))
            failed += rc != 0
    shutil.rmtree(stage_root, ignore_errors=True)
    print("%d distributions packed, %d failed" % (len(wanted) - failed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
