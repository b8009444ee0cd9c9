#!/usr/bin/env python3
"""examples/warp.pxl against OpenCV: interpolating resizes, affine warps and remaps.

Usage: warp_oracle.py PXL EXAMPLES_DIR DEVICE...

  resize_linear        cv2.resize INTER_LINEAR_EXACT
  resize_bilinear      cv2.resize INTER_LINEAR
  resize_cubic         cv2.resize INTER_CUBIC
  resize_area_any      cv2.resize INTER_AREA
                       each to sizes above and below the input's, at non-integer ratios,
                       by integer factors, 7x5 and 1x1
  warp_affine_nearest  cv2.warpAffine INTER_NEAREST
  warp_affine_linear   cv2.warpAffine INTER_LINEAR
                       with the forward matrices: a rotation with scaling about the
                       centre (under every border mode, the default BORDER_CONSTANT 0
                       too), a shear, the identity, one mapping most of the output
                       outside the image, an enlarging rotation
  remap_nearest        cv2.remap INTER_NEAREST
  remap_linear         cv2.remap INTER_LINEAR
                       with random f32 maps (most inside and near the image, some
                       several images away, some 40000 pixels and more away, exact
                       halves), under every border mode

on the sample photograph in grey and in colour (per channel; the maps then have three
equal channels), random bytes at odd sizes (37x23, 7x5, 2x3, 1x1, a row and a column).
Exact equality, except resize_cubic on colour images: a difference of 1 is allowed in
the last 7 columns (examples/warp.pxl says why). Prints 'N passed, N failed', exits 1
on a failure; CUDA without an NVIDIA device node is a skip.
"""
import os
import subprocess
import sys
import tempfile

import cv2
import numpy as np

from oracle_common import run_pxl, skip_without_cuda, sample

# pxl border mode -> OpenCV's borderMode and borderValue; None: the kernel's default
BORDERS = [(None, cv2.BORDER_CONSTANT, 0), ("constant(131)", cv2.BORDER_CONSTANT, 131),
           ("clamp", cv2.BORDER_REPLICATE, 0), ("mirror", cv2.BORDER_REFLECT, 0),
           ("mirror101", cv2.BORDER_REFLECT_101, 0), ("wrap", cv2.BORDER_WRAP, 0)]
BORDER = {b[0]: b for b in BORDERS}  # by pxl mode

RESIZES = [("resize_linear", cv2.INTER_LINEAR_EXACT), ("resize_bilinear", cv2.INTER_LINEAR),
           ("resize_cubic", cv2.INTER_CUBIC), ("resize_area_any", cv2.INTER_AREA)]

WARPS = [("warp_affine_nearest", cv2.INTER_NEAREST), ("warp_affine_linear", cv2.INTER_LINEAR)]
REMAPS = [("remap_nearest", cv2.INTER_NEAREST), ("remap_linear", cv2.INTER_LINEAR)]

# the columns at the right where resize_cubic may differ by 1 on colour images
CUBIC_TAIL = 7


def inputs(examples):
    rng = np.random.default_rng(20261204)
    scene = sample(examples, "scene.png", cv2.IMREAD_COLOR)
    quick = os.environ.get("PXL_TEST_QUICK") == "1"  # the sanitizer build: small inputs only
    if quick:
        scene = scene[:61, :83]
    yield "scene", cv2.cvtColor(scene, cv2.COLOR_BGR2GRAY)
    yield "scene in colour", scene
    line = 41 if quick else 640
    for w, h in [(37, 23), (7, 5), (2, 3), (1, 1), (line, 1), (1, line * 3 // 4)]:
        yield "random %dx%d" % (w, h), rng.integers(0, 256, (h, w), dtype=np.uint8)


def resize_sizes(w, h):
    """Output sizes: larger, smaller, mixed, odd ratios, integer factors where they fit."""
    sizes = {(2 * w + 1, h // 2 + 1), (max(1, w // 3), 3 * h), (7, 5), (1, 1),
             (max(1, 2 * w // 5), max(1, 3 * h // 7)), (w + 3, max(1, h - 2))}
    for kx, ky in [(2, 2), (2, 3), (4, 4), (5, 5)]:
        if w % kx == 0 and h % ky == 0 and w >= kx and h >= ky:
            sizes.add((w // kx, h // ky))
    return sorted(sizes)


def matrices(w, h):
    """(name, forward matrix, output size, border modes to run)."""
    centre = (w / 2.0, h / 2.0)
    return [("rotation", cv2.getRotationMatrix2D(centre, 30.0, 0.8), (w, h), BORDERS),
            ("shear", np.array([[1.0, 0.35, -1.5], [0.2, 1.0, 0.75]]), (2 * w + 1, h // 2 + 1),
             [BORDER["mirror101"]]),
            ("identity", np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]), (w, h), [BORDER[None]]),
            ("mostly outside", np.array([[1.2, 0.1, 0.8 * w + 3], [-0.1, 0.9, -0.7 * h - 2]]), (w, h),
             [BORDER["wrap"]]),
            ("enlarging rotation", cv2.getRotationMatrix2D(centre, -60.0, 2.5), (w // 2 + 1, h + 3),
             [BORDER["mirror"]])]


def random_maps(rng, w, h):
    """f32 maps a little smaller or larger than the image: most positions in and near
    the image, some several images away, some very far (saturated to 16 bits by
    OpenCV, or beyond the int range), some exact halves (ties of the rounding)."""
    mw, mh = w + 3, max(1, h - 2)
    maps = []
    for n in (w, h):
        near = rng.uniform(-1.5, n + 0.5, (mh, mw))
        far = rng.uniform(-3 * n - 10, 4 * n + 10, (mh, mw))
        very = rng.choice([-4e10, -1e9, -40000.25, -32768.5, 32767.5, 40000.75, 1e9, 4e10], (mh, mw))
        half = rng.integers(-2 * n - 2, 2 * n + 3, (mh, mw)) / 2.0
        pick = rng.uniform(0, 1, (mh, mw))
        m = np.where(pick < 0.6, near, np.where(pick < 0.8, far, np.where(pick < 0.88, very, half)))
        maps.append(m.astype(np.float32))
    return maps


def border_args(mode):
    return [] if mode is None else ["--border", "in=" + mode]


def cases(img, rng, tmp):
    """(entry, pxl run arguments, OpenCV's result, tail) for one input; tail: the number
    of columns at the right where a difference of 1 is allowed."""
    h, w = img.shape[:2]
    colour = img.ndim == 3
    out = []
    for ow, oh in resize_sizes(w, h):
        for entry, interp in RESIZES:
            tail = CUBIC_TAIL if colour and entry == "resize_cubic" else 0
            out.append((entry, ["--param", "ow=%d" % ow, "--param", "oh=%d" % oh],
                        cv2.resize(img, (ow, oh), interpolation=interp), tail))
    for name, m, (ow, oh), modes in matrices(w, h):
        mtext = ",".join(repr(float(v)) for v in m.ravel())
        for mode, cv_mode, value in modes:
            for entry, interp in WARPS:
                want = cv2.warpAffine(img, m, (ow, oh), flags=interp, borderMode=cv_mode, borderValue=(value,) * 4)
                out.append((entry, ["--param", "m=" + mtext, "--param", "ow=%d" % ow, "--param", "oh=%d" % oh]
                            + border_args(mode), want, 0))
    mx, my = random_maps(rng, w, h)
    files = []
    for k, m in (("mx", mx), ("my", my)):
        path = os.path.join(tmp, k + ".npy")
        np.save(path, np.repeat(m[..., None], 3, axis=2) if colour else m)  # pxl: as many channels as in
        files += ["--in", "%s=%s" % (k, path)]
    for mode, cv_mode, value in BORDERS:
        for entry, interp in REMAPS:
            want = cv2.remap(img, mx, my, interp, borderMode=cv_mode, borderValue=(value,) * 4)
            out.append((entry, files + border_args(mode), want, 0))
    return out


def describe(entry, args):
    """The case's arguments, short: no file names, no option names."""
    shown = [a for a in args if not a.startswith("--") and not a.endswith(".npy")]
    return entry + "".join(" " + a for a in shown)


def compare(got, want, tail):
    """None when got equals want (a difference of 1 allowed in the last `tail` columns),
    else what differs."""
    if got is None or got.shape != want.shape:
        return "pxl %s, OpenCV %s" % (None if got is None else got.shape, want.shape)
    diff = np.abs(got.astype(np.int16) - want.astype(np.int16))
    allowed = np.zeros(diff.shape, np.int16)
    if tail:
        allowed[:, max(0, want.shape[1] - tail):] = 1
    off = np.argwhere(diff > allowed)
    if not len(off):
        return None
    y, x = off[0][:2]
    return "%d values differ, first at (%d, %d): pxl %s, OpenCV %s" % (len(off), x, y, got[y, x], want[y, x])


def main():
    pxl, examples, devices = sys.argv[1], sys.argv[2], sys.argv[3:]
    if skip_without_cuda(devices):
        return 77
    # The kernels follow OpenCV 4's arithmetic (Debian's 4.6 here, as in CI). OpenCV 5
    # changed warpAffine's, INTER_CUBIC's and remap's: with another major version each
    # case is compared with pxl's CPU backend instead (which the differential tests hold
    # to the interpreter; the interpreter itself takes minutes at the photograph's size).
    by_ref = not cv2.__version__.startswith("4.")
    if by_ref:
        print("note: OpenCV %s is not 4.x: every case compared with pxl's cpu device, not OpenCV" % cv2.__version__)
    passed = failed = 0
    program = os.path.join(examples, "warp.pxl")
    rng = np.random.default_rng(20261205)
    with tempfile.TemporaryDirectory() as tmp:
        src, out = os.path.join(tmp, "in.png"), os.path.join(tmp, "out.png")
        for name, img in inputs(examples):
            cv2.imwrite(src, img)
            for entry, args, want, tail in cases(img, rng, tmp):
                if by_ref:
                    image = ["--in", ("in=" if entry.startswith("remap") else "") + src]
                    ref = os.path.join(tmp, "ref.png")
                    run = subprocess.run([pxl, "run", program, entry] + image + ["--out", ref, "--device", "cpu"] + args,
                                         capture_output=True, text=True)
                    want = cv2.imread(ref, cv2.IMREAD_UNCHANGED) if run.returncode == 0 else np.zeros((0,), np.uint8)
                    tail = 0
                for dev in devices:
                    image = ["--in", ("in=" if entry.startswith("remap") else "") + src]
                    why = run_pxl([pxl, "run", program, entry] + image + ["--out", out, "--device", dev] + args, [out])
                    what = "%s on %s, %s" % (describe(entry, args), name, dev)
                    if why:
                        print("FAIL %s: %s" % (what, why))
                        failed += 1
                        continue
                    why = compare(cv2.imread(out, cv2.IMREAD_UNCHANGED), want, tail)
                    if why:
                        print("FAIL %s: %s" % (what, why))
                        failed += 1
                    else:
                        passed += 1
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
