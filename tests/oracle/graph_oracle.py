#!/usr/bin/env python3
"""Global operators (examples/graph.pxl) against SciPy, scikit-image and OpenCV.

Usage: graph_oracle.py PXL EXAMPLES_DIR DEVICE... [--watersheds-rule-only]

Each case writes its input image, runs `PXL run` on each DEVICE and compares the result
pixel for pixel (exact equality):
  bwdist         float32(scipy.ndimage.distance_transform_edt(in == 0)) (MATLAB's bwdist)
  edt            float32(scipy.ndimage.distance_transform_edt(in))
  bwdist_index   the raster index y * width + x of the nearest nonzero pixel from
                 distance_transform_edt(in == 0, return_indices=True), whose ties fall as
                 pxl's rule says (the smallest x, then the smallest y), exactly; and, on images
                 of up to 4096 pixels, the rule itself by brute force over every feature pixel
  taxicab        scipy.ndimage.distance_transform_cdt(in, metric='taxicab')
  chessboard     scipy.ndimage.distance_transform_cdt(in, metric='chessboard')
  label_binary4  cv2.connectedComponents(in != 0, connectivity=4), and
  label_binary8  with 8; OpenCV's numbering made raster order of first pixel
  label_grey4    skimage.measure.label(in, background=0, connectivity=1 or 2), numbered
  label_grey8    the same way
  reconstruct    skimage.morphology.reconstruction(min(seed, mask), mask, 'dilation') (3x3)
  reconstruct_erosion  the same with max(seed, mask), 'erosion'
  fill_holes     scipy.ndimage.binary_fill_holes on 0/255 images; on grey ones reconstruction
                 by erosion from the border with the cross footprint (MATLAB imfill 'holes')
  regional_minima, regional_maxima  skimage.morphology.local_minima/local_maxima
                 (connectivity 2, allow_borders=True), but for a constant image: one plateau
                 with no lower (higher) neighbour, all 1 as MATLAB's definition says, where
                 skimage's padding finds none
  watershed      the documented flooding rule (LANGUAGE.md: a priority queue of (relief,
                 order of entry), neighbours in a fixed order) written here in Python with
                 heapq, exactly; and skimage.segmentation.watershed(relief, markers,
                 connectivity=2), which breaks ties of equal relief its own way: the pixels
                 where the two differ are counted and must stay under WATERSHED_DIFF (on
                 images of 1000 pixels or more)
  watershed_minima  the same with the markers skimage.measure.label(regional minima)
  watershed_lines, watershed_minima_lines  the same with watershed lines: the rule (pixels
                 labelled as they leave the queue, 0 where two labels meet) in Python, exactly,
                 and skimage's watershed(..., watershed_line=True) within WATERSHED_LINES_DIFF
                 (lines on plateaus move by a pixel with the order of ties: 5.1% of the
                 101x101 spiral's pixels)
--watersheds-rule-only leaves out the comparisons of the watersheds with skimage's, which
do not depend on the device (oracle_graph makes them; the GPU machine's scikit-image did not
finish watershed(..., watershed_line=True) on the 640x480 image in 75 s).
A run gets RUN_TIMEOUT seconds; PXL_ORACLE_VERBOSE=1 prints each run's time.
pxl's labels must already be in raster order of their first pixel. An image without a
feature pixel has no distance in SciPy (it answers with the largest or -1); pxl's is
infinite (u32: 4294967295), which is what is expected there.
Prints 'N passed, N failed' and exits 1 on a failure.
"""
import heapq
import os
import sys
import tempfile
import time

import cv2
import numpy as np
import tifffile
from scipy import ndimage
from skimage.measure import label as sk_label
from skimage.morphology import local_maxima, local_minima, reconstruction
from skimage.segmentation import watershed as sk_watershed

from oracle_common import run_pxl, skip_without_cuda, sample

U32_MAX = np.iinfo(np.uint32).max
CROSS = np.array([[0, 1, 0], [1, 1, 1], [0, 1, 0]], dtype=bool)
WATERSHED_DIFF = 0.05  # the share of pixels where skimage's flooding order may differ
WATERSHED_LINES_DIFF = 0.08  # with lines: skimage also places the lines of plateaus its own way
RUN_TIMEOUT = 120  # seconds a run of pxl may take (the largest image is 640x480)
NEIGHBOURS8 = [(-1, -1), (0, -1), (1, -1), (-1, 0), (1, 0), (-1, 1), (0, 1), (1, 1)]


def flood(relief, markers):
    """The documented watershed rule, 8-connected: marker pixels in raster order, then the
    smallest (relief, order of entry) first, each unlabelled neighbour labelled and entered."""
    h, w = relief.shape
    out = np.zeros((h, w), np.uint32)
    heap, seq = [], 0
    for y, x in zip(*np.nonzero(markers)):
        out[y, x] = markers[y, x]
        heapq.heappush(heap, (int(relief[y, x]), seq, y, x))
        seq += 1
    while heap:
        _, _, y, x = heapq.heappop(heap)
        for dx, dy in NEIGHBOURS8:
            v, u = y + dy, x + dx
            if 0 <= v < h and 0 <= u < w and not out[v, u]:
                out[v, u] = out[y, x]
                heapq.heappush(heap, (int(relief[v, u]), seq, v, u))
                seq += 1
    return out


def flood_lines(relief, markers):
    """The documented rule with watershed lines, 8-connected: markers enter labelled; any
    other pixel enters unlabelled and, when it leaves, takes the one label of its labelled
    neighbours or, with two or more, is a line pixel (0) that floods no further."""
    h, w = relief.shape
    out = np.zeros((h, w), np.uint32)
    queued = np.zeros((h, w), bool)
    labelled = np.zeros((h, w), bool)
    heap, seq = [], 0
    for y, x in zip(*np.nonzero(markers)):
        out[y, x] = markers[y, x]
        queued[y, x] = labelled[y, x] = True
        heapq.heappush(heap, (int(relief[y, x]), seq, y, x))
        seq += 1
    while heap:
        _, _, y, x = heapq.heappop(heap)
        if not labelled[y, x]:
            near = {int(out[y + dy, x + dx]) for dx, dy in NEIGHBOURS8
                    if 0 <= y + dy < h and 0 <= x + dx < w and labelled[y + dy, x + dx]}
            if len(near) != 1:
                continue
            out[y, x] = near.pop()
            labelled[y, x] = True
        for dx, dy in NEIGHBOURS8:
            v, u = y + dy, x + dx
            if 0 <= v < h and 0 <= u < w and not queued[v, u]:
                queued[v, u] = True
                heapq.heappush(heap, (int(relief[v, u]), seq, v, u))
                seq += 1
    return out


def nearest_rule(feat):
    """The documented nearest feature, by brute force: of the features at the smallest
    squared distance, the one with the smallest x, then the smallest y; its raster index."""
    h, w = feat.shape
    fy, fx = np.nonzero(feat)
    order = np.lexsort((fy, fx))  # by x, then y
    fy, fx = fy[order], fx[order]
    ys, xs = np.indices(feat.shape)
    d2 = (ys[..., None] - fy) ** 2 + (xs[..., None] - fx) ** 2
    k = np.argmin(d2, axis=-1)  # the first of equal minima
    return (fy[k].astype(np.int64) * w + fx[k]).astype(np.uint32)


def extrema(a, fn):
    """skimage's local_minima/local_maxima, but a constant image is one extremum."""
    if a.size and np.all(a == a.flat[0]):
        return np.ones(a.shape, np.uint8)
    return fn(a, connectivity=2, allow_borders=True).astype(np.uint8)


def raster_order(lab):
    """Labels renumbered 1, 2, ... in raster order of their first pixel (0 stays 0)."""
    flat = lab.ravel()
    values, first = np.unique(flat, return_index=True)
    order = [v for _, v in sorted(zip(first, values)) if v != 0]
    table = {v: i + 1 for i, v in enumerate(order)}
    table[0] = 0
    return np.vectorize(table.get, otypes=[np.uint32])(lab) if lab.size else lab.astype(np.uint32)


def spiral(n):
    """A square spiral of 0/255 one pixel wide: the longest paths an image of its size has."""
    a = np.zeros((n, n), np.uint8)
    y, x, dy, dx, length = n // 2, n // 2, 0, 1, 1
    while 0 <= y < n and 0 <= x < n:
        for _ in range(2):
            for _ in range(length):
                if 0 <= y < n and 0 <= x < n:
                    a[y, x] = 255
                y, x = y + dy, x + dx
            dy, dx = dx, -dy
        length += 2
    return a


def images(examples):
    rng = np.random.default_rng(20261128)
    shapes = sample(examples, "shapes.png", cv2.IMREAD_GRAYSCALE)
    scene = sample(examples, "scene.png", cv2.IMREAD_GRAYSCALE)
    yield "shapes 640x480", shapes
    yield "scene levels 300x200", (scene[100:300, 150:450] // 64).astype(np.uint8)
    yield "spiral 101x101", spiral(101)
    for w, h, p in [(97, 61, 0.5), (64, 64, 0.1), (37, 23, 0.9), (1, 1, 0.5), (50, 1, 0.5), (1, 30, 0.5)]:
        yield "random %dx%d %d%%" % (w, h, p * 100), ((rng.random((h, w)) < p) * 255).astype(np.uint8)
    yield "grey 53x41", rng.integers(0, 4, (41, 53), dtype=np.uint8) * 60
    yield "all set 9x7", np.full((7, 9), 200, np.uint8)
    yield "one zero 33x17", np.pad(np.zeros((1, 1), np.uint8), ((3, 13), (30, 2)), constant_values=7)
    # distances beyond the CUDA pass's row search (runtime/cuda/ops.cu: dist_scan), so that
    # its columns go to the stacks of dist_cols
    yield "one zero 300x200", np.pad(np.zeros((1, 1), np.uint8), ((5, 194), (290, 9)), constant_values=9)


def fill_holes_ref(a):
    seed = np.full_like(a, 255)
    seed[0, :], seed[-1, :], seed[:, 0], seed[:, -1] = a[0, :], a[-1, :], a[:, 0], a[:, -1]
    return reconstruction(seed, a, method="erosion", footprint=CROSS).astype(np.uint8)


def morph_cases(a, with_skimage_watershed=True):
    """(entry, {param: image}, expected, tolerance) for image a and a second image made from it;
    the watersheds also against skimage's (within a tolerance) where with_skimage_watershed."""
    b = cv2.GaussianBlur(a, (0, 0), 3) if min(a.shape) > 1 else a // 2
    yield "reconstruct", {"seed": b, "mask": a}, reconstruction(np.minimum(b, a), a, "dilation").astype(np.uint8), 0
    yield ("reconstruct_erosion", {"seed": b, "mask": a},
           reconstruction(np.maximum(b, a), a, "erosion").astype(np.uint8), 0)
    if set(np.unique(a)) <= {0, 255}:
        yield "fill_holes", {"in": a}, ndimage.binary_fill_holes(a > 0).astype(np.uint8) * 255, 0
    else:
        yield "fill_holes", {"in": a}, fill_holes_ref(a), 0
    minima = extrema(b, local_minima)
    yield "regional_minima", {"in": b}, minima, 0
    yield "regional_maxima", {"in": b}, extrema(b, local_maxima), 0
    markers = sk_label(minima, connectivity=2).astype(np.uint16)
    basins = flood(b, markers)
    lines = flood_lines(b, markers)
    if with_skimage_watershed:
        skimage = sk_watershed(b, markers, connectivity=2).astype(np.uint32)
        skimage_lines = sk_watershed(b, markers, connectivity=2, watershed_line=True).astype(np.uint32)
    for entry in ("watershed", "watershed_minima", "watershed_lines", "watershed_minima_lines"):
        imgs = {"relief": b, "markers": markers} if entry in ("watershed", "watershed_lines") else {"in": b}
        with_lines = entry.endswith("lines")
        yield entry, imgs, lines if with_lines else basins, 0
        if with_skimage_watershed and b.size >= 1000:  # on a handful of pixels one tie is a large share
            yield (entry + " (skimage)", imgs, skimage_lines if with_lines else skimage,
                   WATERSHED_LINES_DIFF if with_lines else WATERSHED_DIFF)


def cases(a):
    """(entry, expected) for image a."""
    has_zero, has_set = bool(np.any(a == 0)), bool(np.any(a != 0))
    if has_set:
        yield "bwdist", ndimage.distance_transform_edt(a == 0).astype(np.float32)
        _, (iy, ix) = ndimage.distance_transform_edt(a == 0, return_indices=True)
        yield "bwdist_index", (iy.astype(np.int64) * a.shape[1] + ix).astype(np.uint32)
        if a.size <= 4096:
            yield "bwdist_index (rule)", nearest_rule(a != 0)
    else:
        yield "bwdist_index", np.full(a.shape, U32_MAX, np.uint32)
    if has_zero:
        yield "edt", ndimage.distance_transform_edt(a).astype(np.float32)
    for metric in ("taxicab", "chessboard"):
        want = ndimage.distance_transform_cdt(a, metric=metric).astype(np.int64) if has_zero else None
        yield metric, want.astype(np.uint32) if has_zero else np.full(a.shape, U32_MAX, np.uint32)
    binary = (a != 0).astype(np.uint8)
    for conn in (4, 8):
        _, lab = cv2.connectedComponents(binary, connectivity=conn, ltype=cv2.CV_32S)
        yield "label_binary%d" % conn, raster_order(lab)
        yield "label_grey%d" % conn, raster_order(sk_label(a, background=0, connectivity=1 if conn == 4 else 2))


def run(pxl, examples, dev, entry, imgs, tmp):
    cmd = [pxl, "run", os.path.join(examples, "graph.pxl"), entry.split()[0]]
    for name, img in imgs.items():
        src = os.path.join(tmp, name + ".png")
        cv2.imwrite(src, img)
        cmd += ["--in", "%s=%s" % (name, src)]
    img = next(iter(imgs.values()))
    out = os.path.join(tmp, "out.tif")
    cmd += ["--out", out, "--device", dev]
    start = time.monotonic()
    # a run that hangs fails here, naming its case, before ctest's timeout ends the test
    why = run_pxl(cmd, [out], timeout=RUN_TIMEOUT)
    if os.environ.get("PXL_ORACLE_VERBOSE"):
        print("%.2f s: %s %s %s" % (time.monotonic() - start, entry, dev, img.shape), flush=True)
    return (None, why) if why else (tifffile.imread(out).reshape(img.shape), None)


def main():
    args = [a for a in sys.argv[1:] if a != "--watersheds-rule-only"]
    pxl, examples, devices = args[0], args[1], args[2:]
    with_skimage_watershed = "--watersheds-rule-only" not in sys.argv
    if skip_without_cuda(devices):
        return 77
    passed = failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, img in images(examples):
            todo = [(entry, {"in": img}, want, 0) for entry, want in cases(img)] + list(morph_cases(img, with_skimage_watershed))
            for entry, imgs, want, tolerance in todo:
                for dev in devices:
                    what = "%s on %s, %s" % (entry, name, dev)
                    got, why = run(pxl, examples, dev, entry, imgs, tmp)
                    if got is None:
                        print("FAIL %s: %s" % (what, why))
                        failed += 1
                    elif got.dtype != want.dtype:
                        print("FAIL %s: output %s, expected %s" % (what, got.dtype, want.dtype))
                        failed += 1
                    elif entry.startswith("label") and np.any(got != raster_order(got)):
                        print("FAIL %s: labels not numbered in raster order of first pixel" % what)
                        failed += 1
                    elif tolerance and np.count_nonzero(got != want) <= tolerance * got.size:
                        if np.any(got != want):
                            print("note %s: %d of %d pixels differ (flooding order)" %
                                  (what, np.count_nonzero(got != want), got.size))
                        passed += 1
                    elif np.any(got != want):
                        y, x = np.argwhere(got != want)[0]
                        print("FAIL %s: %d pixels differ, first at (%d, %d): pxl %s, expected %s" %
                              (what, np.count_nonzero(got != want), x, y, got[y, x], want[y, x]))
                        failed += 1
                    else:
                        passed += 1
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
