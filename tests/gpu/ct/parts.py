# Copyright: (c) 2026, inference.gpu_host contributors
# Apache License 2.0 (see LICENSE)
"""Cut the GPU proof's files into parts, lay them out one folder per device call, write and check their sha256
manifest, and print the calls (tests/gpu/README.md, "The roles on the H200"; make_parts.sh runs it).

A device call carries the repository's working tree plus the folders it names, 64 MiB in all: each folder holds
parts of at most --part-mib MiB, and a folder plus the repository stays --margin-mib under the limit.
    parts.py OUT --split FILE... --whole FILE... [--part-mib 50] [--limit-mib 64] [--margin-mib 4]
Standard library only: it runs with the machine's python3 before any venv exists.
"""
import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys

MIB = 1024 * 1024
FOLDER = re.compile(r"^c\d{2,}$")
MANIFEST = "SHA256SUMS"
CALLS = "device-calls.txt"
# Where the parts go on the device machine, and what runs there (run 8's calls, evidence/h200-run8-roles-ct/).
REMOTE = "/root/igh"
RUN_SITE = ("cd {r}/code && W={r} PARTS={r}/parts ROOTFS={r}/rootfs.tar.xz STAGES=\"{stages}\" timeout 560 "
            "bash tests/gpu/ct/run_site.sh; tar -C {r} -czf $OUT/{name}.tar.gz --exclude=wheelhouse.txt "
            "--exclude=pack-dists.txt out")


def sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(MIB), b""):
            digest.update(block)
    return digest.hexdigest()


def split_file(path, part_bytes, dest):
    """Cut ``path`` into ``dest``/<name>.part-00, -01 ... of ``part_bytes`` each (the last one shorter); the paths."""
    os.makedirs(dest, exist_ok=True)
    name = os.path.basename(path)
    for old in os.listdir(dest):
        if old.startswith(name + ".part-"):
            os.unlink(os.path.join(dest, old))
    parts = []
    with open(path, "rb") as handle:
        while True:
            block = handle.read(part_bytes)
            if not block and parts:
                break
            part = os.path.join(dest, "%s.part-%02d" % (name, len(parts)))
            with open(part, "wb") as out:
                out.write(block)
            parts.append(part)
            if len(block) < part_bytes:
                break
    return parts


def pack(sizes, budget):
    """Folders (lists of names) for ``sizes`` ({name: bytes}), each summing to at most ``budget`` bytes: first fit,
    largest first (ties by name), so that small files fill the gaps the large ones leave."""
    too_big = sorted(name for name, size in sizes.items() if size > budget)
    if too_big:
        raise ValueError("%s: larger than the %d bytes one call can carry beside the repository"
                         % (", ".join(too_big), budget))
    folders, free = [], []
    for name in sorted(sizes, key=lambda n: (-sizes[n], n)):
        for index, room in enumerate(free):
            if sizes[name] <= room:
                folders[index].append(name)
                free[index] -= sizes[name]
                break
        else:
            folders.append([name])
            free.append(budget - sizes[name])
    return folders


def repo_bytes(root):
    """What travels with every call besides the carried folder: the tracked files (as ``git archive HEAD`` sizes
    them, headers included) and the untracked files git does not ignore."""
    archive = subprocess.run(["git", "-C", root, "archive", "HEAD"], check=True, capture_output=True).stdout
    untracked = subprocess.run(["git", "-C", root, "ls-files", "-z", "-o", "--exclude-standard"], check=True,
                               capture_output=True).stdout.decode("utf-8", "surrogateescape").split("\0")
    return len(archive) + sum(os.path.getsize(os.path.join(root, p)) for p in untracked
                              if p and os.path.isfile(os.path.join(root, p)))


def device_calls(folders, rel_out):
    """The device tool's calls, in order: one per folder (its files into {REMOTE}/parts), then the two runs of
    run_site.sh (run 8's stages: setup and converge 1; the rest), each bringing the evidence back."""
    calls = []
    for folder in folders:
        calls.append({"carry": ["%s/%s" % (rel_out, folder)], "timeout_s": 120,
                      "command": "mkdir -p {r}/parts && cp {o}/{f}/* {r}/parts/ && du -sh {r}/parts".format(
                          r=REMOTE, o=rel_out, f=folder)})
    first = ("cd {r}/parts && sha256sum -c --quiet {m} && cat rootfs.tar.xz.part-* > {r}/rootfs.tar.xz && "
             "rm -rf {r}/code && mkdir -p {r}/code && tar -C {r}/code -xzf code.tar.gz && ").format(r=REMOTE, m=MANIFEST)
    calls.append({"timeout_s": 600, "command": first + RUN_SITE.format(r=REMOTE, stages="setup converge1",
                                                                       name="out-1")})
    calls.append({"timeout_s": 600, "command": RUN_SITE.format(
        r=REMOTE, stages="converge2 evidence drift tamper bench fail final", name="out-2")})
    return calls


def lay_out(out, split, whole, part_mib=50, limit_mib=64, margin_mib=4, repo_size=0):
    """Cut, pack, link into OUT/cNN, write OUT/SHA256SUMS; returns (folders {folder: [names]}, hashes, budget)."""
    part_bytes = part_mib * MIB
    budget = (limit_mib - margin_mib) * MIB - repo_size
    if part_bytes > budget:
        raise ValueError("parts of %d MiB do not fit beside the repository (%.1f MiB) under %d MiB less a %d MiB margin:"
                         " take --part-mib %d or less" % (part_mib, repo_size / MIB, limit_mib, margin_mib,
                                                          budget // MIB))
    staging = os.path.join(out, "cache", "parts")
    files = {}
    for path in split:
        for part in split_file(path, part_bytes, staging):
            files[os.path.basename(part)] = part
    for path in whole:
        files[os.path.basename(path)] = path
    hashes = {name: sha256(path) for name, path in files.items()}
    manifest = "".join("%s  %s\n" % (hashes[name], name) for name in sorted(hashes))
    manifest_path = os.path.join(staging, MANIFEST)
    with open(manifest_path, "w", encoding="ascii") as handle:
        handle.write(manifest)
    files[MANIFEST] = manifest_path
    sizes = {name: os.path.getsize(path) for name, path in files.items()}
    for old in os.listdir(out):
        if FOLDER.match(old):
            shutil.rmtree(os.path.join(out, old))
    folders = {}
    for index, names in enumerate(pack(sizes, budget)):
        folder = "c%02d" % index
        os.makedirs(os.path.join(out, folder))
        for name in sorted(names):
            target = os.path.join(out, folder, name)
            try:
                os.link(files[name], target)
            except OSError:
                shutil.copyfile(files[name], target)
        folders[folder] = sorted(names)
    shutil.copyfile(manifest_path, os.path.join(out, MANIFEST))
    return folders, hashes, budget


def verify(out, folders, hashes, split, budget):
    """Problems (sentences) with the layout: every file's hash, each folder's size, the parts joining back."""
    problems = []
    seen = {}
    for folder, names in folders.items():
        total = 0
        for name in names:
            path = os.path.join(out, folder, name)
            total += os.path.getsize(path)
            seen[name] = path
            if name != MANIFEST and sha256(path) != hashes[name]:
                problems.append("%s/%s: sha256 differs from %s" % (folder, name, MANIFEST))
        if total > budget:
            problems.append("%s: %d bytes, over the %d one call carries beside the repository" % (folder, total, budget))
    missing = sorted((set(hashes) | {MANIFEST}) - set(seen))
    if missing:
        problems.append("in no folder: %s" % ", ".join(missing))
    for path in split:
        name = os.path.basename(path)
        digest = hashlib.sha256()
        for part in sorted(n for n in seen if n.startswith(name + ".part-")):
            with open(seen[part], "rb") as handle:
                for block in iter(lambda h=handle: h.read(MIB), b""):
                    digest.update(block)
        if digest.hexdigest() != sha256(path):
            problems.append("%s: its parts do not join back into it" % name)
    return problems


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0].replace("\n", " "))
    parser.add_argument("out", help="the parts folder (.gpu-parts: git-ignored, carried folder by folder)")
    parser.add_argument("--split", nargs="*", default=[], help="files cut into parts (joined again on the device)")
    parser.add_argument("--whole", nargs="*", default=[], help="files carried as they are (each under a part's size)")
    parser.add_argument("--part-mib", type=int, default=50)
    parser.add_argument("--limit-mib", type=int, default=64, help="what one device call carries, repository included")
    parser.add_argument("--margin-mib", type=int, default=4)
    parser.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))), help="the repository whose working tree travels with each call")
    args = parser.parse_args(argv)
    out = os.path.abspath(args.out)
    rel_out = os.path.relpath(out, args.root)
    if rel_out.startswith(".."):
        sys.exit("parts.py: %s is outside %s: a call carries only folders of the repository" % (out, args.root))
    size = repo_bytes(args.root)
    try:
        folders, hashes, budget = lay_out(out, args.split, args.whole, args.part_mib, args.limit_mib,
                                          args.margin_mib, size)
    except ValueError as exc:
        sys.exit("parts.py: %s" % exc)
    problems = verify(out, folders, hashes, args.split, budget)
    if problems:
        sys.exit("parts.py: the layout is wrong:\n  " + "\n  ".join(problems))
    calls = device_calls(sorted(folders), rel_out)
    lines = ["# %d device calls (the session's run tool, kind left out), in order; made %s from the working tree of %s"
             % (len(calls), "by tests/gpu/ct/make_parts.sh", args.root),
             "# each carries the repository (%.1f MiB: git archive HEAD + untracked files) and at most one folder of"
             " at most %.1f MiB (limit %d MiB, margin %d MiB); %s lists every carried file"
             % (size / MIB, budget / MIB, args.limit_mib, args.margin_mib, os.path.join(rel_out, MANIFEST))]
    for index, call in enumerate(calls, 1):
        folder = call.get("carry", [""])[0]
        if folder:
            names = folders[os.path.basename(folder)]
            mib = sum(os.path.getsize(os.path.join(out, os.path.basename(folder), n)) for n in names) / MIB
            lines.append("# %d/%d: %s (%.1f MiB): %s" % (index, len(calls), folder, mib, " ".join(names)))
        else:
            lines.append("# %d/%d: run_site.sh (the evidence comes back as $OUT/*.tar.gz; then give_back)"
                         % (index, len(calls)))
        lines.append(json.dumps(call, sort_keys=True))
    with open(os.path.join(out, CALLS), "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")
    sizes = [sum(os.path.getsize(os.path.join(out, f, n)) for n in names) for f, names in folders.items()]
    print("%d folders, %.1f MiB in all, each at most %.1f MiB; %d files in %s, checked"
          % (len(folders), sum(sizes) / MIB, max(sizes) / MIB, len(hashes), os.path.join(rel_out, MANIFEST)))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
