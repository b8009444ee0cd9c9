#!/usr/bin/env python3
"""Interpolating reads (img.nearest, img.linear, img.cubic) against references written
here with NumPy and SciPy.

Usage: interpolate_oracle.py PXL DEVICE...

  linear   scipy.ndimage.map_coordinates(order=1, mode='nearest') - pxl's clamp border -
           on f32 images, to 1e-5 (f32 arithmetic against SciPy's f64)
  nearest  the pixel at floor(f + 0.5), NumPy indexing, constant border, exactly
  cubic    Keys' cubic (a = -0.75) over the 4 x 4 pixels around the position, written
           here in f64 from the weights' definition, mirror101 border (NumPy's
           'reflect' padding), to 1e-9 (f64 coordinates and arithmetic in the kernel)

on random images at odd sizes (1x1, a row, 37x23, 160x97) under scalings, a rotation and
positions far outside. Prints 'N passed, N failed'; exits 1 on a failure; CUDA without an
NVIDIA device node is a skip.
"""
import os
import sys
import tempfile

import numpy as np
import scipy.ndimage as nd

from oracle_common import run_pxl, skip_without_cuda

SOURCE = """
kernel f32 lin(image f32 in, f32 sx, f32 sy, f32 ox, f32 oy) { return in.linear(x * sx + ox, y * sy + oy); }
kernel f32 rot(image f32 in) { f32 c = 0.8f, s = 0.6f; return in.linear(c * x - s * y + 2.5f, s * x + c * y - 7.25f); }
kernel f32 near(image f32 in : constant(-1)) { return in.nearest(x * 1.3f - 2.0f, y * 0.7f + 0.5f); }
kernel f64 cub(image f32 in : mirror101, f64 sx, f64 ox) { return in.cubic((f64)x * sx + ox, (f64)y * 0.75 - 0.4); }
"""


def keys(t):
    """The 4 weights of Keys' cubic (a = -0.75) at fraction t, for taps -1, 0, 1, 2."""
    a = -0.75
    w0 = ((a * (t + 1) - 5 * a) * (t + 1) + 8 * a) * (t + 1) - 4 * a
    w1 = ((a + 2) * t - (a + 3)) * t * t + 1
    w2 = ((a + 2) * (1 - t) - (a + 3)) * (1 - t) * (1 - t) + 1
    return [w0, w1, w2, 1 - w0 - w1 - w2]


def mirror101(i, n):
    if n == 1:
        return np.zeros_like(i)
    p = 2 * n - 2
    i = np.mod(i, p)
    return np.where(i >= n, p - i, i)


def cubic_ref(img, fx, fy):
    h, w = img.shape
    x0, y0 = np.floor(fx), np.floor(fy)
    wx, wy = keys(fx - x0), keys(fy - y0)
    out = np.zeros(fx.shape)
    for j in range(4):
        row = np.zeros(fx.shape)
        yi = mirror101(y0.astype(np.int64) + j - 1, h)
        for i in range(4):
            xi = mirror101(x0.astype(np.int64) + i - 1, w)
            row = row + wx[i] * img[yi, xi].astype(np.float64)
        out = out + wy[j] * row
    return out


def main():
    pxl, devices = sys.argv[1], sys.argv[2:]
    if skip_without_cuda(devices):
        return 77
    rng = np.random.default_rng(20261127)
    passed = failed = 0
    f32 = np.float32
    with tempfile.TemporaryDirectory() as tmp:
        prog = os.path.join(tmp, "interp.pxl")
        with open(prog, "w") as f:
            f.write(SOURCE)
        src, out = os.path.join(tmp, "in.npy"), os.path.join(tmp, "out.npy")
        for w, h in [(1, 1), (41, 1), (37, 23), (160, 97)]:
            img = rng.random((h, w)).astype(np.float32) * 255
            np.save(src, img)
            yy, xx = np.mgrid[0:h, 0:w]
            cases = []
            for sx, sy, ox, oy in [(0.5, 0.75, 0.3, -0.7), (1.7, 2.3, -3.5, 4.25), (40.0, -30.0, 1e4, -5e3)]:
                fx = xx.astype(f32) * f32(sx) + f32(ox)
                fy = yy.astype(f32) * f32(sy) + f32(oy)
                want = nd.map_coordinates(img.astype(np.float64), [fy.astype(np.float64), fx.astype(np.float64)],
                                          order=1, mode="nearest")
                cases.append(("lin", ["--param", "sx=%r" % sx, "--param", "sy=%r" % sy, "--param", "ox=%r" % ox,
                                      "--param", "oy=%r" % oy], want, 1e-5))
            c, s = f32(0.8), f32(0.6)
            fx = c * xx.astype(f32) - s * yy.astype(f32) + f32(2.5)
            fy = s * xx.astype(f32) + c * yy.astype(f32) - f32(7.25)
            cases.append(("rot", [], nd.map_coordinates(img.astype(np.float64), [fy.astype(np.float64),
                                                                               fx.astype(np.float64)],
                                                        order=1, mode="nearest"), 1e-5))
            nx = np.floor(xx.astype(f32) * f32(1.3) - f32(2.0) + f32(0.5)).astype(np.int64)
            ny = np.floor(yy.astype(f32) * f32(0.7) + f32(0.5) + f32(0.5)).astype(np.int64)
            inside = (nx >= 0) & (nx < w) & (ny >= 0) & (ny < h)
            want = np.where(inside, img[np.clip(ny, 0, h - 1), np.clip(nx, 0, w - 1)], -1).astype(np.float32)
            cases.append(("near", [], want, 0))
            for sx, ox in [(0.6, 0.2), (2.5, -9.5)]:
                fx = xx.astype(np.float64) * sx + ox
                fy = yy.astype(np.float64) * 0.75 - 0.4
                cases.append(("cub", ["--param", "sx=%r" % sx, "--param", "ox=%r" % ox], cubic_ref(img, fx, fy), 1e-9))
            for entry, args, want, tol in cases:
                for dev in devices:
                    why = run_pxl([pxl, "run", prog, entry, "--in", src, "--out", out, "--device", dev] + args, [out])
                    what = "%s%s on %dx%d, %s" % (entry, "".join(" " + a for a in args if a != "--param"), w, h, dev)
                    if why:
                        print("FAIL %s: %s" % (what, why))
                        failed += 1
                        continue
                    got = np.load(out)
                    err = np.abs(got.astype(np.float64) - want) / np.maximum(1.0, np.abs(want))
                    if got.shape != want.shape or err.max() > tol:
                        k = np.unravel_index(np.argmax(err), err.shape) if got.shape == want.shape else None
                        print("FAIL %s: %s" % (what, "shape %s, want %s" % (got.shape, want.shape) if k is None else
                                               "at (x %d, y %d) pxl %r, reference %r" % (k[1], k[0], got[k], want[k])))
                        failed += 1
                    else:
                        passed += 1
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
