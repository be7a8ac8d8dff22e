#!/usr/bin/env python
"""Header inspection vs file size (issue 4, item 1).

Three ways of learning a safetensors checkpoint's tensor names, shapes and dtypes:

  ours       plugins/module_utils/_drafter/headers.py read_header(path): stdlib, header only
  safe_open  safetensors.safe_open(path): keys + get_slice(k).get_shape()/get_dtype(), no data
  full load  safetensors.numpy.load_file(path): every tensor in memory (files up to --max-load)

The files are DFlash-drafter-like: the 58 tensor names of a 5-layer DFlash v1
drafter (fc, hidden_norm, norm, layers.N.*; docs/dflash.md) with the
Qwen3.6-27B-DFlash proportions (fc [H, 5H], 32 heads, 8 KV heads, FFN ~3.4 H),
H and the FFN width scaled so that the data region reaches the target size. The
tensor count (and so the header) stays the same at every size: what varies is
only the file size, which is what "constant in file size" is about.

For every size there is a sparse file (a real header written by hand, the data
region made with truncate: no data blocks on disk); for sizes up to --max-load
there is also a file with real (random) data, on which all three are timed.
Files live in a temporary directory that is deleted at the end, also on errors.

Figures are wall times in this process (time.perf_counter), the file already in
the page cache (a sparse data region is never read; a real one was just
written): what an Ansible module run on a warm host pays, not a cold disk.

  .venv/bin/python benchmarks/header_inspection.py               # the full table (1 MiB .. 60 GiB)
  .venv/bin/python benchmarks/header_inspection.py --repeats 9 --sizes 1M,1G
  .venv/bin/python benchmarks/header_inspection.py --layers 64 --max-load 0   # a bigger header
"""

import argparse
import json
import os
import shutil
import statistics
import struct
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, ".collections"))

from ansible_collections.inference.gpu_host.plugins.module_utils._drafter.headers import (  # noqa: E402
    METADATA_KEY, read_header)

try:
    import numpy as np
    import safetensors
    from safetensors import safe_open
    from safetensors.numpy import load_file
except ImportError as exc:  # the dev venv has them (requirements-dev.in)
    raise SystemExit("needs safetensors and numpy (the dev venv: .venv/bin/python): %s" % exc)

UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
DEFAULT_SIZES = "1M,10M,100M,1G,10G,60G"
# F16, not BF16: numpy (and so safetensors.numpy.load_file) has no bfloat16.
# The header readers do not care; the byte counts are the same.
DTYPE, ELEM = "F16", 2

# Qwen3.6-27B-DFlash (docs/dflash.md): 5 layers, 5 captured features,
# 32 heads x 128, 8 KV heads, H 5120, FFN 17408.
LAYERS, FEATURES, HEADS, KV_HEADS = 5, 5, 32, 8
HD_PER_H = 128 / 5120.0
FFN_PER_H = 17408 / 5120.0


def parse_size(text):
    text = text.strip().upper().rstrip("B").rstrip("I")
    if text[-1:] in UNITS:
        return int(float(text[:-1]) * UNITS[text[-1]])
    return int(text)


def human(nbytes):
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= div:
            return "%.4g %s" % (nbytes / float(div), unit)
    return "%d B" % nbytes


def drafter_tensors(hidden, ffn):
    """[(name, shape)] of a DFlash v1 drafter, in the order they are laid out."""
    hd = max(1, int(round(hidden * HD_PER_H)))
    q, kv = HEADS * hd, KV_HEADS * hd
    out = [("fc.weight", [hidden, FEATURES * hidden]),
           ("hidden_norm.weight", [hidden]),
           ("norm.weight", [hidden])]
    for i in range(LAYERS):
        p = "layers.%d." % i
        out += [(p + "input_layernorm.weight", [hidden]),
                (p + "post_attention_layernorm.weight", [hidden]),
                (p + "self_attn.q_proj.weight", [q, hidden]),
                (p + "self_attn.k_proj.weight", [kv, hidden]),
                (p + "self_attn.v_proj.weight", [kv, hidden]),
                (p + "self_attn.o_proj.weight", [hidden, q]),
                (p + "self_attn.q_norm.weight", [hd]),
                (p + "self_attn.k_norm.weight", [hd]),
                (p + "mlp.gate_proj.weight", [ffn, hidden]),
                (p + "mlp.up_proj.weight", [ffn, hidden]),
                (p + "mlp.down_proj.weight", [hidden, ffn])]
    return out


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def data_bytes(tensors):
    return sum(numel(s) for _name, s in tensors) * ELEM


def scaled_tensors(target):
    """Tensors whose data region is as close to ``target`` bytes as the shapes allow (never over)."""
    # Largest H whose proportional FFN still fits, then the widest FFN that fits at that H.
    lo, hi = 1, 1 << 20
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if data_bytes(drafter_tensors(mid, max(1, int(mid * FFN_PER_H)))) <= target:
            lo = mid
        else:
            hi = mid - 1
    hidden = lo
    without_ffn = data_bytes(drafter_tensors(hidden, 0))
    ffn = (target - without_ffn) // (3 * LAYERS * hidden * ELEM)
    return drafter_tensors(hidden, ffn)


def header_bytes(tensors):
    header = {METADATA_KEY: {"format": "pt"}}
    offset = 0
    for name, shape in tensors:
        size = numel(shape) * ELEM
        header[name] = {"dtype": DTYPE, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header, separators=(",", ":")).encode("utf-8")
    # Pad with spaces to 8 bytes, as the safetensors library writes it.
    raw += b" " * (-len(raw) % 8)
    return raw, offset


def write_file(path, tensors, sparse, rng):
    raw, size = header_bytes(tensors)
    with open(path, "wb") as fh:
        fh.write(struct.pack("<Q", len(raw)))
        fh.write(raw)
        if sparse:
            # The data region as a hole: the file has its full length, no data blocks.
            fh.truncate(8 + len(raw) + size)
        else:
            chunk = 64 << 20
            left = size
            while left:
                n = min(chunk, left)
                fh.write(rng.bytes(n))
                left -= n
            # Flush it to disk now, so that writeback does not run under the timings that follow.
            fh.flush()
            os.fsync(fh.fileno())
    return 8 + len(raw) + size, len(raw)


def via_ours(path):
    header = read_header(path)
    return {k: (v.dtype, list(v.shape)) for k, v in header.items() if k != METADATA_KEY}


# safetensors reports dtypes by its Rust enum's names; ours uses the file's strings.
ST_DTYPES = {"float16": "F16", "F16": "F16"}


def via_safe_open(path):
    out = {}
    with safe_open(path, framework="numpy") as fh:
        for key in fh.keys():
            sl = fh.get_slice(key)
            out[key] = (ST_DTYPES.get(sl.get_dtype(), sl.get_dtype()), list(sl.get_shape()))
    return out


def via_full_load(path):
    tensors = load_file(path)
    return {k: ("F16" if v.dtype == np.float16 else str(v.dtype), list(v.shape)) for k, v in tensors.items()}


def timed(fn, path, repeats):
    times = []
    for _repeat in range(repeats):
        t0 = time.perf_counter()
        result = fn(path)
        times.append(time.perf_counter() - t0)
        del result
    return times


def fmt(times):
    if not times:
        return "-"
    return "%s (%s-%s)" % (ms(statistics.median(times)), ms(min(times)), ms(max(times)))


def ms(seconds):
    value = seconds * 1000.0
    return "%.3f" % value if value < 10 else "%.1f" % value


def machine():
    with open("/proc/meminfo") as fh:
        mem = {line.split(":")[0]: int(line.split()[1]) for line in fh}
    return "nproc %d, MemTotal %.1f GiB, MemAvailable %.1f GiB, Python %s, safetensors %s, numpy %s" % (
        os.cpu_count(), mem["MemTotal"] / 1048576.0, mem["MemAvailable"] / 1048576.0,
        sys.version.split()[0], safetensors.__version__, np.__version__)


def load():
    return "%.2f %.2f %.2f" % os.getloadavg()


def main():
    global LAYERS
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default=DEFAULT_SIZES, help="comma-separated target sizes (default %(default)s)")
    parser.add_argument("--repeats", type=int, default=7, help="timed runs per figure, >= 5 (default %(default)s)")
    parser.add_argument("--max-load", default="1G", help="largest size also written with real data and fully loaded")
    parser.add_argument("--tmpdir", default=None, help="where the files go (default: the system temp dir)")
    parser.add_argument("--layers", type=int, default=LAYERS,
                        help="drafter layers, 3 + 11 per layer tensors (default %(default)s: Qwen3.6-27B-DFlash)")
    args = parser.parse_args()
    LAYERS = args.layers
    if args.repeats < 5:
        parser.error("--repeats must be at least 5")
    sizes = [parse_size(s) for s in args.sizes.split(",") if s.strip()]
    max_load = parse_size(args.max_load)

    print("# machine: %s" % machine())
    print("# load average at start: %s" % load())
    print("# %d-layer drafter layout: %d tensors at every size" % (LAYERS, 3 + 11 * LAYERS))
    print("# %d timed runs per figure, no warm-up run; median (min-max) in ms; page cache warm" % args.repeats)
    workdir = tempfile.mkdtemp(prefix="bench-header-", dir=args.tmpdir)
    rng = np.random.default_rng(4)
    rows, ratio = [], None
    try:
        for target in sizes:
            tensors = scaled_tensors(target)
            variants = [("sparse", True)] + ([("real data", False)] if target <= max_load else [])
            for label, sparse in variants:
                path = os.path.join(workdir, "drafter-%d-%s.safetensors" % (target, "sparse" if sparse else "real"))
                size, hlen = write_file(path, tensors, sparse, rng)
                on_disk = os.stat(path).st_blocks * 512
                # The three readers must agree before their times mean anything.
                expected = via_ours(path)
                if via_safe_open(path) != expected:
                    raise SystemExit("%s: safe_open disagrees with read_header" % path)
                full = None
                if not sparse:
                    if via_full_load(path) != expected:
                        raise SystemExit("%s: load_file disagrees with read_header" % path)
                    full = timed(via_full_load, path, args.repeats)
                ours = timed(via_ours, path, args.repeats)
                st = timed(via_safe_open, path, args.repeats)
                rows.append((human(size), label, human(on_disk), len(expected), hlen, ours, st, full, load()))
                if not sparse and target == max(t for t in sizes if t <= max_load):
                    ratio = (human(size), statistics.median(full) / statistics.median(ours),
                             statistics.median(full) / statistics.median(st))
                os.unlink(path)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    head = ("file size", "data", "on disk", "tensors", "header B", "read_header ms", "safe_open ms", "load_file ms", "load avg")
    print()
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join("---" for _col in head) + "|")
    for size, label, disk, count, hlen, ours, st, full, avg in rows:
        print("| %s | %s | %s | %d | %d | %s | %s | %s | %s |" % (size, label, disk, count, hlen, fmt(ours), fmt(st), fmt(full), avg))
    print()
    if ratio:
        print("full load vs header read at %s (real data, medians): load_file / read_header = %.0fx, "
              "load_file / safe_open = %.0fx" % ratio)
    print("# load average at end: %s" % load())


if __name__ == "__main__":
    main()
