#!/usr/bin/env python3
"""examples/resample.pxl against OpenCV: outputs of other sizes than the input, exactly.

Usage: resample_oracle.py PXL EXAMPLES_DIR DEVICE...

  pyr_down        cv2.pyrDown (BORDER_DEFAULT); pyr_down_sep, its two-pass form, the same
  pyr_up          cv2.pyrUp
  resize_nearest  cv2.resize INTER_NEAREST to sizes above and below, odd ratios, 1x1
  resize_area     cv2.resize INTER_AREA by k = 2, 3, 4 on the image cut to a multiple of k
                  (OpenCV's integer-factor case)
  gauss_pyramid   three cv2.pyrDown levels from one pipeline run (three outputs, three sizes)
  laplace_level   the image less cv2.pyrUp(cv2.pyrDown(image)) in i16, and the level (even
                  sizes of gray images)

on the sample photograph in grey and in colour (per channel), random bytes at odd sizes
(37x23, 7x5, 2x3, 1x1, a row and a column) and a gradient. Exact equality; prints
'N passed, N failed', exits 1 on a failure; CUDA without an NVIDIA device node is a skip.
"""
import os
import sys
import tempfile

import cv2
import numpy as np

from oracle_common import run_pxl, skip_without_cuda, sample


def inputs(examples):
    rng = np.random.default_rng(20261127)
    scene = sample(examples, "scene.png", cv2.IMREAD_COLOR)
    quick = os.environ.get("PXL_TEST_QUICK") == "1"  # the sanitizer build: small inputs only
    if quick:
        scene = scene[:61, :83]
    yield "scene", cv2.cvtColor(scene, cv2.COLOR_BGR2GRAY)
    yield "scene in colour", scene
    for w, h in [(37, 23), (7, 5), (2, 3), (1, 1)] + ([] if quick else [(640, 1), (1, 480)]):
        yield "random %dx%d" % (w, h), rng.integers(0, 256, (h, w), dtype=np.uint8)
    g = (np.add.outer(np.arange(61) * 3, np.arange(83) * 2) % 256).astype(np.uint8)
    yield "gradient 83x61", g


def cases(img):
    """(entry, pxl run arguments, OpenCV's result) for one input."""
    h, w = img.shape[:2]
    out = [("pyr_down", [], cv2.pyrDown(img)), ("pyr_down_sep", [], cv2.pyrDown(img)), ("pyr_up", [], cv2.pyrUp(img))]
    for ow, oh in {(2 * w + 1, h // 2 + 1), (max(1, w // 3), 3 * h), (7, 5), (1, 1), (w, h)}:
        out.append(("resize_nearest", ["--param", "ow=%d" % ow, "--param", "oh=%d" % oh],
                    cv2.resize(img, (ow, oh), interpolation=cv2.INTER_NEAREST)))
    for k in (2, 3, 4):
        if w >= k and h >= k:
            cut = img[:h // k * k, :w // k * k]
            out.append(("resize_area", ["--param", "k=%d" % k],
                        cv2.resize(cut, (w // k, h // k), interpolation=cv2.INTER_AREA)))
    return out


def multi_cases(img):
    """(entry, OpenCV's results) of the pipelines returning several images, each saved to
    its own --out."""
    levels = [img]
    for _ in range(3):
        levels.append(cv2.pyrDown(levels[-1]))
    out = [("gauss_pyramid", levels[1:])]
    h, w = img.shape[:2]
    if img.ndim == 2 and w % 2 == 0 and h % 2 == 0:  # pyr_up gives the image's size back
        low = cv2.pyrDown(img)
        out.append(("laplace_level", [img.astype(np.int16) - cv2.pyrUp(low).astype(np.int16), low]))
    return out


def main():
    pxl, examples, devices = sys.argv[1], sys.argv[2], sys.argv[3:]
    if skip_without_cuda(devices):
        return 77
    passed = failed = 0
    program = os.path.join(examples, "resample.pxl")
    with tempfile.TemporaryDirectory() as tmp:
        src, out = os.path.join(tmp, "in.png"), os.path.join(tmp, "out.png")
        for name, img in inputs(examples):
            cv2.imwrite(src, img)
            for entry, args, want in cases(img):
                for dev in devices:
                    why = run_pxl([pxl, "run", program, entry, "--in", src, "--out", out, "--device", dev] + args, [out])
                    what = "%s%s on %s, %s" % (entry, "".join(" " + a for a in args if a != "--param"), name, dev)
                    if why:
                        print("FAIL %s: %s" % (what, why))
                        failed += 1
                        continue
                    got = cv2.imread(out, cv2.IMREAD_UNCHANGED)
                    if got is None or got.shape != want.shape:
                        print("FAIL %s: pxl %s, OpenCV %s" % (what, None if got is None else got.shape, want.shape))
                        failed += 1
                        continue
                    off = np.argwhere(got != want)
                    if len(off):
                        y, x = off[0][:2]
                        print("FAIL %s: %d values differ, first at (%d, %d): pxl %s, OpenCV %s" %
                              (what, len(off), x, y, got[y, x], want[y, x]))
                        failed += 1
                    else:
                        passed += 1
            for entry, wants in multi_cases(img):
                for dev in devices:
                    outs = [os.path.join(tmp, "out%d.npy" % k) for k in range(len(wants))]
                    cmd = [pxl, "run", program, entry, "--in", src, "--device", dev]
                    for o in outs:
                        cmd += ["--out", o]
                    why = run_pxl(cmd, outs)
                    what = "%s on %s, %s" % (entry, name, dev)
                    if why:
                        print("FAIL %s: %s" % (what, why))
                        failed += 1
                        continue
                    for k, (o, want) in enumerate(zip(outs, wants)):
                        got = np.load(o)
                        if got.ndim == 3:  # pxl's channels as the PNG holds them (RGB), OpenCV's BGR
                            got = got[..., ::-1]
                        if got.shape != want.shape or got.dtype != want.dtype or np.any(got != want):
                            print("FAIL %s, output %d: pxl %s %s, OpenCV %s %s, %s values differ" %
                                  (what, k + 1, got.shape, got.dtype, want.shape, want.dtype,
                                   "-" if got.shape != want.shape else np.count_nonzero(got != want)))
                            failed += 1
                        else:
                            passed += 1
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
