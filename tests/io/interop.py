#!/usr/bin/python3
"""interop.py IO_CONVERT - pxl's TIFF and .npy files checked by independent code.

numpy (np.save / np.load) and tifffile write every pxl type (u8 i16 u16 i32 u32 f32 f64)
with 1, 3 and 4 channels in several layouts; io_convert (pxl_image_load + pxl_image_save)
converts each file to the other format; numpy and tifffile read pxl's file back, and the
elements must equal the originals bit for bit (NaN payloads, infinities, -0 included).
pxl's .npy must also be byte-identical to what np.save writes for the same array. Exits 1
on the first difference; numpy or tifffile missing is a failure (tools/deps.txt has them).
"""
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import tifffile
except ImportError as e:
    sys.exit(f"interop: {e} (install python3-numpy and python3-tifffile, tools/deps.txt)")

CONVERT = sys.argv[1]
DTYPES = {"u8": "u1", "i16": "<i2", "u16": "<u2", "i32": "<i4", "u32": "<u4", "f32": "<f4", "f64": "<f8"}
SPECIAL = {"f32": [0x7FC00000, 0x7FA12345, 0xFFC00001, 0x7F800000, 0xFF800000, 0x80000000, 1],
           "f64": [0x7FF8000000000000, 0x7FF0000000000123, 0xFFF8000000000001, 0x7FF0000000000000,
                   0xFFF0000000000000, 0x8000000000000000, 1]}
rng = np.random.default_rng(1234)
checks = 0


def make(name, h, w, c):
    dt = np.dtype(DTYPES[name])
    shape = (h, w) if c == 1 else (h, w, c)
    raw = rng.integers(0, 256, size=int(np.prod(shape)) * dt.itemsize, dtype=np.uint8)
    a = raw.view(dt).reshape(shape).copy()
    if name in SPECIAL:
        bits = a.reshape(-1).view(np.uint32 if name == "f32" else np.uint64)
        k = min(len(SPECIAL[name]), bits.size)
        bits[:k] = SPECIAL[name][:k]
    return a


def same_bits(a, b, what):
    global checks
    checks += 1
    if (a.dtype.kind, a.dtype.itemsize) != (b.dtype.kind, b.dtype.itemsize):
        sys.exit(f"interop: {what}: dtype {b.dtype}, expected {a.dtype}")
    b = b.reshape(b.shape[:2]) if b.ndim == 3 and b.shape[2] == 1 else b
    a = a.reshape(a.shape[:2]) if a.ndim == 3 and a.shape[2] == 1 else a
    if a.shape != b.shape:
        sys.exit(f"interop: {what}: shape {b.shape}, expected {a.shape}")
    ua = np.ascontiguousarray(a).astype(a.dtype.newbyteorder("<")).view(f"u{a.dtype.itemsize}")
    ub = np.ascontiguousarray(b).astype(b.dtype.newbyteorder("<")).view(f"u{b.dtype.itemsize}")
    if not np.array_equal(ua, ub):
        sys.exit(f"interop: {what}: pixels differ")


def convert(src, dst, expect):
    r = subprocess.run([CONVERT, src, dst], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"interop: io_convert {src} {dst} failed: {r.stderr.strip()}")
    if r.stdout.strip() != expect:
        sys.exit(f"interop: io_convert {src}: '{r.stdout.strip()}', expected '{expect}'")


def main():
    d = tempfile.mkdtemp(prefix="pxl_interop.")
    p = lambda n: os.path.join(d, n)
    for name in DTYPES:
        for c in (1, 3, 4):
            for h, w in ((1, 1), (29, 37)):
                a = make(name, h, w, c)
                tag = f"{name} {c}ch {w}x{h}"
                expect = f"{w}x{h} {c} {name}"
                # numpy writes .npy; pxl converts to TIFF and .npy; tifffile and numpy read
                np.save(p("a.npy"), a)
                convert(p("a.npy"), p("b.tiff"), expect)
                same_bits(a, tifffile.imread(p("b.tiff")), f"{tag}: np.save -> pxl -> TIFF -> tifffile")
                convert(p("a.npy"), p("b.npy"), expect)
                same_bits(a, np.load(p("b.npy")), f"{tag}: np.save -> pxl -> .npy -> np.load")
                if open(p("a.npy"), "rb").read() != open(p("b.npy"), "rb").read():
                    sys.exit(f"interop: {tag}: pxl's .npy differs from np.save's bytes")
                # numpy's other layouts: big-endian, Fortran order, (H, W, 1)
                variants = [("big-endian", a.astype(a.dtype.newbyteorder(">"))),
                            ("Fortran order", np.asfortranarray(a))]
                if c == 1:
                    variants.append(("(H, W, 1)", a.reshape(h, w, 1)))
                for vname, v in variants:
                    np.save(p("v.npy"), v)
                    convert(p("v.npy"), p("v.tif"), expect)
                    same_bits(a, tifffile.imread(p("v.tif")), f"{tag}: np.save {vname} -> pxl -> TIFF")
                # tifffile writes TIFF in several layouts; pxl converts to .npy; numpy reads
                photometric = "minisblack" if c == 1 else "rgb"
                extra = {"extrasamples": ["unassalpha"]} if c == 4 else {}
                layouts = [("plain", a, {}),
                           ("big-endian", a, {"byteorder": ">"}),
                           ("deflate", a, {"compression": "zlib"}),
                           ("tiled", a, {"tile": (16, 16)}),
                           ("strips of 3 rows", a, {"rowsperstrip": 3}),
                           ("bigtiff", a, {"bigtiff": True})]
                if c > 1:
                    layouts.append(("separate planes", np.moveaxis(a, -1, 0), {"planarconfig": "separate"}))
                for lname, data, kw in layouts:
                    tifffile.imwrite(p("t.tif"), data, photometric=photometric, **kw,
                                     **(extra if "planarconfig" not in kw else {}))
                    convert(p("t.tif"), p("t.npy"), expect)
                    same_bits(a, np.load(p("t.npy")), f"{tag}: tifffile {lname} -> pxl -> .npy")
    for f in os.listdir(d):
        os.remove(os.path.join(d, f))
    os.rmdir(d)
    print(f"interop: {checks} checks passed (numpy {np.__version__}, tifffile {tifffile.__version__})")


main()
