#!/usr/bin/python3
"""mixed_check.py - the interpreter's mixed-signedness arithmetic against Python's integers.

The differential tests (mixed.pxl) only show that every backend agrees with the
interpreter. This test checks the interpreter itself: each case is a small pxl expression
(or statements) on scalar parameters, run by `pxl run --device ref` on a 1x1 image, and
its expected value is computed here with exact integer arithmetic from the rule in
docs/LANGUAGE.md ("Usual arithmetic conversions"): mixed signedness gives the
mathematical result; only the last conversion (into the reduction's type, the variable
of a compound assignment, a histogram weight) saturates, and same-type unsigned
arithmetic wraps. No expected value is taken from pxl's output.

usage: mixed_check.py PXL   (exit 0 when every case matches, 1 otherwise)
"""
import os
import subprocess
import sys
import tempfile

RANGES = {
    "u8": (0, 2**8 - 1), "i16": (-2**15, 2**15 - 1), "u16": (0, 2**16 - 1),
    "i32": (-2**31, 2**31 - 1), "u32": (0, 2**32 - 1),
    "i64": (-2**63, 2**63 - 1), "u64": (0, 2**64 - 1),
}


def sat(t, v):
    """A conversion into integer type t: saturates."""
    lo, hi = RANGES[t]
    return max(lo, min(hi, v))


def wrap(t, v):
    """Arithmetic in integer type t: two's complement wrap-around."""
    lo, hi = RANGES[t]
    return (v - lo) % (hi - lo + 1) + lo


# (result type, parameters {name: (type, value)}, expression, expected value)
# Parameters: u32 a, i32 b, i64 l, u64 n, u16 s, i16 h; the image's pixel in(0, 0) is 7.
EXPRS = [
    ("i64", {"a": ("u32", 5), "b": ("i32", -1)}, "a + b", 4),
    ("i32", {"a": ("u32", 5), "b": ("i32", -1)}, "a < b", 0),
    ("i32", {"a": ("u32", 5), "b": ("i32", 7)}, "a < b", 1),
    ("i32", {"a": ("u32", 2**32 - 1), "b": ("i32", -1)}, "a > b", 1),
    ("i32", {"a": ("u32", 2**32 - 1), "b": ("i32", -1)}, "a == b", 0),
    ("i32", {"a": ("u32", 0), "b": ("i32", 0)}, "a <= b", 1),
    ("i64", {"a": ("u32", 2**32 - 1), "b": ("i32", -2**31)}, "b - a", -2**31 - (2**32 - 1)),
    ("i64", {"a": ("u32", 0)}, "a - 1", -1),
    ("i32", {"a": ("u32", 0)}, "a - 1", -1),
    ("u32", {"a": ("u32", 3)}, "a - 7", 0),  # exact -4, stored: saturates
    ("i64", {"a": ("u32", 2**32 - 1), "b": ("i32", -2**31)}, "a * b", (2**32 - 1) * -2**31),
    ("i64", {"a": ("u32", 10), "b": ("i32", -3)}, "a / b", -3),  # truncates toward zero
    ("i64", {"a": ("u32", 10), "b": ("i32", -3)}, "a % b", 1),
    ("i64", {"a": ("u32", 2**32 - 1), "b": ("i32", -1)}, "a & b", 2**32 - 1),
    ("i64", {"a": ("u32", 0), "b": ("i32", -1)}, "a | b", -1),
    ("i64", {"a": ("u32", 1), "b": ("i32", -1)}, "a ^ b", -2),
    ("i32", {"s": ("u16", 65535), "b": ("i32", -32768)}, "s * b", 65535 * -32768),
    ("i32", {"s": ("u16", 65535), "b": ("i32", 40000)}, "s * b", wrap("i32", 65535 * 40000)),  # i32 math wraps
    ("i64", {"h": ("i16", -2), "a": ("u32", 4000000000)}, "h * a", -8000000000),
    ("i64", {"a": ("u32", 2**32 - 1), "l": ("i64", -9000000000)}, "a + l", 2**32 - 1 - 9000000000),
    ("i32", {"a": ("u32", 0), "l": ("i64", -1)}, "l < a", 1),
    ("i64", {"a": ("u32", 10)}, "in(0, 0) - a", wrap("u32", 7 - 10)),  # u8 with u32: u32, wraps
    ("i64", {"a": ("u32", 10), "b": ("i32", -1)}, "in(0, 0) - a * b", 17),
    # u64 with non-negative literals: u64 arithmetic (wraps)
    ("u64", {"n": ("u64", 41)}, "n + 1", 42),
    ("i32", {"n": ("u64", 0)}, "n > 0", 0),
    ("i32", {"n": ("u64", 2**64 - 1)}, "n > 0", 1),
    ("u64", {"n": ("u64", 0)}, "(n - 1) >> 1", (2**64 - 1) >> 1),
    ("u64", {"n": ("u64", 10)}, "n * 3 + 7", 37),
    ("u64", {"n": ("u64", 1000)}, "clamp(n, 0, 255)", 255),
    ("u64", {"n": ("u64", 0x1234)}, "n & 0xff", 0x34),
    ("u64", {"n": ("u64", 2**64 - 1)}, "n + 9223372036854775807", wrap("u64", 2**64 - 1 + 2**63 - 1)),
    ("i64", {"n": ("u64", 2**64 - 1), "l": ("i64", -5)}, "(i64)n + l", 2**63 - 1 - 5),  # the cast saturates
    # min, max, clamp and ?: of mixed types
    ("i64", {"a": ("u32", 5), "b": ("i32", -1)}, "min(a, b)", -1),
    ("i64", {"a": ("u32", 0), "b": ("i32", -7)}, "max(a, b)", 0),
    ("i64", {"a": ("u32", 2**32 - 1), "b": ("i32", 1)}, "max(a, b)", 2**32 - 1),
    ("i64", {"a": ("u32", 10), "b": ("i32", -100)}, "clamp(b, -5, a)", -5),
    ("i64", {"a": ("u32", 10), "b": ("i32", 100)}, "clamp(b, -5, a)", 10),
    ("i64", {"a": ("u32", 0), "b": ("i32", -1)}, "a > 0 ? a : b", -1),
    ("i64", {"a": ("u32", 3), "b": ("i32", -4)}, "abs(a + b)", 1),
    # vectors, lane by lane
    ("i64", {"a": ("u32", 5), "b": ("i32", -9)}, "(u32x3(a) + b).z", -4),
    ("i64", {"a": ("u32", 5), "b": ("i32", -9)}, "min(u32x4(a), i32x4(b)).w", -9),
    ("i32", {"a": ("u32", 5), "b": ("i32", -9)}, "(i32x3(b) - a).y < 0", 1),
]

# (parameters, statements ending in `bin(0, v)`, expected weight): the weight of bin 0
# over a 1x1 image is the value converted to i64. Values stay below 2^53 (the CLI prints
# bins from doubles).
STMTS = [
    ({"a": ("u32", 3)}, "u32 v = a; v -= 5; bin(0, v);", sat("u32", 3 - 5)),
    ({"a": ("u32", 10), "b": ("i32", -3)}, "u32 v = a; v += b; bin(0, v);", 7),
    ({"a": ("u32", 10), "b": ("i32", -30)}, "u32 v = a; v += b; bin(0, v);", sat("u32", 10 - 30)),
    ({"a": ("u32", 2**32 - 6), "b": ("i32", 10)}, "u32 v = a; v += b; bin(0, v);", sat("u32", 2**32 - 6 + 10)),
    ({"a": ("u32", 7), "b": ("i32", -2)}, "u32 v = a; v *= b; bin(0, v);", sat("u32", -14)),
    ({"a": ("u32", 7), "b": ("i32", -2)}, "i32 v = b; v -= a; bin(0, v);", -9),
    ({"a": ("u32", 0)}, "u32 v = a; v--; bin(0, v);", sat("u32", -1)),
    ({"a": ("u32", 2**32 - 1)}, "u32 v = a; v++; bin(0, v);", sat("u32", 2**32)),
    ({"n": ("u64", 5)}, "u64 m = n; m -= 7; bin(0, m >> 40);", wrap("u64", 5 - 7) >> 40),
    ({"b": ("i32", 20)}, "u8 c = 10; c -= b; bin(0, c);", sat("u8", 10 - 20)),
    ({"a": ("u32", 5), "b": ("i32", -9)}, "i32x3 v = i32x3(b); v += a; bin(0, v.y);", -4),
    ({"a": ("u32", 5), "b": ("i32", -9)}, "u32x3 v = u32x3(a); v += b; bin(0, v.x);", sat("u32", -4)),
    ({"a": ("u32", 5), "b": ("i32", -9)}, "u32 v = a; v = v + b < 0 ? 1 : 2; bin(0, v);", 1),
]


def params_decl(params):
    return "".join(", %s %s" % (t, name) for name, (t, _) in params.items())


def run(pxl, src_path, entry, params, pgm):
    cmd = [pxl, "run", src_path, entry, "--in", pgm, "--device", "ref"]
    for name, (_, value) in params.items():
        cmd += ["--param", "%s=%d" % (name, value)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        return None, p.stderr.strip()
    return p.stdout, ""


def main():
    if len(sys.argv) != 2:
        sys.stderr.write(__doc__)
        return 2
    pxl = sys.argv[1]
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        pgm = os.path.join(tmp, "one.pgm")
        with open(pgm, "w") as f:
            f.write("P2\n1 1\n255\n7\n")
        lines = []
        for i, (t, params, expr, _) in enumerate(EXPRS):
            lines.append("reduce %s e%d(image u8 in%s) = %s(%s);" % (t, i, params_decl(params),
                                                                   "sum" if t not in ("u8", "i16", "u16") else "max",
                                                                   expr))
        for i, (params, body, _) in enumerate(STMTS):
            lines.append("histogram[1] s%d(image u8 in%s) { %s }" % (i, params_decl(params), body))
        src = os.path.join(tmp, "cases.pxl")
        with open(src, "w") as f:
            f.write("\n".join(lines) + "\n")
        for i, (t, params, expr, want) in enumerate(EXPRS):
            want = sat(t, want)  # the reduction converts its value to t
            out, err = run(pxl, src, "e%d" % i, params, pgm)
            got = None
            if out is not None and out.startswith("e%d = " % i):
                got = int(out.split("=", 1)[1])
                if t == "u64":
                    got %= 2**64  # the CLI prints integer results as i64
            if got != want:
                failed += 1
                print("FAIL %s %s with %s: got %s, want %d %s" % (t, expr, params, got, want, err))
        for i, (params, body, want) in enumerate(STMTS):
            want = sat("i64", want)
            out, err = run(pxl, src, "s%d" % i, params, pgm)
            got = None
            if out is not None:
                rows = out.split()
                if len(rows) == 2 and rows[0] == "bin,count" and rows[1].startswith("0,"):
                    got = int(rows[1][2:])
            if got != want:
                failed += 1
                print("FAIL %s with %s: got %s, want %d %s" % (body, params, got, want, err))
    total = len(EXPRS) + len(STMTS)
    print("%d of %d cases match Python's integers" % (total - failed, total))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
