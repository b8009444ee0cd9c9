"""`import pxl` (python/pxlmodule.c) against the command's output and NumPy.

Run by ctest as `python3 -m pytest tests/python` with PYTHONPATH naming the built module
and PXL_CLI the built command. Every result the module returns is compared with what
`pxl run` writes for the same .npy inputs (images exactly; reductions and histograms as
the command prints them), or with NumPy where the test can compute it; then the
arguments that must be refused (dtypes, shapes, names, values), views and strides
(given without a copy or copied, the same result), the exceptions' attributes, reference
counts over many calls, and threads running at once.
"""
import os
import subprocess
import sys
import tempfile
import threading

import numpy as np
import pytest

import pxl

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EX = os.path.join(ROOT, "examples")
CLI = os.environ.get("PXL_CLI", os.path.join(ROOT, "build", "pxl"))
DEVICES = ["ref", "cpu"]
rng = np.random.default_rng(20261208)


def cli_run(file, entry, inputs, params=(), outs=1):
    """`pxl run` on .npy files of the inputs; the output arrays, or the printed text."""
    with tempfile.TemporaryDirectory() as d:
        args = [CLI, "run", os.path.join(EX, file), entry, "--device", "cpu"]
        for k, a in enumerate(inputs):
            p = os.path.join(d, "in%d.npy" % k)
            np.save(p, a)
            args += ["--in", p]
        for name, v in params:
            args += ["--param", "%s=%s" % (name, v)]
        paths = [os.path.join(d, "out%d.npy" % k) for k in range(outs)]
        for p in paths:
            args += ["--out", p]
        r = subprocess.run(args if outs else args[:len(args)], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        return [np.load(p) for p in paths] if outs else r.stdout


@pytest.mark.parametrize("device", DEVICES)
def test_kernel_equals_cli(device):
    prog = pxl.compile(os.path.join(EX, "blur3.pxl"))
    a = rng.integers(0, 256, (37, 53), dtype=np.uint8)
    want, = cli_run("blur3.pxl", "blur3", [a])
    got = prog.blur3(a, device=device)
    assert got.dtype == np.uint8 and got.shape == a.shape
    assert np.array_equal(got, want)


@pytest.mark.parametrize("device", DEVICES)
def test_pipeline_with_scalar(device):
    prog = pxl.compile(os.path.join(EX, "edges.pxl"))
    a = rng.integers(0, 256, (40, 61), dtype=np.uint8)
    want, = cli_run("edges.pxl", "edges", [a], [("t", 40)])
    assert np.array_equal(prog.edges(a, t=40, device=device), want)
    assert np.array_equal(prog.run("edges", a, t=40, device=device), want)


def test_several_outputs():
    prog = pxl.compile(os.path.join(EX, "sobel_xy.pxl"))
    a = rng.integers(0, 256, (30, 30), dtype=np.uint8)
    gx, gy = prog.sobel_xy(a, device="cpu")
    wx, wy = cli_run("sobel_xy.pxl", "sobel_xy", [a], outs=2)
    assert gx.dtype == np.int16 and np.array_equal(gx, wx) and np.array_equal(gy, wy)


def test_reduction_and_histogram():
    a = rng.integers(0, 256, (50, 70), dtype=np.uint8)
    s = pxl.compile(os.path.join(EX, "sum.pxl")).sum(a, device="cpu")
    assert isinstance(s, int) and s == int(a.sum(dtype=np.uint64))
    h = pxl.compile(os.path.join(EX, "hist256.pxl")).hist256(a, device="cpu")
    assert h.dtype == np.int64 and h.shape == (256,)
    assert np.array_equal(h, np.bincount(a.ravel(), minlength=256))


@pytest.mark.parametrize("dtype", [np.uint16, np.float32])
def test_generic_entry_takes_the_instance_of_the_dtype(dtype):
    prog = pxl.compile(os.path.join(EX, "blur3.pxl"))
    a = (rng.random((20, 24)) * 1000).astype(dtype)
    want, = cli_run("blur3.pxl", "blur3", [a])
    got = prog.blur3(a, device="cpu")
    assert got.dtype == dtype and np.array_equal(got, want)


def test_colour_runs_per_channel():
    prog = pxl.compile(os.path.join(EX, "blur3.pxl"))
    a = rng.integers(0, 256, (21, 19, 3), dtype=np.uint8)
    got = prog.blur3(a, device="cpu")
    assert got.shape == a.shape
    for c in range(3):
        assert np.array_equal(got[:, :, c], prog.blur3(np.ascontiguousarray(a[:, :, c]), device="cpu"))


def test_views_and_strides_give_the_same_result():
    prog = pxl.compile(os.path.join(EX, "blur3.pxl"))
    big = rng.integers(0, 256, (60, 80), dtype=np.uint8)
    for view in (big[5:45, 7:70], big[::2, :], big[:, ::3], big[::-1, :], big.T, np.asfortranarray(big)):
        assert np.array_equal(prog.blur3(view, device="cpu"), prog.blur3(np.ascontiguousarray(view), device="cpu"))
    be = big.astype(">u2")  # another byte order: converted
    assert np.array_equal(prog.blur3(be, device="cpu"), prog.blur3(big.astype(np.uint16), device="cpu"))


def test_refusals():
    prog = pxl.compile(os.path.join(EX, "edges.pxl"))
    a = rng.integers(0, 256, (16, 16), dtype=np.uint8)
    with pytest.raises(TypeError):
        prog.edges(a.astype(np.int8), t=1)
    with pytest.raises(TypeError):
        prog.edges(a.astype(np.complex64), t=1)
    with pytest.raises(ValueError):
        prog.edges(np.zeros((4, 4, 2), np.uint8), t=1)
    with pytest.raises(ValueError):
        prog.edges(np.zeros((0, 4), np.uint8), t=1)
    with pytest.raises(ValueError):
        prog.edges(np.zeros(16, np.uint8), t=1)
    with pytest.raises(ValueError):
        prog.edges(a)  # t missing
    with pytest.raises(ValueError):
        prog.edges(a, t=1, nosuch=3)
    with pytest.raises(ValueError):
        prog.edges(a, a, t=1)  # an image too many
    with pytest.raises(AttributeError):
        prog.nosuch
    with pytest.raises(AttributeError):
        prog.run("nosuch", a)
    with pytest.raises(ValueError):
        prog.edges(a, t=1, threads=-1)
    with pytest.raises(ValueError):
        prog.edges(a, t=1, device="bogus")
    with pytest.raises(FileNotFoundError):
        pxl.compile("no/such/file.pxl")


def test_gpu_device_runs_or_is_a_device_error():
    """On a machine without CUDA the run raises pxl.DeviceError; with one it equals the CPU."""
    prog = pxl.compile(os.path.join(EX, "blur3.pxl"))
    a = rng.integers(0, 256, (32, 32), dtype=np.uint8)
    try:
        got = prog.blur3(a, device="cuda")
    except pxl.DeviceError:
        return
    assert np.array_equal(got, prog.blur3(a, device="cpu"))


def test_source_error_names_the_place():
    with pytest.raises(pxl.SourceError) as e:
        pxl.compile("kernel u8 k(image u8 in) {\n  return in(0, 0) + ;\n}\n", name="mine.pxl")
    assert e.value.file == "mine.pxl" and e.value.line == 2 and e.value.column > 1
    assert "mine.pxl:2:" in str(e.value)
    assert isinstance(e.value, pxl.Error)


def test_introspection():
    prog = pxl.compile(os.path.join(EX, "edges.pxl"))
    names = [e.name for e in prog.entries]
    assert "edges" in names and "threshold" in names
    t = prog.threshold
    assert t.signature.startswith("kernel u8 threshold(")
    assert [(p["name"], p["kind"], p["type"]) for p in t.params] == [("in", "image", "u8"), ("t", "scalar", "u8")]


def test_no_reference_leaks():
    prog = pxl.compile(os.path.join(EX, "blur3.pxl"))
    a = rng.integers(0, 256, (8, 8), dtype=np.uint8)
    prog.blur3(a, device="ref")
    before = sys.getrefcount(a), sys.getrefcount(prog)
    for _ in range(2000):
        prog.blur3(a, device="ref")
        prog.entries
        try:
            prog.blur3(a.astype(np.int8))
        except TypeError:
            pass
    assert (sys.getrefcount(a), sys.getrefcount(prog)) == before


def test_threads_run_at_once():
    a = rng.integers(0, 256, (64, 64), dtype=np.uint8)
    want = pxl.compile(os.path.join(EX, "blur3.pxl")).blur3(a, device="cpu")
    results, errors = [], []

    def work():
        try:
            prog = pxl.compile(os.path.join(EX, "blur3.pxl"))
            for _ in range(20):
                results.append(np.array_equal(prog.blur3(a, device="cpu"), want))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(results) == 80 and all(results)
