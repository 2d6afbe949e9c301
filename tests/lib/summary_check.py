#!/usr/bin/env python3
"""summary_check.py — checks on `nunatak summary --json` for the unwind
integration tests. Each prints what it found and exits 1 with the reason
when the check fails.

  summary_check.py JSON kernel [--min-kernel-share X] [--tolerance 0.01]
      Hotspots of module '[kernel]' exist, named after kernel symbols (the
      heavier ones: not '[kernel]' nor an address); `kernel_share` is given
      and equals their shares' sum; user and kernel shares add up to 1
  summary_check.py JSON kernel-names
      prints the kernel Hotspots' names, one a line
  summary_check.py JSON extents --module M --debug FILE --expect NAME=SHARE...
      [--min-share 0.02] [--tolerance 0.05] [--max-module-hotspots N]
      the Hotspots of module M above --min-share are exactly the functions
      --expect names, each one Hotspot `M+0xSTART` (unresolved) whose START
      is the function's start in FILE (the unstripped twin: virtual address
      or file offset), its share within --tolerance; and M has at most N
      Hotspots in all (never one per instruction)
  summary_check.py JSON degradations --forbid REGEX
      no Degradation whose name or message matches REGEX
  summary_check.py JSON has-degradation --match REGEX
  summary_check.py JSON process-cpu --exe NAME --expect SECONDS [--tolerance 0.05]
      the process whose executable ends with NAME has a CPU time (user +
      system) within --tolerance (relative) of SECONDS
  summary_check.py JSON threads --exe NAME --busy N [--min-share 0.3]
      that process has at least N threads each holding --min-share of its
      samples

The `processes` and `threads` fields (issue 9 item 5) are read as
processes[i] = {pid, executable, samples, cpu_time (seconds), threads (a
count)}, threads[i] = {pid, tid, samples} (a list of threads nested in
their process is taken too).
"""
import argparse
import json
import re
import subprocess
import sys


def die(msg):
    print(f"FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def hotspots(d):
    hs = d.get("hotspots")
    if hs is None:
        die("summary --json has no 'hotspots'")
    return hs


def check_kernel(d, a):
    hs = hotspots(d)
    kernel = [h for h in hs if h.get("module") == "[kernel]"]
    user = [h for h in hs if h.get("module") != "[kernel]"]
    ks = sum(h["share"] for h in kernel)
    us = sum(h["share"] for h in user)
    print(f"kernel Hotspots: {len(kernel)}, their share {ks:.4f}; user share {us:.4f}; "
          f"kernel_share {d.get('kernel_share')}")
    if not kernel:
        die("no Hotspot of module '[kernel]'; modules seen: "
            + ", ".join(sorted({str(h.get('module')) for h in hs})[:10]))
    unnamed = [h["name"] for h in kernel if h["share"] >= 0.05 and
               not re.fullmatch(r"[A-Za-z_][\w.$]*", h["name"])]
    if unnamed:
        die("kernel Hotspots not named after a kernel symbol: " + ", ".join(unnamed))
    if "kernel_share" not in d or d["kernel_share"] is None:
        die("summary --json has no 'kernel_share'")
    if abs(d["kernel_share"] - ks) > a.tolerance:
        die(f"kernel_share {d['kernel_share']:.4f} is not the kernel Hotspots' {ks:.4f}")
    if abs(us + ks - 1.0) > a.tolerance:
        die(f"user ({us:.4f}) and kernel ({ks:.4f}) shares add up to {us + ks:.4f}, not 1 "
            "(is every Hotspot listed?)")
    if ks < a.min_kernel_share:
        die(f"kernel share {ks:.4f}, expected at least {a.min_kernel_share}")


def function_starts(path):
    """name -> (virtual address, file offset) of the functions of an ELF file"""
    syms = {}
    out = subprocess.run(["nm", "--defined-only", path], capture_output=True, text=True,
                         check=True).stdout
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "tT":
            syms[parts[2]] = int(parts[0], 16)
    loads = []
    out = subprocess.run(["readelf", "-lW", path], capture_output=True, text=True,
                         check=True).stdout
    for line in out.splitlines():
        f = line.split()
        if f and f[0] == "LOAD":
            loads.append((int(f[1], 16), int(f[2], 16), int(f[4], 16)))  # offset, vaddr, filesz
    res = {}
    for name, va in syms.items():
        off = next((va - v + o for o, v, sz in loads if v <= va < v + sz), None)
        res[name] = (va, off)
    return res


def check_extents(d, a):
    hs = hotspots(d)
    mod = [h for h in hs if h.get("module") == a.module]
    top = [h for h in mod if h["share"] >= a.min_share]
    print(f"module {a.module}: {len(mod)} Hotspots, {len(top)} above {a.min_share}: "
          + ", ".join(f"{h['name']} {h['share']:.3f}" for h in top))
    expect = {}
    for e in a.expect:
        name, _, share = e.partition("=")
        expect[name] = float(share)
    starts = function_starts(a.debug)
    by_start = {}
    for name in expect:
        if name not in starts:
            die(f"{a.debug} has no function {name}")
        for x in starts[name]:
            if x is not None:
                by_start[x] = name
    if len(top) != len(expect):
        die(f"{len(top)} Hotspots of {a.module} hold at least {a.min_share} of the samples, "
            f"expected {len(expect)} (one per function): "
            + ", ".join(h["name"] for h in top[:20]))
    seen = {}
    pat = re.compile(re.escape(a.module) + r"\+0x([0-9a-fA-F]+)")
    for h in top:
        m = pat.fullmatch(h["name"])
        if not m:
            die(f"Hotspot '{h['name']}' is not named {a.module}+0xSTART")
        start = int(m.group(1), 16)
        if start not in by_start:
            die(f"Hotspot '{h['name']}' does not start a hot function: starts "
                + ", ".join(f"{n}=0x{starts[n][0]:x}/0x{starts[n][1]:x}" for n in expect))
        name = by_start[start]
        if name in seen:
            die(f"{name} is two Hotspots: {seen[name]} and {h['name']}")
        seen[name] = h["name"]
        if h.get("resolution_level") not in (None, "unresolved"):
            die(f"{h['name']} has resolution level {h.get('resolution_level')}, not unresolved")
        if abs(h["share"] - expect[name]) > a.tolerance:
            die(f"{h['name']} ({name}) has {h['share']:.3f} of the samples, expected "
                f"{expect[name]} +- {a.tolerance}")
    if len(mod) > a.max_module_hotspots:
        die(f"{len(mod)} Hotspots in {a.module}, at most {a.max_module_hotspots} expected "
            "(one per function, never one per instruction)")


def degradation_texts(d):
    return [(g.get("name", ""), g.get("message", ""), g.get("remedy", ""))
            for g in d.get("degradations", [])]


def check_degradations(d, a):
    r = re.compile(a.forbid, re.I)
    bad = [g for g in degradation_texts(d) if r.search(g[0]) or r.search(g[1])]
    print("Degradations: " + ("; ".join(g[0] for g in degradation_texts(d)) or "none"))
    if bad:
        die("Degradation " + "; ".join(f"{n}: {m} ({rem})" for n, m, rem in bad))


def check_has_degradation(d, a):
    r = re.compile(a.match, re.I)
    if not any(r.search(g[0]) or r.search(g[1]) for g in degradation_texts(d)):
        die(f"no Degradation matches /{a.match}/: "
            + ("; ".join(g[0] for g in degradation_texts(d)) or "none"))


def the_process(d, exe):
    procs = d.get("processes")
    if procs is None:
        die("summary --json has no 'processes' (issue 9 item 5)")
    mine = [p for p in procs if str(p.get("executable", "")).endswith(exe)]
    if len(mine) != 1:
        die(f"{len(mine)} processes of executable *{exe} in summary --json: {procs}")
    return mine[0]


def cpu_seconds(p):
    for k in ("cpu_time_s", "cpu_seconds", "cpu_time"):
        if isinstance(p.get(k), (int, float)):
            return float(p[k])
    if isinstance(p.get("cpu_time_user_s"), (int, float)):
        return float(p["cpu_time_user_s"]) + float(p.get("cpu_time_system_s") or 0)
    if isinstance(p.get("cpu_time_user"), (int, float)):
        v = float(p["cpu_time_user"]) + float(p.get("cpu_time_system") or 0)
        return v / 1e9 if v > 1e5 else v
    die(f"no CPU time in the process entry {p}")


def check_process_cpu(d, a):
    p = the_process(d, a.exe)
    cpu = cpu_seconds(p)
    print(f"process {p.get('pid')} ({p.get('executable')}): {cpu:.3f} s of CPU, "
          f"{p.get('samples')} samples; the workload's getrusage: {a.expect:.3f} s")
    if abs(cpu - a.expect) > a.tolerance * a.expect:
        die(f"process CPU time {cpu:.3f} s is not within {100 * a.tolerance:.0f} % of "
            f"getrusage's {a.expect:.3f} s")


def check_threads(d, a):
    p = the_process(d, a.exe)
    threads = p.get("threads")
    if not isinstance(threads, list):
        if not isinstance(d.get("threads"), list):
            die("summary --json has no 'threads' (issue 9 item 5)")
        threads = [t for t in d["threads"] if t.get("pid") == p.get("pid")]
    total = sum(t.get("samples", 0) for t in threads)
    busy = [t for t in threads if total and t.get("samples", 0) >= a.min_share * total]
    print(f"threads of {p.get('pid')}: " + ", ".join(
        f"{t.get('tid')}: {t.get('samples')}" for t in threads))
    if len(busy) < a.busy:
        die(f"{len(busy)} threads hold at least {a.min_share} of the process' samples, "
            f"expected {a.busy}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("json")
    sub = p.add_subparsers(dest="cmd", required=True)
    k = sub.add_parser("kernel")
    k.add_argument("--min-kernel-share", type=float, default=0.0)
    k.add_argument("--tolerance", type=float, default=0.01)
    sub.add_parser("kernel-names")
    e = sub.add_parser("extents")
    e.add_argument("--module", required=True)
    e.add_argument("--debug", required=True)
    e.add_argument("--expect", action="append", required=True)
    e.add_argument("--min-share", type=float, default=0.02)
    e.add_argument("--tolerance", type=float, default=0.05)
    e.add_argument("--max-module-hotspots", type=int, default=8)
    g = sub.add_parser("degradations")
    g.add_argument("--forbid", required=True)
    h = sub.add_parser("has-degradation")
    h.add_argument("--match", required=True)
    c = sub.add_parser("process-cpu")
    c.add_argument("--exe", required=True)
    c.add_argument("--expect", type=float, required=True)
    c.add_argument("--tolerance", type=float, default=0.05)
    t = sub.add_parser("threads")
    t.add_argument("--exe", required=True)
    t.add_argument("--busy", type=int, required=True)
    t.add_argument("--min-share", type=float, default=0.3)
    a = p.parse_args()
    d = json.load(open(a.json))
    if a.cmd == "kernel":
        check_kernel(d, a)
    elif a.cmd == "kernel-names":
        for h in hotspots(d):
            if h.get("module") == "[kernel]":
                print(h["name"])
    elif a.cmd == "extents":
        check_extents(d, a)
    elif a.cmd == "degradations":
        check_degradations(d, a)
    elif a.cmd == "has-degradation":
        check_has_degradation(d, a)
    elif a.cmd == "process-cpu":
        check_process_cpu(d, a)
    else:
        check_threads(d, a)


main()
