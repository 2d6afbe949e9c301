#!/usr/bin/env python3
"""folded_check.py — checks on a Run's stacks in folded form (`nunatak
export RUN --format folded`: one line per distinct stack, frames root first
separated by ';', a space, the sample count; a truncated stack starts with
a '[truncated]' frame), for the unwind integration tests.

  folded_check.py FILE sum
      prints the sum of the counts (and fails on a malformed line)
  folded_check.py FILE chain --chain A,B,C [--caller RE]... [--via RE]...
                  [--min-share 0.99] [--min-samples N] [--what TEXT]
      every stack holding a frame C: the frames up to its first C must end
      with A;B;C, the frame just above A (root side) must match a --caller
      (when given), some frame above A must match a --via (when given), and
      the stack must not be truncated. Passes when the samples that hold
      (weighted by count) are at least --min-share of those with a C, and
      there are at least --min-samples of those.
  folded_check.py FILE has --frame RE [--with RE]... [--min-samples N]
      the samples whose stack holds a frame matching --frame (and a frame
      matching each --with, anywhere): at least --min-samples of them
  folded_check.py FILE count --frame RE
      prints how many samples hold a frame matching --frame
  folded_check.py FILE above --names FILE --user RE [--min-share X]
      the samples whose stack holds a --user frame with, leafward of it, a
      frame named in --names (one name a line: the kernel Hotspots): at
      least --min-share of all samples
  folded_check.py FILE leaf-with --names FILE --with RE [--min-share X]
      of the samples whose leaf frame is named in --names, at least
      --min-share hold a frame matching --with

A frame pattern RE matches a frame name when it matches the whole name, or
the name up to its parameter list ("ns::f(double) const" matches
"ns::f"). A frame written the way some flame graph tools write them,
"module`name" or a kernel frame "name_[k]", is compared by its name.
Failures print the reason and the heaviest offending stacks.
"""
import argparse
import re
import sys


def parse(path):
    stacks = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line:
                continue
            frames, sep, count = line.rpartition(" ")
            if not sep or not count.isdigit() or not frames:
                sys.exit(f"FAIL: {path}:{n}: not 'frames count': {line[:200]!r}")
            stacks.append((frames.split(";"), int(count)))
    return stacks


def norm(name):
    if name.endswith("_[k]"):
        name = name[:-4]
    return name.rsplit("`", 1)[-1] if "`" in name else name


def matcher(patterns):
    res = [re.compile(p) for p in patterns]

    def match(name):
        name = norm(name)
        base = name.split("(", 1)[0] if "(" in name and not name.startswith("(") else name
        return any(r.fullmatch(name) or r.fullmatch(base) for r in res)
    return match


def show(bad, limit=5):
    for frames, count in sorted(bad, key=lambda x: -x[1])[:limit]:
        print(f"    {count:6d}  {';'.join(frames)[-400:]}", file=sys.stderr)


def check_chain(stacks, a):
    chain = [matcher([p]) for p in a.chain.split(",")]
    leaf = chain[-1]
    caller = matcher(a.caller) if a.caller else None
    via = matcher(a.via) if a.via else None
    good = total = 0
    bad = []
    for frames, count in stacks:
        k = next((i for i, f in enumerate(frames) if leaf(f)), None)
        if k is None:
            continue
        total += count
        start = k - len(chain) + 1
        ok = start >= 0 and norm(frames[0]) != "[truncated]"
        ok = ok and all(m(f) for m, f in zip(chain, frames[start:k + 1]))
        if ok and caller:
            ok = start >= 1 and caller(frames[start - 1])
        if ok and via:
            ok = any(via(f) for f in frames[:start])
        if ok:
            good += count
        else:
            bad.append((frames, count))
    what = a.what or a.chain
    share = good / total if total else 0.0
    print(f"{what}: {good} of {total} samples complete ({100 * share:.2f} %)")
    if total < a.min_samples:
        sys.exit(f"FAIL: {what}: {total} samples hold {a.chain.split(',')[-1]}, "
                 f"expected at least {a.min_samples}")
    if share < a.min_share:
        print(f"FAIL: {what}: {100 * share:.2f} % of the samples carry the complete chain, "
              f"expected at least {100 * a.min_share:.1f} %; heaviest others:", file=sys.stderr)
        show(bad)
        sys.exit(1)


def check_has(stacks, a):
    frame = matcher([a.frame])
    withs = [matcher([w]) for w in a.with_]
    n = sum(c for fr, c in stacks if any(frame(f) for f in fr) and
            all(any(w(f) for f in fr) for w in withs))
    what = a.what or a.frame
    print(f"{what}: {n} samples")
    if n < a.min_samples:
        print(f"FAIL: {what}: {n} samples, expected at least {a.min_samples}; heaviest stacks:",
              file=sys.stderr)
        show(stacks)
        sys.exit(1)


def holding(stacks, frame):
    return sum(c for fr, c in stacks if any(frame(f) for f in fr))


def read_names(path):
    with open(path) as f:
        return {line.rstrip("\n") for line in f if line.strip()}


def check_above(stacks, a):
    names = read_names(a.names)
    user = matcher([a.user])
    total = sum(c for _, c in stacks)
    n = 0
    for frames, count in stacks:
        k = next((i for i, f in enumerate(frames) if user(f)), None)
        if k is not None and any(norm(f) in names for f in frames[k + 1:]):
            n += count
    share = n / total if total else 0.0
    print(f"{n} of {total} samples ({100 * share:.1f} %) hold {a.user} with a kernel frame above it")
    if share < a.min_share:
        print(f"FAIL: {100 * share:.1f} % of the samples hold {a.user} under a frame of "
              f"{a.names}, expected at least {100 * a.min_share:.0f} %; heaviest stacks:",
              file=sys.stderr)
        show(stacks)
        sys.exit(1)


def check_leaf_with(stacks, a):
    names = read_names(a.names)
    want = matcher([a.with_])
    leafs = [(fr, c) for fr, c in stacks if norm(fr[-1]) in names]
    total = sum(c for _, c in leafs)
    good = sum(c for fr, c in leafs if any(want(f) for f in fr))
    share = good / total if total else 0.0
    print(f"{good} of the {total} samples whose leaf is a named frame hold {a.with_} "
          f"({100 * share:.1f} %)")
    if not total or share < a.min_share:
        print(f"FAIL: {100 * share:.1f} % of the {total} samples with a leaf in {a.names} hold "
              f"{a.with_}, expected at least {100 * a.min_share:.0f} %; heaviest others:",
              file=sys.stderr)
        show([(fr, c) for fr, c in leafs if not any(want(f) for f in fr)])
        sys.exit(1)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("file")
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("sum")
    c = sub.add_parser("chain")
    c.add_argument("--chain", required=True)
    c.add_argument("--caller", action="append", default=[])
    c.add_argument("--via", action="append", default=[])
    c.add_argument("--min-share", type=float, default=0.99)
    c.add_argument("--min-samples", type=int, default=100)
    c.add_argument("--what")
    h = sub.add_parser("has")
    h.add_argument("--frame", required=True)
    h.add_argument("--with", dest="with_", action="append", default=[])
    h.add_argument("--min-samples", type=int, default=1)
    h.add_argument("--what")
    n = sub.add_parser("count")
    n.add_argument("--frame", required=True)
    b = sub.add_parser("above")
    b.add_argument("--names", required=True)
    b.add_argument("--user", required=True)
    b.add_argument("--min-share", type=float, default=0.5)
    w = sub.add_parser("leaf-with")
    w.add_argument("--names", required=True)
    w.add_argument("--with", dest="with_", required=True)
    w.add_argument("--min-share", type=float, default=0.9)
    a = p.parse_args()
    stacks = parse(a.file)
    if a.cmd == "sum":
        print(sum(c for _, c in stacks))
    elif a.cmd == "chain":
        check_chain(stacks, a)
    elif a.cmd == "has":
        check_has(stacks, a)
    elif a.cmd == "count":
        print(holding(stacks, matcher([a.frame])))
    elif a.cmd == "above":
        check_above(stacks, a)
    else:
        check_leaf_with(stacks, a)


main()
