#!/usr/bin/python3
"""video_test.py - `pxl run` over streams of frames (YUV4MPEG2 files, numbered image files),
checked with an independent YUV4MPEG2 reader and writer written here with NumPy and with
OpenCV as the oracle of each plane's result.

  y4m 4:2:0 in and out        examples/blur3.pxl (mirror101) on every plane of every frame
                              of a 37x23 stream (odd: chroma 19x12) equals cv2.blur
                              (BORDER_REFLECT_101) plane by plane; the header keeps its
                              F, I, A, X and C parameters; frame headers with parameters
                              are read
  4:2:2, 4:4:4, mono          examples/copy.pxl gives the same bytes, header parameters kept
  --planes y                  the Y plane only: a mono stream
  pipes                       --in - --out - (standard input and output) give the same
                              stream as files; garbage on standard input is exit 3
  a reduction per frame       examples/sum.pxl prints one line per frame and plane, the
                              values equal NumPy's sums
  numbered files              f_%03d.pgm in (numbers 1..5, sizes differ) and o_%03d.png out,
                              the same numbers; an RGB sequence runs per channel
  errors                      a truncated frame (exit 3, names the frame; no output file,
                              an existing one untouched), a 10-bit stream, a header without
                              W, garbage instead of FRAME, an i16 result to y4m (exit 2
                              before the run), three planes to numbered files, output
                              patterns that would overwrite the input frames, a pattern
                              with no file, a histogram (refused with the reason)
  quiet                       nothing on standard error when it is not a terminal; on a
                              terminal (a pty) a progress line: frames of the count, fps
  an outside reader           OpenCV's video input (FFmpeg) reads the written y4m, where
                              this OpenCV has that backend
  bounded memory              (cpu, release build) 150 frames of 640x480 (69 MB) run in well under
                              the stream's size of memory (the child's peak RSS)

Usage: video_test.py PXL SOURCE_DIR WORK_DIR DEVICE. Exit 77 ("skipped: ...") without
python3-opencv, or when DEVICE is a GPU whose backend reports it absent.
"""
import os
import pty
import select
import subprocess
import sys

try:
    import cv2
    import numpy as np
except ImportError as e:
    print(f"skipped: no python3-opencv ({e})")
    sys.exit(77)

PXL, SRC, WORK, DEVICE = sys.argv[1:5]
WORK = os.path.join(WORK, DEVICE)
os.makedirs(WORK, exist_ok=True)
os.environ.setdefault("PXL_CACHE_DIR", os.path.join(WORK, "cache"))
failed = passed = 0


def example(name):
    return os.path.join(SRC, "examples", name)


def w(name):
    return os.path.join(WORK, name)


def pxl(*args):
    """Runs pxl with --device DEVICE; (exit status, stdout, stderr)."""
    p = subprocess.run([PXL, *args, "--device", DEVICE], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def ok(name, cond, detail=""):
    global failed, passed
    if cond:
        passed += 1
        print(f"ok {name}")
    else:
        failed += 1
        print(f"FAIL {name} {detail}")


# ---- an independent YUV4MPEG2 reader and writer ----

CHROMA = {"420jpeg": "420", "420paldv": "420", "420mpeg2": "420", "420": "420", "422": "422", "444": "444",
          "mono": "mono"}


def plane_shapes(width, height, cs):
    kind = CHROMA[cs]
    if kind == "mono":
        return [(height, width)]
    cw = width if kind == "444" else (width + 1) // 2
    ch = (height + 1) // 2 if kind == "420" else height
    return [(height, width), (ch, cw), (ch, cw)]


def write_y4m(path, width, height, frames, cs="420jpeg", params="F25:1", frame_params=""):
    """frames: lists of planes (uint8 arrays of the colour space's shapes)."""
    with open(path, "wb") as f:
        head = f"YUV4MPEG2 W{width} H{height} {params}"
        if cs:
            head += f" C{cs}"
        f.write(head.encode() + b"\n")
        for planes in frames:
            f.write(b"FRAME" + (b" " + frame_params.encode() if frame_params else b"") + b"\n")
            for p in planes:
                f.write(np.ascontiguousarray(p, np.uint8).tobytes())


def read_y4m(path):
    """(header parameters as a dict of letter -> value text, frames as lists of planes)."""
    data = open(path, "rb").read()
    nl = data.index(b"\n")
    toks = data[:nl].decode().split(" ")
    assert toks[0] == "YUV4MPEG2", toks[0]
    params = {t[0]: t[1:] for t in toks[1:]}
    width, height = int(params["W"]), int(params["H"])
    shapes = plane_shapes(width, height, params.get("C", "420jpeg"))
    pos, frames = nl + 1, []
    while pos < len(data):
        end = data.index(b"\n", pos)
        assert data[pos:end].split(b" ")[0] == b"FRAME", data[pos:end]
        pos = end + 1
        planes = []
        for (h, wd) in shapes:
            n = h * wd
            assert pos + n <= len(data), "truncated"
            planes.append(np.frombuffer(data[pos:pos + n], np.uint8).reshape(h, wd))
            pos += n
        frames.append(planes)
    return params, frames


rng = np.random.default_rng(2026)


def random_frames(width, height, cs, n):
    return [[rng.integers(0, 256, s, dtype=np.uint8) for s in plane_shapes(width, height, cs)] for _ in range(n)]


def blur(p):
    return cv2.blur(p, (3, 3), borderType=cv2.BORDER_REFLECT_101)


# the device: a GPU the backend reports absent is a skip, nothing else
write_y4m(w("probe.y4m"), 8, 6, random_frames(8, 6, "420jpeg", 1))
rc, _, err = pxl("run", example("copy.pxl"), "--in", w("probe.y4m"), "--out", w("probe-out.y4m"))
if rc and DEVICE in ("cuda", "opencl") and "is not available" in err:
    print(f"skipped: no {'CUDA' if DEVICE == 'cuda' else 'OpenCL'} device ({err.strip()})")
    sys.exit(77)

# ---- y4m 4:2:0, blur3 on every plane ----
src = random_frames(37, 23, "420mpeg2", 4)
write_y4m(w("a.y4m"), 37, 23, src, "420mpeg2", "F30000:1001 It A1:1 XYSCSS=420MPEG2", frame_params="Ixyz")
rc, out, err = pxl("run", example("blur3.pxl"), "--in", w("a.y4m"), "--out", w("a-blur.y4m"), "--border",
                   "in=mirror101")
ok("blur3 on a 4:2:0 stream: exit 0, quiet", rc == 0 and err == "" and out == "", f"rc={rc} err={err!r}")
if rc == 0:
    params, frames = read_y4m(w("a-blur.y4m"))
    ok("header parameters kept", params == {"W": "37", "H": "23", "F": "30000:1001", "I": "t", "A": "1:1",
                                            "X": "YSCSS=420MPEG2", "C": "420mpeg2"}, str(params))
    ok("4 frames of 3 planes", len(frames) == 4 and all(len(f) == 3 for f in frames))
    same = all(np.array_equal(g, blur(s)) for fg, fs in zip(frames, src) for g, s in zip(fg, fs))
    ok("every plane of every frame equals cv2.blur (REFLECT_101)", same)

# ---- runs in flight: the same frames and values whatever their number ----
src = random_frames(53, 31, "420jpeg", 9)
write_y4m(w("fl.y4m"), 53, 31, src)
outs = {}
for n in ("1", "2", "3", "0"):
    rc, _, err = pxl("run", example("blur3.pxl"), "--in", w("fl.y4m"), "--out", w(f"fl-{n}.y4m"), "--border",
                     "in=mirror101", "--in-flight", n)
    outs[n] = open(w(f"fl-{n}.y4m"), "rb").read() if rc == 0 else None
    if rc:
        ok(f"--in-flight {n}: exit 0", False, err)
frames = read_y4m(w("fl-0.y4m"))[1] if outs["0"] else []
ok("--in-flight 1, 2, 3 and 0: the same stream, every plane equal to cv2.blur",
   outs["0"] is not None and all(outs[n] == outs["0"] for n in outs) and len(frames) == 9 and
   all(np.array_equal(g, blur(s)) for fg, fs in zip(frames, src) for g, s in zip(fg, fs)))
rc3, out3, _ = pxl("run", example("sum.pxl"), "--in", w("fl.y4m"), "--in-flight", "3")
rc1, out1, _ = pxl("run", example("sum.pxl"), "--in", w("fl.y4m"), "--in-flight", "1")
ok("a reduction per frame in flight: the lines of one at a time, in order",
   rc3 == 0 and rc1 == 0 and out3 == out1 and out3.count("\n") == 27, out3[:200])
rc, _, err = pxl("run", example("copy.pxl"), "--in", w("fl.y4m"), "--out", w("fl-x.y4m"), "--in-flight", "17")
ok("--in-flight 17: exit 2", rc == 2 and "--in-flight" in err, err)
cv2.imwrite(w("single.png"), src[0][0])
rc, _, err = pxl("run", example("copy.pxl"), "--in", w("single.png"), "--out", w("single-out.png"), "--in-flight", "2")
ok("--in-flight on a single image: exit 2, says it is for streams", rc == 2 and "stream of frames" in err, err)
data = open(w("fl.y4m"), "rb").read()
open(w("fltrunc.y4m"), "wb").write(data[:-50])
rc, _, err = pxl("run", example("copy.pxl"), "--in", w("fltrunc.y4m"), "--out", w("fltrunc-out.y4m"), "--in-flight",
                 "3")
ok("in flight, a truncated last frame: exit 3 naming it, no output", rc == 3 and "frame 9: truncated" in err and
   not os.path.exists(w("fltrunc-out.y4m")), err)

# ---- other colour spaces, copied ----
for cs in ("422", "444", "mono"):
    src = random_frames(20, 9, cs, 3)
    write_y4m(w(f"c{cs}.y4m"), 20, 9, src, cs, "F24:1 Ip A0:0")
    rc, _, err = pxl("run", example("copy.pxl"), "--in", w(f"c{cs}.y4m"), "--out", w(f"c{cs}-out.y4m"))
    good = rc == 0
    if good:
        params, frames = read_y4m(w(f"c{cs}-out.y4m"))
        good = params.get("C") == cs and params.get("F") == "24:1" and len(frames) == 3 and all(
            np.array_equal(g, s) for fg, fs in zip(frames, src) for g, s in zip(fg, fs))
    ok(f"C{cs}: copy gives the same frames and header", good, err)

# ---- --planes y: a mono stream of the blurred Y plane ----
rc, _, err = pxl("run", example("blur3.pxl"), "--in", w("a.y4m"), "--out", w("a-y.y4m"), "--planes", "y",
                 "--border", "in=mirror101")
good = rc == 0
if good:
    params, frames = read_y4m(w("a-y.y4m"))
    src = read_y4m(w("a.y4m"))[1]
    good = params.get("C") == "mono" and len(frames) == 4 and all(
        len(f) == 1 and np.array_equal(f[0], blur(s[0])) for f, s in zip(frames, src))
ok("--planes y writes the blurred Y planes as a mono stream", good, err)

# ---- pipes: "-" is standard input and output ----
p = subprocess.run([PXL, "run", example("blur3.pxl"), "--in", "-", "--out", "-", "--border", "in=mirror101", "--device",
                    DEVICE], input=open(w("a.y4m"), "rb").read(), capture_output=True)
ok("--in - --out -: the same stream as through files", p.returncode == 0 and
   p.stdout == open(w("a-blur.y4m"), "rb").read(), p.stderr.decode())
p = subprocess.run([PXL, "run", example("copy.pxl"), "--in", "-", "--out", "-", "--device", DEVICE],
                   input=b"GIF89a not a stream", capture_output=True)
ok("not a y4m on standard input: exit 3", p.returncode == 3 and b"standard input" in p.stderr and not p.stdout,
   p.stderr.decode())

# ---- a reduction per frame ----
rc, out, err = pxl("run", example("sum.pxl"), "--in", w("a.y4m"))
src = read_y4m(w("a.y4m"))[1]
want = "".join(f"frame {k + 1} {n}: sum = {int(p.astype(np.uint64).sum())}\n" for k, f in enumerate(src)
               for n, p in zip(("Y", "Cb", "Cr"), f))
ok("sum.pxl prints each frame's and plane's sum", rc == 0 and out == want, f"rc={rc} out={out!r} err={err!r}")

# ---- numbered files ----
seq = {}
for k in range(1, 6):
    seq[k] = rng.integers(0, 256, (10 + k, 13 + 2 * k), dtype=np.uint8)
    cv2.imwrite(w(f"f_{k:03d}.pgm"), seq[k])
rc, _, err = pxl("run", example("blur3.pxl"), "--in", w("f_%03d.pgm"), "--out", w("o_%03d.png"), "--border",
                 "in=mirror101")
good = rc == 0 and not os.path.exists(w("o_000.png")) and not os.path.exists(w("o_006.png"))
for k in range(1, 6):
    got = cv2.imread(w(f"o_{k:03d}.png"), cv2.IMREAD_UNCHANGED)
    good = good and got is not None and np.array_equal(got, blur(seq[k]))
ok("f_%03d.pgm -> o_%03d.png: frames 1..5, each equals cv2.blur", good, err)
rgb = [rng.integers(0, 256, (9, 11, 3), dtype=np.uint8) for _ in range(3)]
for k, im in enumerate(rgb):
    cv2.imwrite(w(f"rgb_{k}.png"), im)
rc, _, err = pxl("run", example("blur3.pxl"), "--in", w("rgb_%d.png"), "--out", w("rgbo_%d.png"), "--border",
                 "in=mirror101")
good = rc == 0 and all(np.array_equal(cv2.imread(w(f"rgbo_{k}.png"), cv2.IMREAD_UNCHANGED), blur(im))
                       for k, im in enumerate(rgb))
ok("an RGB sequence runs per channel (cv2.blur on colour)", good, err)

# ---- errors ----
data = open(w("a.y4m"), "rb").read()
open(w("trunc.y4m"), "wb").write(data[:-100])
open(w("exists.y4m"), "wb").write(b"keep me")
rc, _, err = pxl("run", example("copy.pxl"), "--in", w("trunc.y4m"), "--out", w("exists.y4m"))
ok("a truncated frame: exit 3 naming frame 4", rc == 3 and "frame 4: truncated" in err, f"rc={rc} err={err!r}")
ok("... the existing output untouched, no temporary left",
   open(w("exists.y4m"), "rb").read() == b"keep me" and not [f for f in os.listdir(WORK) if ".tmp" in f])
rc, _, err = pxl("run", example("copy.pxl"), "--in", w("trunc.y4m"), "--out", w("never.y4m"))
ok("... no output file appears", rc == 3 and not os.path.exists(w("never.y4m")))
write_y4m(w("p10.y4m"), 8, 6, [], "420p10")
rc, _, err = pxl("run", example("copy.pxl"), "--in", w("p10.y4m"), "--out", w("p10-out.y4m"))
ok("a 10-bit stream is refused by name", rc == 3 and "C420p10 is not supported" in err, err)
open(w("now.y4m"), "wb").write(b"YUV4MPEG2 H6 F25:1\nFRAME\n")
rc, _, err = pxl("run", example("copy.pxl"), "--in", w("now.y4m"), "--out", w("now-out.y4m"))
ok("a header without W", rc == 3 and "no W (width)" in err, err)
open(w("garbage.y4m"), "wb").write(data[:data.index(b"FRAME", 200)] + b"FRAMX\n" + data[data.index(b"FRAME", 200) + 6:])
rc, _, err = pxl("run", example("copy.pxl"), "--in", w("garbage.y4m"), "--out", w("garbage-out.y4m"))
ok("garbage instead of a FRAME line names the frame", rc == 3 and "frame 2: expected a FRAME header" in err, err)
rc, _, err = pxl("run", example("sobel3.pxl"), "--in", w("a.y4m"), "--out", w("sobel.y4m"))
ok("an i16 result to y4m: exit 2 before the run", rc == 2 and "YUV4MPEG2 stores u8" in err and
   not os.path.exists(w("sobel.y4m")), err)
rc, _, err = pxl("run", example("copy.pxl"), "--in", w("a.y4m"), "--out", w("planes_%d.png"))
ok("three planes to numbered files: exit 2, names --planes y", rc == 2 and "--planes y" in err, err)
before = {k: open(w(f"f_{k:03d}.pgm"), "rb").read() for k in range(1, 6)}
rc, _, err = pxl("run", example("copy.pxl"), "--in", w("f_%03d.pgm"), "--out", w("f_%03d.pgm"))
ok("output pattern = input pattern: refused", rc == 2 and "refusing" in err, err)
rc, _, err = pxl("run", example("copy.pxl"), "--in", w("f_%03d.pgm"), "--out", w("f_00%d.pgm"))
ok("a different pattern naming the input files: refused", rc != 0 and "refusing to overwrite an input" in err, err)
ok("... the input frames untouched", all(open(w(f"f_{k:03d}.pgm"), "rb").read() == v for k, v in before.items()))
rc, _, err = pxl("run", example("copy.pxl"), "--in", w("none_%04d.png"), "--out", w("none-out_%d.png"))
ok("a pattern with no file: exit 3", rc == 3 and "no frame file" in err, err)
rc, _, err = pxl("run", example("hist256.pxl"), "--in", w("a.y4m"))
ok("a histogram over a stream: exit 2, says why", rc == 2 and "is a histogram" in err, err)
rc, _, err = pxl("run", example("copy.pxl"), "--in", w("f_001.pgm"), "--out", w("x_%d.png"))
ok("numbered --out from a single image: exit 2", rc == 2 and "stream of frames" in err, err)

# ---- the progress line on a terminal ----
def on_terminal(*args):
    """Runs pxl with its standard error on a pseudo-terminal: (exit status, what it showed)."""
    master, slave = pty.openpty()
    p = subprocess.run([PXL, *args, "--device", DEVICE], stdout=subprocess.DEVNULL, stderr=slave)
    os.close(slave)
    shown = b""
    while select.select([master], [], [], 0.5)[0]:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        shown += chunk
    os.close(master)
    return p.returncode, shown


rc, shown = on_terminal("run", example("copy.pxl"), "--in", w("c444.y4m"), "--out", w("tty.y4m"))
ok("on a terminal: a progress line with frames of the count and fps", rc == 0 and b"frame 3/3" in shown and
   b"fps" in shown, repr(shown))
rc, shown = on_terminal("run", example("copy.pxl"), "--in", w("a.y4m"), "--out", w("tty.y4m"))
ok("... the count of a stream whose frame headers have parameters (known after the first)",
   rc == 0 and b"frame 4/4" in shown, repr(shown))

# ---- an outside reader: OpenCV's video input (FFmpeg), where it has one ----
cap = cv2.VideoCapture(w("a-blur.y4m"))
if cap.isOpened():
    frames = []
    while True:
        good, im = cap.read()
        if not good:
            break
        frames.append(im)
    ok("OpenCV's video reader reads the written stream: 4 frames of 37x23",
       len(frames) == 4 and frames[0].shape[:2] == (23, 37), str([f.shape for f in frames]))
else:
    print("note: this OpenCV reads no y4m (no FFmpeg backend); the stream is checked by the reader above")

# ---- bounded memory ----
# (not under the sanitizers, PXL_TEST_QUICK: their shadow memory is not the stream's)
if DEVICE == "cpu" and not os.environ.get("PXL_TEST_QUICK"):
    big = w("big.y4m")
    frame = [rng.integers(0, 256, s, dtype=np.uint8) for s in plane_shapes(640, 480, "420jpeg")]
    write_y4m(big, 640, 480, [frame] * 150)
    # the peak RSS of this run alone (a fresh parent: the children of this process include
    # the C compilers of earlier runs); copy.pxl is compiled and cached by now
    probe = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:], capture_output=True); "
             "print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    p = subprocess.run([sys.executable, "-c", probe, PXL, "run", example("copy.pxl"), "--in", big, "--out",
                        w("big-out.y4m"), "--device", DEVICE], capture_output=True, text=True)
    rc, peak = (int(t) for t in p.stdout.split())  # KiB
    err = p.stderr
    size = os.path.getsize(big)
    ok(f"150 frames ({size >> 20} MiB) in {peak >> 10} MiB of peak memory", rc == 0 and peak * 1024 < size // 2 and
       open(big, "rb").read() == open(w("big-out.y4m"), "rb").read(), f"rc={rc} err={err!r}")
    os.remove(big)
    os.remove(w("big-out.y4m"))

print(f"video_test on {DEVICE}: {passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
