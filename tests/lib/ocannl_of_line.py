#!/usr/bin/env python3
"""ocannl_of_line — how OCANNL's autotuner reads a calibration row
(Cost_model.Calibration.of_line), its rules applied exactly and written
anew here, independent of nunatak's reader: the tests check with it that
the rows nunatak writes are rows the autotuner keeps.

of_line splits the line at every tab and takes 12 fields (backend digest
routine label measured model kernels flops bytes flops_approx bytes_approx
opaque) or 11 (the same without routine); measured is Float.of_string,
model empty (no coverage) or Float.of_string, kernels/flops/bytes
Int.of_string (OCaml's int_of_string), the three flags Bool.of_string
(exactly "true" or "false"). Any other line, or any of these failing,
gives None: the row is dropped, silently.

    python3 ocannl_of_line.py FILE...

prints "N rows kept" and exits 0 when every line of every file is kept;
else lists each dropped line (file:line: why) and exits 1.
"""
import re
import sys

INT_BITS = 63  # an OCaml int on a 64-bit machine


class Dropped(Exception):
    pass


def digit(c):
    if "0" <= c <= "9":
        return ord(c) - ord("0")
    if "a" <= c <= "f":
        return ord(c) - ord("a") + 10
    if "A" <= c <= "F":
        return ord(c) - ord("A") + 10
    return -1


def int_of_string(s):
    """OCaml's int_of_string (runtime parse_intnat, nbits 63): an optional
    sign, an optional 0x/0o/0b/0u prefix (then unsigned: up to 2^63 - 1,
    wrapping), a digit first, then digits and '_'; signed decimal in
    [-2^62, 2^62 - 1]; nothing else in the string."""
    i, sign = 0, 1
    if s[:1] == "-":
        sign, i = -1, 1
    elif s[:1] == "+":
        i = 1
    base, signed = 10, True
    if s[i:i + 1] == "0" and s[i + 1:i + 2] in ("x", "X", "o", "O", "b", "B", "u", "U"):
        base = {"x": 16, "o": 8, "b": 2, "u": 10}[s[i + 1].lower()]
        signed = False
        i += 2
    d = digit(s[i]) if i < len(s) else -1
    if d < 0 or d >= base:
        raise Dropped("Int.of_string %r: no digit" % s)
    res, i = d, i + 1
    while i < len(s):
        c = s[i]
        if c == "_":
            i += 1
            continue
        d = digit(c)
        if d < 0 or d >= base:
            break
        res = res * base + d
        if res >= 1 << 64:
            raise Dropped("Int.of_string %r: overflow" % s)
        i += 1
    if i != len(s):
        raise Dropped("Int.of_string %r: not a number to its end" % s)
    if signed:
        if (sign > 0 and res >= 1 << (INT_BITS - 1)) or (sign < 0 and res > 1 << (INT_BITS - 1)):
            raise Dropped("Int.of_string %r: beyond an OCaml int" % s)
    elif res >= 1 << INT_BITS:
        raise Dropped("Int.of_string %r: beyond an OCaml int" % s)
    v = (sign * res) % (1 << INT_BITS)
    return v - (1 << INT_BITS) if v >= 1 << (INT_BITS - 1) else v


# What Float.of_string takes of decimal text (underscores removed first, as
# OCaml does; strtod skips leading white space, nothing may follow).
# Hexadecimal floats, which OCaml also takes, are left out: a stricter
# reader can only find more rows dropped, never fewer.
FLOAT = re.compile(r"[ \t\n\v\f\r]*[+-]?((\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|nan|inf|infinity)",
                   re.IGNORECASE)


def float_of_string(s):
    t = s.replace("_", "")
    if not t or not FLOAT.fullmatch(t):
        raise Dropped("Float.of_string %r" % s)
    return float(t)


def bool_of_string(s):
    if s == "true":
        return True
    if s == "false":
        return False
    raise Dropped("Bool.of_string %r: neither true nor false" % s)


def of_line(line):
    """The row as a dict, or raises Dropped (of_line's None) with why."""
    f = line.split("\t")
    if len(f) == 11:
        f = f[:2] + [""] + f[2:]
    elif len(f) != 12:
        raise Dropped("%d columns, neither 12 nor 11" % len(f))
    return {
        "backend": f[0], "digest": f[1], "routine": f[2], "label": f[3],
        "measured_ms": float_of_string(f[4]),
        "model_ms": None if f[5] == "" else float_of_string(f[5]),
        "kernels": int_of_string(f[6]), "flops": int_of_string(f[7]),
        "bytes": int_of_string(f[8]),
        "flops_approx": bool_of_string(f[9]), "bytes_approx": bool_of_string(f[10]),
        "opaque": bool_of_string(f[11]),
    }


def main(paths):
    kept, dropped = 0, []
    for path in paths:
        with open(path, newline="") as fh:
            lines = fh.read().split("\n")
        if lines and lines[-1] == "":
            lines.pop()  # the newline ending the last row
        for n, line in enumerate(lines, 1):
            try:
                of_line(line)
                kept += 1
            except Dropped as e:
                dropped.append("%s:%d: dropped: %s" % (path, n, e))
    print("%d rows kept" % kept)
    for d in dropped:
        print(d)
    return 1 if dropped or not kept else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
