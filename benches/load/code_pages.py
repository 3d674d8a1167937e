#!/usr/bin/env python3
"""Where the load harness's servers' code pages go: the part of peak RSS that is not
heap or stacks.

A server's resident set counts the pages of its binary it has run, mapped from the
page cache: on Linux a fault on a file page maps the pages around it too
(`fault_around_bytes`, 64 KB), so what a server holds of its binary is about 64 KB
for each 64 KB window of code it has run at least once, however little of it. This
script runs the load harness twice, one round each, and prints per server and mode:

* resident binary: the pages of the server's executable mapped in its address
  space (`/proc/<pid>/pagemap`, sampled every 0.5 s, the most seen), by section;
* code run: the functions each server ran (`LOAD_CALLGRIND=1`: the harness runs
  each server under callgrind), their bytes, and the 64 KB windows of the binary
  they lie in, with the crates whose code fills the windows only toolfunc's server
  touches.

    python3 benches/load/code_pages.py [--secs 2]

Linux only; needs `valgrind` and binutils' `nm` and `readelf`. Standard library only.
The servers of both runs are the same binary, so the figures compare the code each
server runs, not two builds.
"""

import argparse
import collections
import glob
import json
import os
import re
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WINDOW = 64 * 1024
KINDS = (b"toolfunc-mcp", b"rmcp", b"toolfunc-http")
# The modes each kind of server is run in, in the harness's order within a round.
MODES = {
    "toolfunc-mcp": ["session per call", "sessionless"],
    "rmcp": ["session per call", "sessionless"],
    "toolfunc-http": ["HTTP RPC"],
}


def with_modes(kinds):
    """(kind, mode) of each server, given their kinds in the order they ran."""
    seen = collections.Counter()
    rows = []
    for kind in kinds:
        modes = MODES[kind]
        rows.append((kind, modes[min(seen[kind], len(modes) - 1)]))
        seen[kind] += 1
    return rows


def build():
    """Builds the load bench; the path of its executable."""
    out = subprocess.run(
        ["cargo", "bench", "--bench", "load", "--no-run", "--message-format=json"],
        cwd=ROOT, check=True, capture_output=True, text=True,
    ).stdout
    for line in out.splitlines():
        msg = json.loads(line)
        if msg.get("reason") == "compiler-artifact" and msg["target"]["name"] == "load":
            if msg.get("executable"):
                return msg["executable"]
    sys.exit("cargo built no `load` executable")


def servers():
    """(pid, kind) of the harness's server processes running now."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"serve" in cmd:
            at = cmd.index(b"serve")
            if at + 1 < len(cmd) and cmd[at + 1] in KINDS and b"valgrind" not in cmd[0]:
                found.append((int(pid), cmd[at + 1].decode()))
    return found


def resident(pid, exe):
    """The file offsets of `exe`'s pages mapped in `pid`."""
    offsets = []
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/pagemap", "rb") as pagemap:
        for line in maps:
            parts = line.split()
            if len(parts) < 6 or os.path.realpath(parts[5]) != exe:
                continue
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            offset = int(parts[2], 16)
            pagemap.seek(lo // 4096 * 8)
            data = pagemap.read((hi - lo) // 4096 * 8)
            for i in range(len(data) // 8):
                if struct.unpack_from("<Q", data, i * 8)[0] >> 63:
                    offsets.append(offset + i * 4096)
    return offsets


def sample(exe, stop, seen):
    """Until `stop`, the most pages of `exe` each server has had mapped."""
    while not stop.is_set():
        for pid, kind in servers():
            try:
                pages = resident(pid, exe)
            except OSError:
                continue
            if len(pages) > len(seen.get(pid, (kind, []))[1]):
                seen[pid] = (kind, pages)
        time.sleep(0.5)


def sections(exe):
    """(file offset, size, name) of `exe`'s sections."""
    out = subprocess.run(["readelf", "-SW", exe], check=True, capture_output=True, text=True).stdout
    found = []
    for line in out.splitlines():
        m = re.match(r"\s*\[\s*\d+\]\s+(\.\S+)\s+\S+\s+[0-9a-f]+\s+([0-9a-f]+)\s+([0-9a-f]+)", line)
        if m:
            found.append((int(m.group(2), 16), int(m.group(3), 16), m.group(1)))
    return found


def symbols(exe):
    """Mangled name -> (address, size) of `exe`'s functions, and mangled -> demangled."""
    out = subprocess.run(["nm", "-S", "--defined-only", exe], check=True, capture_output=True, text=True).stdout
    found = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in "tTwW":
            found.setdefault(parts[3], (int(parts[0], 16), int(parts[1], 16)))
    names = list(found)
    plain = subprocess.run(["c++filt"], input="\n".join(names), check=True, capture_output=True, text=True).stdout
    return found, dict(zip(names, plain.split("\n")))


def crate(name):
    """The crate a demangled symbol names first (inside `core`/`alloc`/`std`'s generics,
    the first other crate)."""
    paths = re.findall(r"(?:^|[<(&, *])([a-z_][a-z0-9_]*)::", name)
    for path in paths:
        if path not in ("core", "alloc", "std", "impl", "dyn"):
            return path
    return paths[0] if paths else "?"


def run(exe, secs, env):
    return subprocess.run(
        [exe, "--rounds", "1", "--secs", str(secs), "--warmup", "1"],
        cwd=ROOT, env={**os.environ, **env}, check=True, capture_output=True, text=True,
    ).stdout


def main():
    args = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    args.add_argument("--secs", type=int, default=2, help="seconds measured per row")
    secs = args.parse_args().secs
    exe = os.path.realpath(build())

    # Run 1: the harness as it is, its servers' resident pages sampled.
    stop, seen = threading.Event(), {}
    sampler = threading.Thread(target=sample, args=(exe, stop, seen))
    sampler.start()
    try:
        table = run(exe, secs, {})
    finally:
        stop.set()
        sampler.join()
    print(table)
    secs_of = sections(exe)

    def section(offset):
        return next((n for o, s, n in secs_of if o <= offset < o + s), "other")

    print("| server | mode | resident binary MB | of it .text MB | .rodata MB | other MB |")
    print("| --- | --- | --- | --- | --- | --- |")
    pids = sorted(seen)
    for (kind, mode), pid in zip(with_modes(seen[pid][0] for pid in pids), pids):
        pages = collections.Counter(section(o) for o in seen[pid][1])
        total = sum(pages.values())
        text, rodata = pages[".text"], pages[".rodata"]
        mb = lambda n: f"{n * 4096 / 2**20:.1f}"
        print(f"| {kind} | {mode} | {mb(total)} | {mb(text)} | {mb(rodata)} | {mb(total - text - rodata)} |")

    # Run 2: under callgrind, the functions each server ran.
    before = set(glob.glob("/tmp/callgrind.load.*"))
    run(exe, secs, {"LOAD_CALLGRIND": "1", "VALGRIND_OPTS": "--demangle=no"})
    files = sorted(set(glob.glob("/tmp/callgrind.load.*")) - before, key=lambda f: int(f.rsplit(".", 1)[1]))
    syms, plain = symbols(exe)
    ran, kinds = [], []
    for path in files:
        text = Path(path).read_text()
        kinds.append(re.search(r"^cmd: .* serve (\S+)", text, re.M).group(1))
        names = {m.group(1) for m in re.finditer(r"^c?fn=\(\d+\) (.*)$", text, re.M)}
        windows = collections.defaultdict(collections.Counter)
        size = 0
        for name in names & syms.keys():
            address, length = syms[name]
            size += length
            for w in range(address // WINDOW, (address + max(length, 1) - 1) // WINDOW + 1):
                windows[w][crate(plain[name])] += length
        ran.append((len(names), size, windows))
        os.remove(path)
    print("\n| server | mode | functions run | their code KB | 64 KB windows they lie in | MB |")
    print("| --- | --- | --- | --- | --- | --- |")
    rows = with_modes(kinds)
    for (kind, mode), (count, size, windows) in zip(rows, ran):
        print(f"| {kind} | {mode} | {count} | {size // 1024} | {len(windows)} | {len(windows) * WINDOW / 2**20:.1f} |")
    for mode in ("session per call", "sessionless"):
        if ("toolfunc-mcp", mode) not in rows or ("rmcp", mode) not in rows:
            continue
        ours, theirs = rows.index(("toolfunc-mcp", mode)), rows.index(("rmcp", mode))
        only = set(ran[ours][2]) - set(ran[theirs][2])
        by_crate = collections.Counter()
        for w in only:
            by_crate[ran[ours][2][w].most_common(1)[0][0]] += 1
        print(f"\n{mode}: toolfunc-mcp ÷ rmcp: code run {ran[ours][1] / ran[theirs][1]:.2f}×, "
              f"64 KB windows {len(ran[ours][2]) / len(ran[theirs][2]):.2f}×; the {len(only)} windows "
              f"only toolfunc-mcp runs, by the crate that fills most of each: "
              + ", ".join(f"{c} {n}" for c, n in by_crate.most_common(8)))


if __name__ == "__main__":
    main()
