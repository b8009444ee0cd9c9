#!/usr/bin/env python3
"""Pipelines with loops against independent implementations (SciPy, scikit-image, Python).

Usage: iterate_oracle.py PXL EXAMPLES_DIR DEVICE...

Each case writes its input images, runs `PXL run` on each DEVICE with a cap that lets the
loop reach its fixed point, and compares the result pixel for pixel (exact equality):
  reconstruct  skimage.morphology.reconstruction(min(seed, mask), mask, 'dilation')
  fill_holes   skimage reconstruction by erosion from the border (4-connectivity), and
               scipy.ndimage.binary_fill_holes on 0/255 images
  taxicab      scipy.ndimage.distance_transform_cdt(metric='taxicab')
  chessboard   scipy.ndimage.distance_transform_cdt(metric='chessboard')
  hysteresis   a breadth-first search from the strong pixels over the weak ones (8-connected)
DEVICE cpu+check5 is the CPU with PXL_LOOP_CHECK=5: the until test every 5th iteration,
by the reduction GPUs use. Prints 'N passed, N failed' and exits 1 on a failure.
"""
import collections
import os
import sys
import tempfile

import cv2
import numpy as np
import tifffile
from scipy import ndimage
from skimage.morphology import reconstruction

from oracle_common import run_pxl, skip_without_cuda, sample

CAP = "1000000"
CROSS = np.array([[0, 1, 0], [1, 1, 1], [0, 1, 0]], dtype=bool)


def fill_holes_ref(a):
    seed = np.full_like(a, 255)
    seed[0, :], seed[-1, :], seed[:, 0], seed[:, -1] = a[0, :], a[-1, :], a[:, 0], a[:, -1]
    return reconstruction(seed, a, method="erosion", footprint=CROSS).astype(np.uint8)


def hysteresis_ref(mag, lo, hi):
    out = np.zeros(mag.shape, np.uint8)
    todo = collections.deque(zip(*np.nonzero(mag >= hi)))
    for y, x in todo:
        out[y, x] = 255
    h, w = mag.shape
    while todo:
        y, x = todo.popleft()
        for dy in (-1, 0, 1):
            for dx in (-1, 0, 1):
                v, u = y + dy, x + dx
                if 0 <= v < h and 0 <= u < w and not out[v, u] and mag[v, u] >= lo:
                    out[v, u] = 255
                    todo.append((v, u))
    return out


def images(examples):
    """(name, grey u8 image, a second image, a 0/255 image with holes)."""
    rng = np.random.default_rng(20261124)
    scene = sample(examples, "scene.png", cv2.IMREAD_GRAYSCALE)
    shapes = sample(examples, "shapes.png", cv2.IMREAD_GRAYSCALE)
    crop = scene[100:260, 200:420]
    yield "scene crop 220x160", crop, cv2.GaussianBlur(crop, (9, 9), 0), ((shapes[100:260, 200:420] > 128) * 255
                                                                           ).astype(np.uint8)
    rings = np.zeros((61, 83), np.uint8)
    cv2.circle(rings, (40, 30), 25, 255, 3)
    cv2.circle(rings, (40, 30), 12, 255, 2)
    cv2.rectangle(rings, (70, 5), (80, 20), 255, 1)
    yield "rings 83x61", rings, rings // 2, rings
    for w, h in [(37, 23), (7, 5), (1, 1), (64, 1), (1, 40)]:
        a = rng.integers(0, 256, (h, w), dtype=np.uint8)
        b = (rng.random((h, w)) < 0.7).astype(np.uint8) * 255
        yield "random %dx%d" % (w, h), a, rng.integers(0, 256, (h, w), dtype=np.uint8), b


def cases(grey, other, binary):
    """(file, entry, {parameter: image}, {parameter: value}, expected)."""
    seed = np.minimum(other, grey)
    yield ("reconstruct.pxl", "reconstruct", {"seed": other, "mask": grey}, {},
           reconstruction(seed, grey, method="dilation").astype(np.uint8))
    yield "reconstruct.pxl", "fill_holes", {"in": grey}, {}, fill_holes_ref(grey)
    yield ("reconstruct.pxl", "fill_holes", {"in": binary}, {},
           ndimage.binary_fill_holes(binary > 0).astype(np.uint8) * 255)
    for metric in ("taxicab", "chessboard"):
        want = ndimage.distance_transform_cdt(binary, metric=metric)
        if np.all(binary):  # no 0 pixel: SciPy says -1, pxl saturates
            want = np.full(binary.shape, 65535)
        yield "distance.pxl", metric, {"in": binary}, {}, want.astype(np.uint16)
    for lo, hi in ((40, 100), (90, 200)):
        yield "hysteresis.pxl", "hysteresis", {"mag": grey}, {"lo": lo, "hi": hi}, hysteresis_ref(grey, lo, hi)


def run(pxl, examples, dev, file, entry, imgs, params, tmp):
    cmd = [pxl, "run", os.path.join(examples, file), entry, "--param", "cap=" + CAP]
    for name, img in imgs.items():
        path = os.path.join(tmp, name + ".png")
        cv2.imwrite(path, img)
        cmd += ["--in", "%s=%s" % (name, path)]
    for name, value in params.items():
        cmd += ["--param", "%s=%d" % (name, value)]
    out = os.path.join(tmp, "out.tif")
    env = dict(os.environ)
    if dev == "cpu+check5":
        dev, env["PXL_LOOP_CHECK"] = "cpu", "5"
    why = run_pxl(cmd + ["--out", out, "--device", dev], [out], env=env)
    return (None, why) if why else (tifffile.imread(out), None)


def main():
    pxl, examples, devices = sys.argv[1], sys.argv[2], sys.argv[3:]
    if skip_without_cuda(devices):
        return 77
    passed = failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, grey, other, binary in images(examples):
            for file, entry, imgs, params, want in cases(grey, other, binary):
                for dev in devices:
                    what = "%s%s on %s, %s" % (entry, "".join(" %s=%d" % p for p in params.items()), name, dev)
                    got, why = run(pxl, examples, dev, file, entry, imgs, params, tmp)
                    if got is None:
                        print("FAIL %s: %s" % (what, why))
                        failed += 1
                    elif got.shape != want.shape or got.dtype != want.dtype:
                        print("FAIL %s: output %s %s, expected %s %s" % (what, got.shape, got.dtype, want.shape,
                                                                           want.dtype))
                        failed += 1
                    elif np.any(got != want):
                        y, x = np.argwhere(got != want)[0]
                        print("FAIL %s: %d pixels differ, first at (%d, %d): pxl %d, expected %d" %
                              (what, np.count_nonzero(got != want), x, y, got[y, x], want[y, x]))
                        failed += 1
                    else:
                        passed += 1
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
