#!/usr/bin/env python3
"""examples/downscale.pxl (tilers) against a NumPy downscaler written here from the seed's
definition, exactly.

Usage: downscale_oracle.py PXL EXAMPLES_DIR DEVICE...

  down_h     every 8 columns make 3: rounded means of the 6 pixels from 0, 2 and 5
  down_v     every 9 rows make 4: rounded means of the 6 rows from 0, 2, 5 and 7
  downscale  down_v of down_h, folded into one tiler
  scale_hd   the same as a pipeline of the two

Sizes that are not multiples of the paving end in a tile that reads past the edge,
answered by the clamp border (the last pixel repeated); the NumPy version pads with
numpy.pad(mode='edge'). Inputs: random bytes at 1920x1080 (the seed's HD frame), odd
sizes (37x23, 7x5, 1x1, a row, a column), the sample photograph in grey and in colour
(per channel), and samples/clip.y4m as a stream (every plane of every frame, read back
with a YUV4MPEG2 reader written here). Prints 'N passed, N failed'; exits 1 on a
failure; CUDA without an NVIDIA device node is a skip.
"""
import os
import sys
import tempfile

import cv2
import numpy as np

from oracle_common import run_pxl, skip_without_cuda, sample


def means(img, axis, paving, starts):
    """The filter along `axis` (1: columns, 0: rows): per tile of `paving` pixels, the
    rounded mean of the 6 pixels from each start; the tiles cover the image (ceil)."""
    a = np.moveaxis(img.astype(np.int64), axis, 0)
    n = a.shape[0]
    reps = -(-n // paving)
    a = np.pad(a, [(0, reps * paving + max(starts) + 6 - n)] + [(0, 0)] * (a.ndim - 1), mode="edge")
    out = np.empty((reps * len(starts),) + a.shape[1:], np.int64)
    for k, s in enumerate(starts):
        first = np.arange(reps) * paving + s
        out[k::len(starts)] = sum(a[first + i] for i in range(6))
    return np.moveaxis((out + 3) // 6, 0, axis).astype(np.uint8)


def down_h(img):
    return means(img, 1, 8, (0, 2, 5))


def down_v(img):
    return means(img, 0, 9, (0, 2, 5, 7))


WANT = {"down_h": down_h, "down_v": down_v, "downscale": lambda i: down_v(down_h(i)),
        "scale_hd": lambda i: down_v(down_h(i))}


def inputs(examples):
    rng = np.random.default_rng(20261127)
    scene = sample(examples, "scene.png", cv2.IMREAD_COLOR)
    quick = os.environ.get("PXL_TEST_QUICK") == "1"  # the sanitizer build: small inputs only
    if quick:
        scene = scene[:61, :83]
    yield "scene", cv2.cvtColor(scene, cv2.COLOR_BGR2GRAY)
    yield "scene in colour", scene
    sizes = [(37, 23), (7, 5), (1, 1), (17, 1), (1, 29)] + ([] if quick else [(1920, 1080)])
    for w, h in sizes:
        yield "random %dx%d" % (w, h), rng.integers(0, 256, (h, w), dtype=np.uint8)


def read_y4m(path):
    """The planes of every frame of a YUV4MPEG2 file (4:2:0, 8-bit): [(Y, Cb, Cr), ...]."""
    with open(path, "rb") as f:
        data = f.read()
    head, rest = data.split(b"\n", 1)
    fields = head.split(b" ")
    if fields[0] != b"YUV4MPEG2":
        raise ValueError("not YUV4MPEG2")
    w = int(next(f[1:] for f in fields if f.startswith(b"W")))
    h = int(next(f[1:] for f in fields if f.startswith(b"H")))
    c = next((f[1:] for f in fields if f.startswith(b"C")), b"420jpeg")
    if not c.startswith(b"420"):
        raise ValueError("only 4:2:0 here")
    cw, ch = (w + 1) // 2, (h + 1) // 2
    frames = []
    while rest:
        line, rest = rest.split(b"\n", 1)
        if not line.startswith(b"FRAME"):
            raise ValueError("expected FRAME")
        sizes = [(h, w), (ch, cw), (ch, cw)]
        planes = []
        for ph, pw in sizes:
            planes.append(np.frombuffer(rest[:ph * pw], np.uint8).reshape(ph, pw))
            rest = rest[ph * pw:]
        frames.append(planes)
    return w, h, frames


def main():
    pxl, examples, devices = sys.argv[1], sys.argv[2], sys.argv[3:]
    if skip_without_cuda(devices):
        return 77
    passed = failed = 0
    program = os.path.join(examples, "downscale.pxl")

    def check(what, got, want):
        nonlocal passed, failed
        if got is None or got.shape != want.shape:
            print("FAIL %s: pxl %s, expected %s" % (what, None if got is None else got.shape, want.shape))
            failed += 1
            return
        off = np.argwhere(got != want)
        if len(off):
            y, x = off[0][:2]
            print("FAIL %s: %d values differ, first at (%d, %d): pxl %s, expected %s" %
                  (what, len(off), x, y, got[y, x], want[y, x]))
            failed += 1
        else:
            passed += 1

    with tempfile.TemporaryDirectory() as tmp:
        src, out = os.path.join(tmp, "in.png"), os.path.join(tmp, "out.png")
        for name, img in inputs(examples):
            cv2.imwrite(src, img)
            for entry, fn in WANT.items():
                want = fn(img)
                for dev in devices:
                    why = run_pxl([pxl, "run", program, entry, "--in", src, "--out", out, "--device", dev], [out])
                    what = "%s on %s, %s" % (entry, name, dev)
                    if why:
                        print("FAIL %s: %s" % (what, why))
                        failed += 1
                        continue
                    check(what, cv2.imread(out, cv2.IMREAD_UNCHANGED), want)
        clip = os.path.join(os.path.dirname(os.path.abspath(examples)), "samples", "clip.y4m")
        w, h, frames = read_y4m(clip)
        for entry in ("downscale", "scale_hd"):
            for dev in devices:
                y4m = os.path.join(tmp, "out.y4m")
                why = run_pxl([pxl, "run", program, entry, "--in", clip, "--out", y4m, "--device", dev], [y4m])
                what = "%s on samples/clip.y4m, %s" % (entry, dev)
                if why:
                    print("FAIL %s: %s" % (what, why))
                    failed += 1
                    continue
                ow, oh, got = read_y4m(y4m)
                if len(got) != len(frames) or (ow, oh) != (down_h(frames[0][0]).shape[1], down_v(frames[0][0]).shape[0]):
                    print("FAIL %s: %d frames of %dx%d" % (what, len(got), ow, oh))
                    failed += 1
                    continue
                for n, (gp, fp) in enumerate(zip(got, frames)):
                    for p, (g, f) in enumerate(zip(gp, fp)):
                        check("%s, frame %d plane %d" % (what, n, p), g, WANT[entry](f))
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
