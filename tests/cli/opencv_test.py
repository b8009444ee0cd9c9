#!/usr/bin/python3
"""opencv_test.py - one-channel examples run on colour photographs by `pxl run`, checked
against an independent oracle, OpenCV, which filters each channel of a colour image on
its own: every output must equal OpenCV's bit for bit.

  blur3 (3x3 box, (s + 4) / 9)  cv2.blur, ksize 3x3: clamp, mirror, mirror101,
                                constant(0) as BORDER_REPLICATE, REFLECT, REFLECT_101,
                                CONSTANT (OpenCV's box filter has no BORDER_WRAP); the
                                generic kernel's u16 instance on a 16-bit colour crop
                                and its f32 instance on an f32 gray crop (.npy) too
  gauss3 (1 2 1 binomial)       cv2.GaussianBlur 3x3, sigma 0 (the same weights)
  edges (pipeline)              GaussianBlur, Sobel (CV_16S) in x and y, all
                                BORDER_REFLECT_101, sqrt(gx^2 + gy^2) * 0.25 in f32
                                rounded half to even, > t
  outline (pipeline)            blur 3x3, Sobel (CV_16S) in x and y, all
                                BORDER_REFLECT_101, |gx| + |gy| saturated to u8, > t

on samples/scene.png (RGB 640x480), a 333x211 crop of it (odd sizes), an RGBA image made
from it (alpha a diagonal ramp), and samples/scene.jpg as pxl decodes it (examples/copy.pxl
writes the decoded pixels; OpenCV's own JPEG decoder may round differently); with
PXL_TEST_QUICK=1 (the sanitizer build) the crop and an RGBA crop only. Last, a
histogram on a colour image is refused (exit 4) with a message naming the parameter.

Usage: opencv_test.py PXL SOURCE_DIR WORK_DIR DEVICE. Exit 77 ("skipped: ...") when
python3-opencv is not installed (tools/deps.txt installs it) or DEVICE is a GPU whose
backend reports it absent.
"""
import os
import subprocess
import sys

try:
    import cv2
    import numpy as np
except ImportError as e:
    print(f"skipped: no python3-opencv ({e})")
    sys.exit(77)

PXL, SRC, WORK, DEVICE = sys.argv[1:5]
os.makedirs(WORK, exist_ok=True)
# every file this writes in WORK begins with DEVICE: the tests of the devices run at once
# in one WORK (a shared crop.png, rewritten by one while another read it, came back empty)
failed = 0
passed = 0


def pxl(*args):
    """Runs pxl with --device DEVICE; (exit status, standard error)."""
    p = subprocess.run([PXL, *args, "--device", DEVICE], capture_output=True, text=True)
    return p.returncode, p.stderr


def check(name, got_path, want):
    global failed, passed
    got = np.load(got_path) if got_path.endswith(".npy") else cv2.imread(got_path, cv2.IMREAD_UNCHANGED)
    if got is None or got.shape != want.shape or got.dtype != want.dtype:
        print(f"FAIL {name}: pxl wrote {None if got is None else (got.shape, got.dtype)}, "
              f"OpenCV has {(want.shape, want.dtype)}")
        failed += 1
        return
    diff = int(np.count_nonzero(got != want))
    if diff:
        dev = float(np.abs(got.astype(np.float64) - want.astype(np.float64)).max())
        print(f"FAIL {name}: {diff} of {want.size} elements differ from OpenCV (by up to {dev:g})")
        failed += 1
    else:
        print(f"ok {name}: {'x'.join(str(n) for n in want.shape)} {want.dtype}, equal to OpenCV")
        passed += 1


def run(name, args, want, ext="png"):
    global failed
    out = os.path.join(WORK, f"{DEVICE}-{name}.{ext}")
    rc, err = pxl("run", *args, "--out", out)
    if rc:
        print(f"FAIL {name}: pxl exited {rc}: {err.strip()}")
        failed += 1
    else:
        check(name, out, want)


def example(name):
    return os.path.join(SRC, "examples", name)


def edges(img, t):
    b = cv2.BORDER_REFLECT_101
    g = cv2.GaussianBlur(img, (3, 3), 0, borderType=b)
    gx = cv2.Sobel(g, cv2.CV_16S, 1, 0, ksize=3, borderType=b).astype(np.float32)
    gy = cv2.Sobel(g, cv2.CV_16S, 0, 1, ksize=3, borderType=b).astype(np.float32)
    mag = np.clip(np.rint(np.sqrt(gx * gx + gy * gy) * np.float32(0.25)), 0, 255)
    return np.where(mag > t, 255, 0).astype(np.uint8)


def outline(img, t):
    b = cv2.BORDER_REFLECT_101
    s = cv2.blur(img, (3, 3), borderType=b)
    gx = cv2.Sobel(s, cv2.CV_16S, 1, 0, ksize=3, borderType=b).astype(np.int32)
    gy = cv2.Sobel(s, cv2.CV_16S, 0, 1, ksize=3, borderType=b).astype(np.int32)
    return np.where(np.clip(np.abs(gx) + np.abs(gy), 0, 255) > t, 255, 0).astype(np.uint8)


# the device: a GPU the backend reports absent is a skip, nothing else
scene = os.path.join(SRC, "samples", "scene.png")
rc, err = pxl("run", example("blur3.pxl"), "--in", scene, "--out", os.path.join(WORK, f"{DEVICE}-probe.png"))
if rc and DEVICE in ("cuda", "opencl") and "is not available" in err:
    print(f"skipped: no {'CUDA' if DEVICE == 'cuda' else 'OpenCL'} device ({err.strip()})")
    sys.exit(77)

# PXL_TEST_QUICK=1 (the sanitizer build): the crop and an RGBA crop only
quick = os.environ.get("PXL_TEST_QUICK") == "1"
inputs = {}
if not quick:
    inputs["scene"] = scene
crop = cv2.imread(scene)[101:312, 55:388]
inputs["crop"] = os.path.join(WORK, f"{DEVICE}-crop.png")
cv2.imwrite(inputs["crop"], crop)
bgr = crop if quick else cv2.imread(scene)
h, w = bgr.shape[:2]
alpha = ((np.arange(w)[None, :] + 2 * np.arange(h)[:, None]) % 256).astype(np.uint8)
inputs["rgba"] = os.path.join(WORK, f"{DEVICE}-rgba.png")
cv2.imwrite(inputs["rgba"], np.dstack([bgr, alpha]))
if not quick:
    inputs["jpeg"] = os.path.join(WORK, f"{DEVICE}-jpeg-decoded.png")
    rc, err = pxl("run", example("copy.pxl"), "--in", os.path.join(SRC, "samples", "scene.jpg"),
                  "--out", inputs["jpeg"])
    if rc:
        print(f"FAIL copy of scene.jpg: pxl exited {rc}: {err.strip()}")
        failed += 1
        del inputs["jpeg"]

borders = [(None, cv2.BORDER_REPLICATE), ("mirror", cv2.BORDER_REFLECT),
           ("mirror101", cv2.BORDER_REFLECT_101), ("constant(0)", cv2.BORDER_CONSTANT)]
for name, path in inputs.items():
    img = cv2.imread(path, cv2.IMREAD_UNCHANGED)
    for mode, cvmode in borders:
        args = [example("blur3.pxl"), "--in", path] + (["--border", f"in={mode}"] if mode else [])
        run(f"blur3-{name}-{mode or 'clamp'}", args, cv2.blur(img, (3, 3), borderType=cvmode))
    run(f"gauss3-{name}-mirror101", [example("edges.pxl"), "gauss3", "--in", path, "--border", "in=mirror101"],
        cv2.GaussianBlur(img, (3, 3), 0, borderType=cv2.BORDER_REFLECT_101))
    run(f"edges-{name}", [example("edges.pxl"), "--in", path, "--param", "t=40"], edges(img, 40))
    run(f"outline-{name}", [example("outline.pxl"), "--in", path, "--param", "t=100"], outline(img, 100))

# one source, three types: blur3 is generic (u8, u16, f32); a 16-bit colour image (the
# crop times 257 plus a ramp in the low bits) and an f32 gray one (with fractions), both
# with odd sizes, take its u16 and f32 instances
ramp = ((np.arange(crop.shape[1])[None, :, None] * 7 + np.arange(crop.shape[0])[:, None, None] * 3) % 257)
c16 = (crop.astype(np.uint32) * 257 + ramp).clip(0, 65535).astype(np.uint16)
inputs16 = os.path.join(WORK, f"{DEVICE}-crop16.png")
cv2.imwrite(inputs16, c16)
f32 = cv2.cvtColor(crop, cv2.COLOR_BGR2GRAY).astype(np.float32) / np.float32(7.0) - np.float32(3.25)
inputsf = os.path.join(WORK, f"{DEVICE}-cropf.npy")
np.save(inputsf, f32)
for mode, cvmode in borders:
    extra = ["--border", f"in={mode}"] if mode else []
    run(f"blur3-u16-{mode or 'clamp'}", [example("blur3.pxl"), "--in", inputs16] + extra,
        cv2.blur(c16, (3, 3), borderType=cvmode))
    run(f"blur3-f32-{mode or 'clamp'}", [example("blur3.pxl"), "--in", inputsf] + extra,
        cv2.blur(f32, (3, 3), borderType=cvmode), ext="npy")
# an image type no instance takes is refused, naming the types there are
np.save(os.path.join(WORK, f"{DEVICE}-i16.npy"), np.zeros((5, 7), np.int16))
rc, err = pxl("run", example("blur3.pxl"), "--in", os.path.join(WORK, f"{DEVICE}-i16.npy"), "--out",
              os.path.join(WORK, f"{DEVICE}-i16-out.npy"))
if rc != 4 or "u8, u16, f32" not in err or "i16" not in err:
    print(f"FAIL blur3 on i16: exit {rc}, '{err.strip()}' (want 4 naming u8, u16, f32 and i16)")
    failed += 1
else:
    passed += 1

# one result per run: a histogram of a colour image is refused, naming the parameter
rc, err = pxl("run", example("hist256.pxl"), "--in", scene)
if rc != 4 or "parameter 'in'" not in err or "u8x3 (3 channels)" not in err:
    print(f"FAIL hist256 on a colour image: exit {rc}, '{err.strip()}' (want 4 naming 'in' and u8x3)")
    failed += 1
else:
    passed += 1

print(f"opencv_test on {DEVICE}: {passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
