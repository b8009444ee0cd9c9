#!/usr/bin/env python3
"""Scans against OpenCV and numpy, independent implementations of the same sums.

Usage: scan_oracle.py PXL EXAMPLES_DIR DEVICE...

For each input, runs on each DEVICE examples/integral.pxl (against cv2.integral without
its first row and column), examples/rowsum.pxl (numpy's cumsum along the rows) and the
box sums of examples/boxsum.pxl read from pxl's own integral image (cv2.boxFilter,
unnormalised, zeros outside the image) for several radii, and compares exactly: the
results are i32 sums of u8 pixels, exact in both. Results travel as .npy. Inputs: the
sample photograph in grey, random bytes at odd sizes (1x1, 1xN, Nx1 included) and a
gradient; and integral.pxl per channel on the colour photograph. Prints 'N passed, N failed' and exits 1 on a failure; with DEVICE cuda only,
exits 77 ('skipped: no CUDA device') where no NVIDIA device node exists.
"""
import os
import sys
import tempfile

import cv2
import numpy as np

from oracle_common import run_pxl, skip_without_cuda, sample


def inputs(examples):
    rng = np.random.default_rng(20261124)
    scene = sample(examples, "scene.png", cv2.IMREAD_GRAYSCALE)
    yield "scene", scene
    for w, h in [(37, 23), (7, 5), (2, 3), (1, 1), (640, 1), (1, 480), (301, 257)]:
        yield "random %dx%d" % (w, h), rng.integers(0, 256, (h, w), dtype=np.uint8)
    yield "white 255x129", np.full((129, 255), 255, dtype=np.uint8)
    g = (np.add.outer(np.arange(61) * 3, np.arange(83) * 2) % 256).astype(np.uint8)
    yield "gradient 83x61", g


def box(a, r):
    return cv2.boxFilter(a, cv2.CV_32S, (2 * r + 1, 2 * r + 1), normalize=False, borderType=cv2.BORDER_CONSTANT)


class Checker:
    def __init__(self, pxl, examples, tmp):
        self.pxl, self.examples, self.tmp = pxl, examples, tmp
        self.passed = self.failed = 0

    def run(self, what, file, src, out, dev, params=()):
        """pxl run FILE on src into out; the result as an array, or None after a failure."""
        cmd = [self.pxl, "run", os.path.join(self.examples, file), "--in", src, "--out", out, "--device", dev]
        for p in params:
            cmd += ["--param", p]
        why = run_pxl(cmd, [out])
        if why:
            print("FAIL %s: %s" % (what, why))
            self.failed += 1
            return None
        return np.load(out)

    def compare(self, what, got, want):
        if got is None:
            return
        if got.ndim == 3 and got.shape[2] == 1:
            got = got.reshape(got.shape[:2])
        if got.shape != want.shape or got.dtype != want.dtype:
            print("FAIL %s: output %s %s, reference %s %s" % (what, got.shape, got.dtype, want.shape, want.dtype))
            self.failed += 1
            return
        diff = got != want
        if np.any(diff):
            y, x = np.argwhere(diff)[0]
            print("FAIL %s: %d pixels differ, first at (%d, %d): pxl %d, reference %d" %
                  (what, np.count_nonzero(diff), x, y, got[y, x], want[y, x]))
            self.failed += 1
        else:
            self.passed += 1


def main():
    pxl, examples, devices = sys.argv[1], sys.argv[2], sys.argv[3:]
    if skip_without_cuda(devices):
        return 77
    with tempfile.TemporaryDirectory() as tmp:
        c = Checker(pxl, examples, tmp)
        src = os.path.join(tmp, "in.png")
        ii = os.path.join(tmp, "integral.npy")
        out = os.path.join(tmp, "out.npy")
        for name, img in inputs(examples):
            cv2.imwrite(src, img)
            for dev in devices:
                got = c.run("integral on %s, %s" % (name, dev), "integral.pxl", src, ii, dev)
                c.compare("integral on %s, %s" % (name, dev), got, cv2.integral(img)[1:, 1:])
                got = c.run("rowsum on %s, %s" % (name, dev), "rowsum.pxl", src, out, dev)
                c.compare("rowsum on %s, %s" % (name, dev), got, np.cumsum(img, axis=1, dtype=np.int32))
                if not os.path.exists(ii):
                    continue
                for r in (1, 2, 7):
                    what = "boxsum r=%d on %s, %s" % (r, name, dev)
                    got = c.run(what, "boxsum.pxl", ii, out, dev, ["r=%d" % r])
                    c.compare(what, got, box(img, r))
        # a one-channel scan on a colour image runs per channel (OpenCV's arrays are BGR)
        colour = sample(examples, "scene.png", cv2.IMREAD_COLOR)
        src = os.path.join(tmp, "colour.png")
        cv2.imwrite(src, colour)
        for dev in devices:
            what = "integral per channel on the colour scene, %s" % dev
            got = c.run(what, "integral.pxl", src, ii, dev)
            if got is not None:
                got = got[:, :, ::-1]
            c.compare(what, got, cv2.integral(colour)[1:, 1:])
    print("%d passed, %d failed" % (c.passed, c.failed))
    return 1 if c.failed else 0


if __name__ == "__main__":
    sys.exit(main())
