#!/usr/bin/env python3
"""Writes random pipelines for the fusion tests (docs/ARCHITECTURE.md, "Fusion").

usage: fuse_gen.py SEED COUNT OUT.pxl

A fixed library of stage kernels - point and local, u8, i16 and f32, one and two inputs,
bodies that are one expression and bodies that are not (loops, returns under ifs, the
pixel's coordinates) - and COUNT pipelines, each a random DAG of 3 to 8 calls of them
with random border modes per use (constant and none too, which never fuse), values read
by one stage (which fuse) or by two (which stay), now and then a loop whose body fuses,
and now and then a reduction or histogram of a stage, which fuses into its map or body. The output depends on SEED alone. diff_test runs every pipeline on every backend
(fused there) and with `ref-fused` (the interpreter running the fused kernels) against
the interpreter running them as written.
"""
import random
import sys

# name, result type, image parameter types, scalar parameters, body
STAGES = [
    # point stages that are one expression (rule B moves them into windows)
    ("inv", "u8", ["u8"], "", "{ return 255 - a(0, 0); }"),
    ("thr", "u8", ["u8"], ", u8 t", "{ if (a(0, 0) > t) return 255; return a(0, 0) / 2; }"),
    ("mix", "u8", ["u8", "u8"], "", "{ int s = a(0, 0) + 3 * b(0, 0); return (s + 2) / 4; }"),
    ("sub", "i16", ["u8", "u8"], "", "{ return a(0, 0) - b(0, 0); }"),
    ("mag", "u8", ["i16"], "", "{ i32 v = abs(a(0, 0)); if (v > 255) return 255; else return v; }"),
    ("tof", "f32", ["u8"], "", "{ f32 v = a(0, 0); return v * 0.5 + 0.25; }"),
    ("fromf", "u8", ["f32"], "", "{ return a(0, 0) * 1.5; }"),
    ("sq", "f32", ["f32"], "", "{ return a(0, 0) * a(0, 0) / 64.0; }"),
    # point stages that are not (rule A only)
    ("ramp", "u8", ["u8"], "", "{ return a(0, 0) ^ ((x + 2 * y) & 255); }"),
    ("bits", "u8", ["u8"], "", "{ int n = 0; for (int i = 0; i < 8; i++) n += (a(0, 0) >> i) & 1; return n * 31; }"),
    ("wide", "u8", ["u8"], "", "{ return a(0, 0) > 100 && width > 4 ? a(0, 0) - 100 : a(0, 0); }"),
    # local stages
    ("box3", "u8", ["u8"], "",
     "{ int s = 0; for (int dy = -1; dy <= 1; dy++) for (int dx = -1; dx <= 1; dx++) s += a(dx, dy); return (s + 4) / 9; }"),
    ("gradx", "i16", ["u8"], "", "{ return a(1, 0) - a(-1, 0) + a(1, 1) - a(-1, -1); }"),
    ("ero", "u8", ["u8"], "",
     "{ u8 m = 255; for (int dy = -1; dy <= 1; dy++) for (int dx = -1; dx <= 1; dx++) m = min(m, a(dx, dy)); return m; }"),
    ("lap", "f32", ["f32"], "", "{ return a(-1, 0) + a(1, 0) + a(0, -1) + a(0, 1) - 4 * a(0, 0); }"),
    ("shift", "u8", ["u8"], "", "{ return a(2, -1); }"),
    ("sel", "u8", ["u8"], "", "{ if (a(0, 0) > 128) return a(-1, 0); u8 v = a(0, 1); if (v < 20) return 20; return v; }"),
    ("smi", "i16", ["i16"], "", "{ return (a(-1, 0) + 2 * a(0, 0) + a(1, 0)) / 4; }"),
    ("blend", "u8", ["u8", "u8"], "", "{ return (a(0, 0) + b(-1, 1) + b(1, -1) + 1) / 3; }"),
]

# reductions and histograms that read a stage at (0, 0) (it fuses into their map or
# body), and the stages that take their values
VALUES = [
    "reduce i64 total(image u8 a) = sum(a(0, 0));",
    "reduce i64 top(image u8 a) = max(a(0, 0) ^ 85);",
    "histogram[16] hist16(image u8 a) { bin(a(0, 0) >> 4); }",
    "histogram[8] histw(image u8 a) { if (a(0, 0) > 100) bin(a(0, 0) & 7); else bin(x & 7); }",
    "kernel u8 addk(image u8 a, i64 s) { return a(0, 0) + s % 7; }",
    "kernel u8 lut16(image u8 a, i64 h[16]) { return h[a(0, 0) >> 4] % 251; }",
    "kernel u8 lut8(image u8 a, i64 h[8]) { return (a(0, 0) + h[a(0, 0) & 7]) % 253; }",
]

BORDERS = ["clamp", "mirror", "mirror101", "wrap", "clamp", "mirror101", "constant(3)", "none"]


def kernel_text(st):
    name, rt, ins, scal, body = st
    params = ", ".join("image %s %s" % (t, "ab"[i]) for i, t in enumerate(ins))
    return "kernel %s %s(%s%s) %s" % (rt, name, params, scal, body)


def border(rng):
    return BORDERS[rng.randrange(len(BORDERS))] if rng.random() < 0.6 else None


def pipeline(rng, idx):
    vals = [("in", "u8", 0)]  # name, type, times read
    lines = []
    nstages = rng.randint(3, 8)
    loop_at = rng.randrange(nstages) if rng.random() < 0.25 else -1
    for s in range(nstages):
        cands = [st for st in STAGES if all(any(v[1] == t for v in vals) for t in st[2])]
        st = rng.choice(cands)
        args = []
        for t in st[2]:
            of = [i for i, v in enumerate(vals) if v[1] == t]
            # mostly the newest values, so that chains form; sometimes an older one (read twice)
            i = of[-1] if rng.random() < 0.6 else rng.choice(of)
            name, vt, n = vals[i]
            vals[i] = (name, vt, n + 1)
            b = border(rng)
            args.append(name + (" : " + b if b else ""))
        if st[3]:
            args.append(str(rng.randint(40, 200)))
        call = "%s(%s)" % (st[0], ", ".join(args))
        v = "v%d" % s
        if s == loop_at and st[1] == "u8" and len(st[2]) == 1 and st[2][0] == "u8":
            # a loop whose body has a point stage feeding a local one
            lines.append("    image u8 %s = %s;" % (v, call))
            lines.append("    loop (2) {")
            lines.append("        image u8 t = inv(%s);" % v)
            lines.append("        %s = box3(t : %s);" % (v, rng.choice(["clamp", "mirror", "wrap"])))
            lines.append("    }")
        else:
            lines.append("    image %s %s = %s;" % (st[1], v, call))
        vals.append((v, st[1], 0))
    last = vals[-1]
    out_t = last[1]
    u8s = [v[0] for v in vals if v[1] == "u8"]
    looped = any(l.strip().startswith("loop") for l in lines)
    if last[1] == "u8" and not looped and rng.random() < 0.4:  # (no values in pipelines with loops yet)
        # a reduction or a histogram of a u8 stage, read by the last stage
        unread = [v[0] for v in vals[1:-1] if v[1] == "u8" and v[2] == 0]  # these fuse
        src = rng.choice(unread) if unread and rng.random() < 0.8 else rng.choice(u8s)
        kind = rng.randrange(4)
        if kind < 2:
            lines.append("    i64 s = %s(%s);" % (["total", "top"][kind], src))
            lines.append("    return addk(%s, s);" % last[0])
        else:
            n = 16 if kind == 2 else 8
            lines.append("    i64 h[%d] = %s(%s);" % (n, ["hist16", "histw"][kind - 2], src))
            lines.append("    return %s(%s, h);" % (["lut16", "lut8"][kind - 2], last[0]))
    else:
        lines.append("    return %s;" % last[0])
    return "pipeline p%d(image u8 in) -> image %s {\n%s\n}\n" % (idx, out_t, "\n".join(lines))


def main():
    seed, count, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    rng = random.Random(seed)
    text = ["// Random pipelines for the fusion tests: written by tests/diff/fuse_gen.py %d %d" % (seed, count),
            "// diff_test: quick"]
    text += [kernel_text(st) for st in STAGES] + VALUES
    text += [pipeline(rng, i) for i in range(count)]
    with open(out, "w") as f:
        f.write("\n".join(text) + "\n")


if __name__ == "__main__":
    main()
