#!/usr/bin/env python3
"""Component statistics and the contour histogram (examples/components.pxl) against OpenCV,
SciPy and the seed's rule written here in NumPy.

Usage: components_oracle.py PXL EXAMPLES_DIR DEVICE...

For each image, on each DEVICE, `PXL run` computes the 8-connected labels (labels8), then
every statistic of the label image as a histogram, and compares, exactly:
  area, left, top, right, bottom, sum_x, sum_y
      cv2.connectedComponentsWithStats(in != 0, 8): CC_STAT_AREA, CC_STAT_LEFT, CC_STAT_TOP,
      LEFT + WIDTH - 1, TOP + HEIGHT - 1, and the centroids times the area (the sums of x
      and y: the centroid of each label within 1e-9 of OpenCV's), background (label 0)
      included, OpenCV's labels mapped to pxl's through their pixels; the bins past the last
      label empty (0 for sums, an empty CSV field for minima and maxima)
  sums, bounds
      the same in two passes: areas and the sums of x and y in one histogram (bins 0, 4096
      and 8192 + label), minus the left and top and the right and bottom in another
      (0, 4096, 8192 and 12288 + label), against the same OpenCV statistics
  min_value, max_value
      scipy.ndimage.minimum / maximum of the grey image per label
  contour
      seed 003's contour histogram (4 x 4 cells of each component's bounding box x 8
      orientations, weighted by the L1 Sobel magnitude), computed here from cv2.Sobel
      (BORDER_REFLECT_101) and OpenCV's boxes, which are passed to pxl as --param FILEs
Prints 'N passed, N failed' and exits 1 on a failure.
"""
import os
import sys
import tempfile

import cv2
import numpy as np
import tifffile
from scipy import ndimage

from oracle_common import run_pxl, skip_without_cuda, sample

BINS = 4096
CONTOUR_BINS = 128 * BINS


def images(examples):
    rng = np.random.default_rng(20261128)
    scene = sample(examples, "scene.png", cv2.IMREAD_GRAYSCALE)
    yield "scene 640x480 (dark objects)", scene, (scene < 60).astype(np.uint8) * 255
    blobs = cv2.GaussianBlur(rng.random((200, 300)).astype(np.float32), (0, 0), 4)
    grey = (blobs * 255 / blobs.max()).astype(np.uint8)
    yield "blobs 300x200", grey, (blobs > np.percentile(blobs, 70)).astype(np.uint8) * 255
    noise = rng.integers(0, 256, (61, 97), dtype=np.uint8)
    yield "noise 97x61 (sparse)", noise, (noise > 235).astype(np.uint8) * 255
    yield "one pixel 1x1", np.full((1, 1), 9, np.uint8), np.full((1, 1), 255, np.uint8)
    yield "empty 40x30", np.arange(1200, dtype=np.uint8).reshape(30, 40), np.zeros((30, 40), np.uint8)


def run(pxl, examples, dev, entry, imgs, tmp, params=()):
    out = os.path.join(tmp, "out.tif" if entry == "labels8" else "out.csv")
    cmd = [pxl, "run", os.path.join(examples, "components.pxl"), entry]
    for name, path in imgs.items():
        cmd += ["--in", "%s=%s" % (name, path)]
    for p in params:
        cmd += ["--param", p]
    cmd += ["--out", out, "--device", dev]
    why = run_pxl(cmd, [out])
    if why:
        return None, why
    if entry == "labels8":
        return tifffile.imread(out), None
    with open(out) as f:
        lines = f.read().splitlines()
    values = [line.split(",", 1)[1] for line in lines[1:]]
    return values, None


def contour_rule(grey, lab, stats):
    """The contour histogram as examples/components.pxl defines it, in NumPy."""
    g = grey.astype(np.float32)
    gx = cv2.Sobel(g, cv2.CV_32F, 1, 0, ksize=3, borderType=cv2.BORDER_REFLECT_101).astype(np.int64)
    gy = cv2.Sobel(g, cv2.CV_32F, 0, 1, ksize=3, borderType=cv2.BORDER_REFLECT_101).astype(np.int64)
    ys, xs = np.indices(lab.shape)
    lab = lab.astype(np.int64)
    keep = (lab != 0) & (lab < BINS) & ((gx != 0) | (gy != 0))
    ax, ay = np.abs(gx), np.abs(gy)
    o = np.where(gx > 0, np.where(gy > 0, 1, 7), np.where(gy > 0, 3, 5))
    o = np.where(ay * 1000 <= ax * 414, np.where(gx > 0, 0, 4), o)
    o = np.where(ax * 1000 <= ay * 414, np.where(gy > 0, 2, 6), o)
    left, top = stats[lab, cv2.CC_STAT_LEFT], stats[lab, cv2.CC_STAT_TOP]
    width, height = stats[lab, cv2.CC_STAT_WIDTH], stats[lab, cv2.CC_STAT_HEIGHT]
    cx = (xs - left) * 4 // width
    cy = (ys - top) * 4 // height
    index = 128 * lab + 32 * cy + 8 * cx + o
    hist = np.zeros(CONTOUR_BINS, np.int64)
    np.add.at(hist, index[keep], (ax + ay)[keep])
    return hist


def main():
    pxl, examples, devices = sys.argv[1], sys.argv[2], sys.argv[3:]
    if skip_without_cuda(devices):
        return 77
    passed = failed = 0

    def check(what, ok, why=""):
        nonlocal passed, failed
        if ok:
            passed += 1
        else:
            failed += 1
            print("FAIL %s%s" % (what, ": " + why if why else ""))

    with tempfile.TemporaryDirectory() as tmp:
        for name, grey, binary in images(examples):
            grey_path, bin_path = os.path.join(tmp, "grey.png"), os.path.join(tmp, "bin.png")
            cv2.imwrite(grey_path, grey)
            cv2.imwrite(bin_path, binary)
            n, cv_lab, stats, centroids = cv2.connectedComponentsWithStats(
                (binary != 0).astype(np.uint8), connectivity=8, ltype=cv2.CV_32S)
            for dev in devices:
                what = "%s, %s" % (name, dev)
                lab, why = run(pxl, examples, dev, "labels8", {"in": bin_path}, tmp)
                if lab is None:
                    check(what + " labels8", False, why)
                    continue
                lab = lab.reshape(binary.shape)
                # OpenCV's label k is pxl's label at any of its pixels (one each, or a partition differs)
                perm = np.zeros(n, np.int64)
                for k in range(n):
                    at = lab[cv_lab == k]
                    perm[k] = at[0] if at.size else 0 if k == 0 else -1  # the background may be empty
                    if at.size and np.any(at != at[0]):
                        check(what + " labels8", False, "OpenCV's component %d is split" % k)
                order = np.argsort(perm)  # OpenCV's labels in pxl's order
                if sorted(perm.tolist()) != list(range(n)):
                    check(what + " labels8", False, "labels are not OpenCV's partition")
                    continue
                st, ce = stats[order], centroids[order]
                lab_path = os.path.join(tmp, "lab.tif")
                tifffile.imwrite(lab_path, lab)
                want = {
                    "area": st[:, cv2.CC_STAT_AREA],
                    "left": st[:, cv2.CC_STAT_LEFT],
                    "top": st[:, cv2.CC_STAT_TOP],
                    "right": st[:, cv2.CC_STAT_LEFT] + st[:, cv2.CC_STAT_WIDTH] - 1,
                    "bottom": st[:, cv2.CC_STAT_TOP] + st[:, cv2.CC_STAT_HEIGHT] - 1,
                }
                labels = np.arange(n)
                want["min_value"] = np.array(ndimage.minimum(grey, lab, labels), np.int64)
                want["max_value"] = np.array(ndimage.maximum(grey, lab, labels), np.int64)
                sums = {}
                for entry in ["area", "left", "top", "right", "bottom", "sum_x", "sum_y", "min_value", "max_value"]:
                    imgs = {"lab": lab_path}
                    if entry.endswith("_value"):
                        imgs["in"] = grey_path
                    got, why = run(pxl, examples, dev, entry, imgs, tmp)
                    if got is None:
                        check("%s %s" % (what, entry), False, why)
                        continue
                    # the statistic of every pixel-bearing label; the bins past them empty
                    empty = "0" if entry in ("area", "sum_x", "sum_y") else ""
                    rest_ok = all(v == empty for v in got[n:])
                    check("%s %s" % (what, entry), rest_ok and len(got) == BINS,
                          "bins past label %d are not empty" % (n - 1))
                    # a label without pixels (only the background can be one) is an empty bin
                    none = st[:, cv2.CC_STAT_AREA] == 0
                    check("%s %s" % (what, entry), all(got[k] == empty for k in np.nonzero(none)[0]),
                          "the empty background's bin is not empty")
                    vals = np.array([0 if none[k] else int(v) for k, v in enumerate(got[:n])], np.int64)
                    want[entry] = np.where(none, 0, want.get(entry, 0))
                    if entry.startswith("sum_"):
                        sums[entry] = vals
                        continue
                    bad = np.nonzero(vals != want[entry])[0]
                    check("%s %s" % (what, entry), bad.size == 0,
                          bad.size and "label %d: pxl %d, expected %d" % (bad[0], vals[bad[0]], want[entry][bad[0]]))
                # the two-pass forms: areas and sums of x and y in one histogram; minus the
                # first column and row, the last column and row in another
                none = st[:, cv2.CC_STAT_AREA] == 0
                # OpenCV's sums of x and y: its centroids (sum / area, in double) times the areas
                cv_sums = np.rint(np.nan_to_num(ce) * st[:, cv2.CC_STAT_AREA][:, None]).astype(np.int64)
                for entry, parts, empty in (
                        ("sums", [st[:, cv2.CC_STAT_AREA], cv_sums[:, 0], cv_sums[:, 1]], "0"),
                        ("bounds", [-want["left"], -want["top"], want["right"], want["bottom"]], "")):
                    got, why = run(pxl, examples, dev, entry, {"lab": lab_path}, tmp)
                    if got is None:
                        check("%s %s" % (what, entry), False, why)
                        continue
                    check("%s %s" % (what, entry), len(got) == len(parts) * BINS,
                          "%d bins, expected %d" % (len(got), len(parts) * BINS))
                    for k, col in enumerate(parts):
                        part = got[k * BINS:(k + 1) * BINS]
                        rest_ok = all(v == empty for v in part[n:]) and all(part[j] == empty for j in np.nonzero(none)[0])
                        vals = np.array([0 if none[j] else int(v) for j, v in enumerate(part[:n])], np.int64)
                        bad = np.nonzero(vals != np.where(none, 0, col))[0]
                        check("%s %s part %d" % (what, entry, k), rest_ok and bad.size == 0,
                              "bins past the labels or of the empty background not empty" if not rest_ok else
                              bad.size and "label %d: pxl %d, expected %d" % (bad[0], vals[bad[0]], col[bad[0]]))
                if len(sums) == 2:
                    area = np.maximum(st[:, cv2.CC_STAT_AREA], 1)
                    cen = np.stack([sums["sum_x"] / area, sums["sum_y"] / area], axis=1)
                    full = st[:, cv2.CC_STAT_AREA] > 0  # OpenCV's centroid of no pixels is NaN
                    err = float(np.max(np.abs(cen - ce)[full])) if full.any() else 0.0
                    check("%s centroids" % what, err < 1e-9, "largest difference %g" % err)
                if n > BINS:
                    continue
                params = []
                for pname, col in (("bl", want["left"]), ("bt", want["top"]), ("br", want["right"]),
                                   ("bb", want["bottom"])):
                    path = os.path.join(tmp, pname + ".txt")
                    with open(path, "w") as f:
                        f.write(",".join(str(int(v)) for v in col))
                    params.append("%s=@%s" % (pname, path))
                got, why = run(pxl, examples, dev, "contour", {"lab": lab_path, "in": grey_path}, tmp, params)
                if got is None:
                    check("%s contour" % what, False, why)
                    continue
                hist = contour_rule(grey, lab, st)
                vals = np.array([int(v) for v in got], np.int64)
                bad = np.nonzero(vals != hist)[0]
                check("%s contour" % what, vals.size == CONTOUR_BINS and bad.size == 0,
                      bad.size and "bin %d: pxl %d, expected %d (%d bins differ)" %
                      (bad[0], vals[bad[0]], hist[bad[0]], bad.size))
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
