#!/usr/bin/python3
"""cli_sparse_test.py PXL WORKDIR - `pxl sparse` end to end, against SciPy and NumPy.

Every expected value is computed here, from SciPy's reading of the files the test writes
(scipy.io.mmwrite / mmread, np.save), never from pxl's own output:

1. products: `pxl sparse spmv A.mtx --x x.npy --out y.npy` on random matrices (1x1, 1xN,
   Nx1, no entries, banded with 9 diagonals, one dense row, 4x4 blocks, symmetric,
   integer and pattern files, duplicates written by hand) for every --format (csr coo ell
   sell dia bcsr auto), --type (f64 f32) and --device (cpu with 0, 1 and 2 threads, ref),
   x as float64, float32, int32, (N, 1) and (1, N): y must have the bits of SciPy's CSR
   product (A @ x after sum_duplicates and sort_indices; for f32 A and x rounded to
   float32 first, so SciPy computes in float32), shape (rows,) and the value type.
   A padding format (ell, sell, dia, bcsr) must be refused - exit 3, "padding" or "more
   than" in the message, no y - exactly where the entries it stores, counted here from
   docs/SPARSE.md's layouts (ELL: rows x the longest row; SELL-C-sigma: windows of 1024
   rows sorted by length, slices of 32 rows (all the rows where there are fewer) as
   wide as their longest; DIA: rows x the diagonals present; BCSR: 16 a 4 x 4 block
   present), exceed 16 times the entries (not only ELL of the dense row: DIA of
   scattered diagonals, as docs/SPARSE.md's rule says).
   Also x of the other .npy dtypes (big-endian, u1 u2 u4 i2, Fortran order) converted as
   NumPy's astype does, i1, f2, b1 and small i8 too; i8 and u8 past 2^53 converted so
   or refused with exit 3 (a note lists those refused); complex and string
   x refused; x with NaN and infinities: csr, coo and ref give SciPy's y, the padding
   formats SciPy's y or NaN.
2. info and the automatic choice: the shape line (rows, columns, entries after summing
   duplicates, the type), the entries each format stores (as counted above); `--format
   auto` measures ("choice: F: csr MS ms ...") and then answers from the cache
   ("F (cached)"), the product with --format auto runs in F; a damaged sparse-*.choice
   (garbage of the same length, truncated, emptied) is measured again, the run succeeds.
3. usage errors: exit 2, a message on stderr, nothing on stdout, no file written or
   changed.
4. read errors exit 3, run errors exit 4, leaving no --out file and a file already at
   --out byte for byte as it was (nor any temporary file beside it).
5. --time, --repeat, and the help texts.

Prints one line per group and 'N passed, M failed'; exits 1 on a failure. SciPy or
NumPy missing is a failure (python3-scipy, tools/deps.txt).
"""
import concurrent.futures
import hashlib
import os
import re
import shutil
import subprocess
import sys

try:
    import numpy as np
    import scipy.io
    import scipy.sparse
except ImportError as e:
    sys.exit(f"cli_sparse_test: {e} (install python3-numpy and python3-scipy, tools/deps.txt)")

if len(sys.argv) != 3:
    sys.exit("usage: cli_sparse_test.py PXL WORKDIR")
PXL = os.path.abspath(sys.argv[1])
WORK = os.path.abspath(sys.argv[2])
shutil.rmtree(WORK, ignore_errors=True)
os.makedirs(WORK)
# Products use the cache directory the test is given (ctest: under the build tree);
# the caching checks use fresh ones of their own.
CACHE = os.environ.get("PXL_CACHE_DIR") or os.path.join(WORK, "cache")
os.makedirs(CACHE, exist_ok=True)

rng = np.random.default_rng(20240917)
FORMATS = ["csr", "coo", "ell", "sell", "dia", "bcsr", "auto"]
PADDED = ["ell", "sell", "dia", "bcsr"]
DEVICES = [("cpu", None), ("cpu", "1"), ("cpu", "2"), ("ref", None)]
JOBS = 2

passed = 0
failed = 0


class Group:
    """Failures of one group, printed as one line (and the first few in full)."""

    def __init__(self, name):
        self.name, self.fails, self.checks = name, [], 0

    def check(self, ok, what):
        global passed, failed
        self.checks += 1
        if ok:
            passed += 1
        else:
            failed += 1
            self.fails.append(what)
        return ok

    def report(self):
        if not self.fails:
            print(f"{self.name}: ok ({self.checks} checks)")
            return
        print(f"{self.name}: {len(self.fails)} of {self.checks} checks FAILED")
        for f in self.fails[:25]:
            print("  FAIL:", f)
        if len(self.fails) > 25:
            print(f"  ... and {len(self.fails) - 25} more")


def run(args, cwd=WORK, cache=None, timeout=300):
    env = dict(os.environ)
    env["PXL_CACHE_DIR"] = cache or CACHE
    try:
        p = subprocess.run([PXL] + args, cwd=cwd, env=env, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return 124, "", "(timed out)"
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def show(args, rc, out, err):
    text = (err.strip() or out.strip()).replace("\n", " | ")
    return f"pxl {' '.join(args)} -> exit {rc}: {text[:300]}"


def snapshot(d):
    """Every file under d with its bytes' hash (links as their target)."""
    s = {}
    for root, dirs, files in os.walk(d):
        for f in files + [x for x in dirs if os.path.islink(os.path.join(root, x))]:
            p = os.path.join(root, f)
            rel = os.path.relpath(p, d)
            if os.path.islink(p):
                s[rel] = "link:" + os.readlink(p)
            else:
                with open(p, "rb") as fh:
                    s[rel] = hashlib.sha256(fh.read()).hexdigest()
    return s


def diff_snapshots(a, b):
    out = []
    for k in sorted(set(a) | set(b)):
        if k not in a:
            out.append(f"{k} appeared")
        elif k not in b:
            out.append(f"{k} disappeared")
        elif a[k] != b[k]:
            out.append(f"{k} changed")
    return ", ".join(out)


# ---- the matrices -------------------------------------------------------------------

def values(n):
    """Signed values over six decades: sums whose rounding depends on the order."""
    return rng.standard_normal(n) * 10.0 ** rng.uniform(-3, 3, n)


def rand(rows, cols, density):
    return scipy.sparse.random(rows, cols, density=density, format="coo", random_state=rng, data_rvs=values)


def banded(n, half):
    offs = list(range(-half, half + 1))
    return scipy.sparse.diags([values(n - abs(k)) for k in offs], offs, shape=(n, n), format="coo")


def dense_row(n, density, row):
    A = rand(n, n, density).tolil()
    A[row, :] = values(n)
    return A.tocoo()


def blocks(nb, bs, density):
    """A matrix of dense bs x bs blocks (nb x nb of them, density of blocks present)."""
    B = scipy.sparse.random(nb, nb, density=density, format="coo", random_state=rng)
    rows, cols = [], []
    for i, j in zip(B.row, B.col):
        for a in range(bs):
            for b in range(bs):
                rows.append(i * bs + a)
                cols.append(j * bs + b)
    n = nb * bs
    return scipy.sparse.coo_matrix((values(len(rows)), (rows, cols)), shape=(n, n))


def symmetric(n, density):
    B = rand(n, n, density)
    return (B + B.T).tocoo()


DUP_TEXT = """%%MatrixMarket matrix coordinate real general
% duplicates: (1,2) three times, (3,1) twice summing to zero, (4,5) twice
4 5 11
1 2 0.1
3 1 1.5
1 2 1e16
4 5 -2.5
2 2 3.0
1 2 -1e16
3 1 -1.5
4 5 0.3333333333333333
1 1 7.0
3 5 -0.25
4 1 1e-300
"""


def write_matrices():
    """(name, path): the files of the product checks."""
    mats = []

    def add(name, M, **kw):
        path = os.path.join(WORK, name + ".mtx")
        scipy.io.mmwrite(path, M, **kw)
        mats.append((name, path))

    add("one", scipy.sparse.coo_matrix(np.array([[values(1)[0]]])))
    add("row", rand(1, 300, 0.3))
    add("col", rand(400, 1, 0.3))
    add("empty", scipy.sparse.coo_matrix((5, 7)))
    add("empty64", scipy.sparse.coo_matrix((64, 48)))
    add("r300x200", rand(300, 200, 0.05))
    add("r37x41", rand(37, 41, 0.2))
    add("r2000x1500", rand(2000, 1500, 0.003))
    add("r500dense", rand(500, 480, 0.4))
    add("r3000x5", rand(3000, 5, 0.5))
    add("band9", banded(1500, 4))
    add("densrow", dense_row(800, 0.005, 17))
    add("blocks", blocks(60, 4, 0.05))
    add("sym", symmetric(400, 0.02), symmetry="symmetric")
    I = rng.integers(-1000, 1000, (50, 60)) * (rng.random((50, 60)) < 0.1)
    add("integer", scipy.sparse.coo_matrix(I), field="integer")
    B = rand(90, 90, 0.05)
    add("skew", (B - B.T).tocoo(), symmetry="skew-symmetric")
    add("norows", scipy.sparse.coo_matrix((0, 5)))
    add("nocols", scipy.sparse.coo_matrix((5, 0)))
    add("pattern", scipy.sparse.coo_matrix(rng.random((70, 40)) < 0.1), field="pattern")
    path = os.path.join(WORK, "dup.mtx")
    with open(path, "w") as f:
        f.write(DUP_TEXT)
    mats.append(("dup", path))
    return mats


def read_csr(path):
    """SciPy's reading of path as CSR (f64), duplicates summed, columns sorted."""
    A = scipy.io.mmread(path)
    A = scipy.sparse.csr_matrix(A)
    A.sum_duplicates()
    A.sort_indices()
    return A.astype(np.float64)


def read_dup(dtype):
    """dup.mtx as docs/SPARSE.md defines it: each entry rounded to dtype, duplicates
    summed in file order in dtype (SciPy's sum_duplicates sorts with an unstable sort,
    so the order of its sums is not the file's: summed here one by one)."""
    lines = [l for l in DUP_TEXT.splitlines() if l and not l.startswith("%")]
    rows, cols, _ = map(int, lines[0].split())
    acc = {}
    for l in lines[1:]:
        i, j, v = l.split()
        key = (int(i) - 1, int(j) - 1)
        x = dtype(float(v))
        acc[key] = dtype(acc[key] + x) if key in acc else dtype(dtype(0) + x)
    keys = sorted(acc)
    A = scipy.sparse.csr_matrix((np.array([acc[k] for k in keys], dtype=dtype),
                                 ([k[0] for k in keys], [k[1] for k in keys])), shape=(rows, cols))
    A.sort_indices()
    assert A.nnz == len(keys) and A.dtype == dtype
    return A


def matrices_of(name, path):
    """The f64 and f32 matrices pxl must multiply by: SciPy's reading, and that rounded
    to float32 (the hand-written duplicates summed in file order)."""
    if name == "dup":
        return read_dup(np.float64), read_dup(np.float32)
    A = read_csr(path)
    return A, A.astype(np.float32)


def stored(A):
    """The entries each padding format stores for CSR matrix A (docs/SPARSE.md)."""
    rows = A.shape[0]
    lens = np.diff(A.indptr)
    coo = A.tocoo()
    ell = rows * int(lens.max()) if rows else 0
    sell = 0
    c = min(32, max(rows, 1))  # a matrix of fewer than 32 rows is one slice of its rows
    for w in range(0, rows, 1024):
        ls = np.sort(lens[w:w + 1024])[::-1]
        for s in range(0, len(ls), c):
            sell += c * int(ls[s:s + c].max())
    dia = rows * len(set((coo.col.astype(np.int64) - coo.row).tolist()))
    bcsr = 16 * len(set(zip((coo.row // 4).tolist(), (coo.col // 4).tolist())))
    return {"csr": A.nnz, "coo": A.nnz, "ell": ell, "sell": sell, "dia": dia, "bcsr": bcsr}


def bits(a):
    a = np.ascontiguousarray(a)
    return a.view(np.uint64 if a.dtype == np.float64 else np.uint32)


# ---- 1. products --------------------------------------------------------------------

def x_variants(n):
    """(tag, array saved, float64 value, float32 value) of x of n elements."""
    x64 = rng.standard_normal(n) * 10.0 ** rng.uniform(-2, 2, n)
    x32 = (rng.standard_normal(n) * 100).astype(np.float32)
    xi = rng.integers(-2**31, 2**31 - 1, n, dtype=np.int64).astype(np.int32)
    xi[: n // 2] //= 1 << 20  # small ones too
    return [
        ("f64", x64, x64, x64.astype(np.float32)),
        ("f32", x32, x32.astype(np.float64), x32),
        ("i32", xi, xi.astype(np.float64), xi.astype(np.float32)),
        ("col", x64.reshape(n, 1), x64, x64.astype(np.float32)),
        ("row", x64.reshape(1, n), x64, x64.astype(np.float32)),
    ]


def product_jobs(mats):
    jobs = []
    for name, path in mats:
        A, A32 = matrices_of(name, path)
        st = stored(A)
        rows, cols = A.shape
        for tag, xs, x64, x32 in x_variants(cols):
            xpath = os.path.join(WORK, f"{name}.x{tag}.npy")
            np.save(xpath, xs)
            assert x64.dtype == np.float64 and x32.dtype == np.float32
            y64 = A @ x64
            y32 = A32 @ x32
            assert y64.dtype == np.float64 and y32.dtype == np.float32 and y64.shape == (rows,)
            # every format, type and device for x of float64; the other x on cpu
            devs = DEVICES if tag == "f64" else [("cpu", None)]
            for fmt in FORMATS:
                expect = "refused" if fmt in PADDED and st[fmt] > 16 * A.nnz else "exact"
                for typ, want in (("f64", y64), ("f32", y32)):
                    for dev, thr in devs:
                        out = os.path.join(WORK, "y", f"{name}.{tag}.{fmt}.{typ}.{dev}{thr or ''}.npy")
                        args = ["sparse", "spmv", path, "--x", xpath, "--out", out, "--format", fmt,
                                "--type", typ, "--device", dev]
                        if thr:
                            args += ["--threads", thr]
                        jobs.append((args, out, want, expect, rows))
    return jobs


def dtype_jobs(mats):
    """x of the other dtypes and layouts of a .npy file, on two matrices: those pxl reads
    (both byte orders, Fortran order) converted exactly as NumPy's astype does; those
    it may not read yet (docs/SPARSE.md says any numeric dtype) converted exactly or
    refused cleanly; complex, object and string x refused (exit 3)."""
    jobs = []
    for name in ("r300x200", "r37x41"):
        path = dict(mats)[name]
        A, A32 = matrices_of(name, path)
        rows, cols = A.shape
        base = rng.standard_normal(cols) * 1000
        big = rng.integers(-2**62, 2**62, cols)
        cases = [
            (">f8", base.astype(">f8"), "exact"), (">f4", base.astype(">f4"), "exact"),
            ("u1", rng.integers(0, 256, cols).astype(np.uint8), "exact"),
            ("u2", rng.integers(0, 65536, cols).astype(np.uint16), "exact"),
            (">u2", rng.integers(0, 65536, cols).astype(">u2"), "exact"),
            ("u4", rng.integers(0, 2**32, cols).astype(np.uint32), "exact"),
            ("i2", rng.integers(-2**15, 2**15, cols).astype(np.int16), "exact"),
            (">i4", rng.integers(-2**31, 2**31, cols).astype(">i4"), "exact"),
            ("fortran", np.asfortranarray(base.reshape(cols, 1)), "exact"),
            ("fortran-row", np.asfortranarray(base.reshape(1, cols)), "exact"),
            ("i1", rng.integers(-128, 128, cols).astype(np.int8), "exact"),
            # 64-bit integers past 2^53: pxl rounds to double, then to f32 (twice)
            ("i8", big, "maybe"), ("i8-small", rng.integers(-1000, 1000, cols), "exact"),
            ("u8", big.astype(np.uint64) * np.uint64(2) + np.uint64(1), "maybe"),
            ("f2", base.astype(np.float16), "exact"), ("b1", rng.random(cols) < 0.5, "exact"),
            ("c16", base.astype(np.complex128), "unsupported"),
            ("str", np.array(["1.5"] * cols), "unsupported"),
        ]
        for tag, xs, expect in cases:
            xpath = os.path.join(WORK, f"{name}.x{tag}.npy")
            np.save(xpath, xs)
            if expect == "unsupported":
                y64 = y32 = None
            else:
                y64 = A @ np.ravel(xs).astype(np.float64)
                y32 = A32 @ np.ravel(xs).astype(np.float32)
            for fmt in ("csr", "ell", "auto"):
                for typ, want in (("f64", y64), ("f32", y32)):
                    out = os.path.join(WORK, "y", f"{name}.{tag}.{fmt}.{typ}.npy")
                    args = ["sparse", "spmv", path, "--x", xpath, "--out", out, "--format", fmt, "--type", typ]
                    jobs.append((args, out, want, expect, rows))
    return jobs


def nonfinite_jobs(mats):
    """x with NaN and infinities: csr and coo on the CPU and every format on ref (which
    runs the definition on CSR) give SciPy's y (NaN for NaN); the padding formats on the
    CPU SciPy's y or NaN (0 * inf next to an infinity, docs/SPARSE.md)."""
    jobs = []
    for name in ("r300x200", "band9", "sym"):
        path = dict(mats)[name]
        A, A32 = matrices_of(name, path)
        st = stored(A)
        rows, cols = A.shape
        x = rng.standard_normal(cols)
        x[rng.choice(cols, 6, replace=False)] = [np.nan, np.inf, -np.inf, np.inf, -np.nan, 1e308]
        xpath = os.path.join(WORK, f"{name}.xnonfinite.npy")
        np.save(xpath, x)
        with np.errstate(all="ignore"):
            y64, y32 = A @ x, A32 @ x.astype(np.float32)
        for fmt in FORMATS[:-1]:
            for dev, thr in DEVICES:
                if fmt in PADDED and st[fmt] > 16 * A.nnz:
                    continue
                expect = "nan_or_equal" if dev == "cpu" and fmt in PADDED else "nan_exact"
                for typ, want in (("f64", y64), ("f32", y32)):
                    out = os.path.join(WORK, "y", f"{name}.nonfinite.{fmt}.{typ}.{dev}{thr or ''}.npy")
                    args = ["sparse", "spmv", path, "--x", xpath, "--out", out, "--format", fmt, "--type", typ,
                            "--device", dev] + (["--threads", thr] if thr else [])
                    jobs.append((args, out, want, expect, rows))
    return jobs


REFUSED_DTYPES = set()


def product_one(job):
    args, out, want, expect, rows = job
    rc, so, se = run(args)
    cmd = "pxl " + " ".join(args)
    if expect == "refused":
        if rc != 3 or not ("padding" in se or "more than" in se):
            return f"expected a refusal of the padding (exit 3): {show(args, rc, so, se)}"
        if os.path.exists(out):
            return f"refused but wrote {out}: {cmd}"
        return None
    if expect == "unsupported" or (expect == "maybe" and rc == 3 and "unsupported" in se):
        if rc != 3 or not se.startswith("pxl: error: "):
            return f"expected exit 3 for an x that cannot be converted: {show(args, rc, so, se)}"
        if os.path.exists(out):
            return f"refused but wrote {out}: {cmd}"
        if expect == "maybe":
            REFUSED_DTYPES.add(re.sub(r"^.*\.x(.*)\.npy$", r"\1", args[args.index("--x") + 1]))
        return None
    if rc != 0:
        return f"expected success: {show(args, rc, so, se)}"
    try:
        y = np.load(out)
    except Exception as e:  # noqa: BLE001
        return f"{out}: cannot read: {e} ({cmd})"
    if y.dtype != want.dtype or y.shape != (rows,):
        return f"{out}: {y.dtype} {y.shape}, expected {want.dtype} ({rows},) ({cmd})"
    if expect in ("exact", "maybe"):
        bad = bits(y) != bits(want)
    elif expect == "nan_exact":  # NaN for NaN (of any sign), the bits elsewhere
        bad = np.where(np.isnan(want), ~np.isnan(y), bits(y) != bits(want))
    else:  # nan_or_equal
        bad = ~np.isnan(y) & np.where(np.isnan(want), True, bits(y) != bits(want))
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        return (f"{out}: y[{k}] = {float(y[k])!r}, SciPy {float(want[k])!r} "
                f"({int(bad.sum())} of {rows} differ; {cmd})")
    os.remove(out)
    return None


def group_products(mats):
    g = Group("1 products")
    os.makedirs(os.path.join(WORK, "y"), exist_ok=True)
    jobs = product_jobs(mats) + dtype_jobs(mats) + nonfinite_jobs(mats)
    if os.environ.get("PXL_TEST_QUICK") == "1":
        # the sanitizer suite (tools/test.sh): every 6th product, so that ASan's start
        # per process does not make this the suite's longest test (246 s for all of them)
        jobs = jobs[::6]
    with concurrent.futures.ThreadPoolExecutor(JOBS) as ex:
        for job, res in zip(jobs, ex.map(product_one, jobs)):
            g.check(res is None, res)
    # the refusals the brief expects at least: ELL of the dense row, nothing of a band
    A = read_csr(dict(mats)["densrow"])
    g.check(stored(A)["ell"] > 16 * A.nnz, "the dense-row matrix does not make ELL pad too much")
    A = read_csr(dict(mats)["band9"])
    g.check(all(v <= 16 * A.nnz for v in stored(A).values()), "the banded matrix pads too much")
    g.report()
    if REFUSED_DTYPES:
        print("  note: x refused as an unsupported .npy dtype (docs/SPARSE.md: any numeric dtype): "
              + " ".join(sorted(REFUSED_DTYPES)))


# ---- 2. info and the automatic choice -----------------------------------------------

INFO_FMT = re.compile(r"^  (\w+)\s+(?:(\d+) stored \(([\d.]+)x\)|too much padding \((.*)\))$")
CHOICE_MEASURED = re.compile(r"^choice: (\w+): (.+)$")
CHOICE_CACHED = re.compile(r"^choice: (\w+) \(cached\)$")


def parse_info(out):
    lines = out.splitlines()
    fmts = {}
    for l in lines[1:]:
        m = INFO_FMT.match(l)
        if m:
            fmts[m.group(1)] = int(m.group(2)) if m.group(2) is not None else "refused"
    choice = [l for l in lines if l.startswith("choice: ")]
    return (lines[0] if lines else ""), fmts, choice


def check_measured(g, what, choice):
    """choice: F: csr MS ms coo MS ms ..., F one of those measured."""
    if not g.check(len(choice) == 1, f"{what}: {len(choice)} 'choice: ' lines: {choice}"):
        return None
    m = CHOICE_MEASURED.match(choice[0])
    if not g.check(m is not None and "(cached)" not in choice[0], f"{what}: not measured: {choice[0]!r}"):
        return None
    items = re.findall(r"(\w+):? ([0-9.]+(?:e[-+]?\d+)?) ms", m.group(2))
    measured = [f for f, _ in items]
    g.check(len(items) >= 1 and all(f in FORMATS[:-1] for f in measured),
            f"{what}: the measured formats are not listed with ms: {choice[0]!r}")
    g.check(m.group(1) in measured, f"{what}: chose {m.group(1)}, not one of those measured: {choice[0]!r}")
    return m.group(1)


def check_cached(g, what, choice, want):
    if not g.check(len(choice) == 1, f"{what}: {len(choice)} 'choice: ' lines: {choice}"):
        return
    m = CHOICE_CACHED.match(choice[0])
    g.check(m is not None and m.group(1) == want, f"{what}: expected 'choice: {want} (cached)', got {choice[0]!r}")


def group_info(mats):
    g = Group("2 info and auto")
    d = os.path.join(WORK, "info")
    os.makedirs(d)
    # the shape line and the entries each format stores, for every matrix and type
    for name, path in mats:
        shutil.copy(path, os.path.join(d, name + ".mtx"))
        A = read_csr(path)
        st = stored(A)
        for typ in ("f64", "f32"):
            args = ["sparse", "info", name + ".mtx", "--type", typ]
            rc, so, se = run(args, cwd=d)
            if not g.check(rc == 0, show(args, rc, so, se)):
                continue
            first, fmts, choice = parse_info(so)
            want = f"{name}.mtx: {A.shape[0]} x {A.shape[1]}, {A.nnz} entries, {typ}"
            g.check(first == want, f"pxl {' '.join(args)}: first line {first!r}, expected {want!r}")
            g.check(not choice, f"pxl {' '.join(args)}: a choice without --format auto: {choice}")
            for f in FORMATS[:-1]:
                exp = "refused" if st[f] > 16 * A.nnz else st[f]
                g.check(fmts.get(f) == exp, f"pxl {' '.join(args)}: {f} {fmts.get(f)!r}, expected {exp!r} "
                        f"({st[f]} stored for {A.nnz} entries)")
    # the duplicates file: summed, the zero sum kept
    A = read_csr(os.path.join(d, "dup.mtx"))
    g.check(A.nnz == 7 and A[2, 0] == 0.0, f"SciPy's reading of dup.mtx is not what the test expects: {A!r}")
    B = read_dup(np.float64)
    g.check(B.nnz == 7 and B[0, 1] == 0.0 and B[3, 4] == -2.5 + 0.3333333333333333 and
            (abs(A - B) > 1).nnz == 0, "the test's own sums of dup.mtx are not what it expects")

    # auto: measured, then cached; the product runs in the chosen format
    for name in ("band9", "r2000x1500", "densrow", "empty"):
        cache = os.path.join(WORK, "cache-" + name)
        os.makedirs(cache)
        args = ["sparse", "info", name + ".mtx", "--format", "auto"]
        rc, so, se = run(args, cwd=d, cache=cache)
        if not g.check(rc == 0, show(args, rc, so, se)):
            continue
        chosen = check_measured(g, f"{name} first auto", parse_info(so)[2])
        entries = [f for f in os.listdir(cache) if re.fullmatch(r"sparse-.+\.choice", f)]
        g.check(len(entries) == 1, f"{name}: the cache holds {sorted(os.listdir(cache))}, not one sparse-*.choice")
        first = snapshot(cache)
        rc, so, se = run(args, cwd=d, cache=cache)
        if g.check(rc == 0, show(args, rc, so, se)) and chosen:
            check_cached(g, f"{name} second auto", parse_info(so)[2], chosen)
        g.check(snapshot(cache) == first, f"{name}: the second run changed the cache: "
                f"{diff_snapshots(first, snapshot(cache))}")
        if not chosen or len(entries) != 1:
            continue
        # the product with auto runs in the chosen format, with SciPy's bits
        A = read_csr(os.path.join(d, name + ".mtx"))
        x = rng.standard_normal(A.shape[1])
        np.save(os.path.join(d, "xa.npy"), x)
        pargs = ["sparse", "spmv", name + ".mtx", "--x", "xa.npy", "--out", "ya.npy", "--format", "auto", "--time"]
        rc, so, se = run(pargs, cwd=d, cache=cache)
        if g.check(rc == 0, show(pargs, rc, so, se)):
            g.check(f"pxl: format: {chosen}" in se.splitlines(),
                    f"{name}: spmv --format auto ran in another format than the cached {chosen}: {se!r}")
            y = np.load(os.path.join(d, "ya.npy"))
            g.check(np.array_equal(bits(y), bits(A @ x)), f"{name}: spmv --format auto differs from SciPy")
        # damaged entries: measured again, and cached again after
        entry = os.path.join(cache, entries[0])
        size = os.path.getsize(entry)
        damages = [("garbage of the same length", bytes(rng.integers(0, 256, size, dtype=np.uint8))),
                   ("'x' of the same length", b"x" * size),
                   ("truncated to half", None), ("emptied", b"")]
        for what, data in damages:
            if data is None:
                with open(entry, "rb") as f:
                    data = f.read()[: size // 2]
            with open(entry, "wb") as f:
                f.write(data)
            rc, so, se = run(args, cwd=d, cache=cache)
            if not g.check(rc == 0, f"{name}, cache entry {what}: {show(args, rc, so, se)}"):
                continue
            again = check_measured(g, f"{name}, cache entry {what}", parse_info(so)[2])
            rc, so, se = run(args, cwd=d, cache=cache)
            if g.check(rc == 0, f"{name}, after the entry {what}: {show(args, rc, so, se)}") and again:
                check_cached(g, f"{name}, after the entry {what}", parse_info(so)[2], again)
            size = os.path.getsize(entry) if os.path.exists(entry) else size
        # a damaged entry under spmv: the product still right
        with open(entry, "wb") as f:
            f.write(b"\xff" * max(size, 1))
        rc, so, se = run(pargs, cwd=d, cache=cache)
        if g.check(rc == 0, f"{name}, damaged entry: {show(pargs, rc, so, se)}"):
            y = np.load(os.path.join(d, "ya.npy"))
            g.check(np.array_equal(bits(y), bits(A @ x)), f"{name}, damaged entry: spmv --format auto differs")
        os.remove(os.path.join(d, "ya.npy"))
    g.report()


# ---- 3. usage errors ----------------------------------------------------------------

def group_usage():
    g = Group("3 usage errors")
    d = os.path.join(WORK, "usage")
    os.makedirs(d)
    A = rand(30, 20, 0.2)
    scipy.io.mmwrite(os.path.join(d, "A.mtx"), A)
    np.save(os.path.join(d, "x.npy"), rng.standard_normal(20))
    os.symlink("A.mtx", os.path.join(d, "linkA.npy"))
    os.symlink("x.npy", os.path.join(d, "linkx.npy"))
    os.symlink(os.path.join(d, "x.npy"), os.path.join(d, "abslinkx.npy"))
    os.makedirs(os.path.join(d, "sub"))
    sp = ["sparse", "spmv", "A.mtx", "--x", "x.npy"]
    cases = [
        ("no verb", ["sparse"]),
        ("no verb, an option", ["sparse", "--format", "csr"]),
        ("unknown verb", ["sparse", "multiply", "A.mtx", "--x", "x.npy", "--out", "y.npy"]),
        ("missing A.mtx (spmv)", ["sparse", "spmv", "--x", "x.npy", "--out", "y.npy"]),
        ("missing A.mtx (info)", ["sparse", "info"]),
        ("two matrices", ["sparse", "info", "A.mtx", "A.mtx"]),
        ("spmv without --x", ["sparse", "spmv", "A.mtx", "--out", "y.npy"]),
        ("spmv without --out", sp),
        ("--out .txt", sp + ["--out", "y.txt"]),
        ("--out without extension", sp + ["--out", "y"]),
        ("--out .npy.bak", sp + ["--out", "y.npy.bak"]),
        ("--out empty", sp + ["--out", ""]),
        ("--out A.mtx", sp + ["--out", "A.mtx"]),
        ("--out A.mtx by a link", sp + ["--out", "linkA.npy"]),
        ("--out x.npy", sp + ["--out", "x.npy"]),
        ("--out ./x.npy", sp + ["--out", "./x.npy"]),
        ("--out sub/../x.npy", sp + ["--out", "sub/../x.npy"]),
        ("--out x.npy by a link", sp + ["--out", "linkx.npy"]),
        ("--out x.npy by an absolute link", sp + ["--out", "abslinkx.npy"]),
        ("--x by a link, --out x.npy", ["sparse", "spmv", "A.mtx", "--x", "linkx.npy", "--out", "x.npy"]),
        ("--format bogus", sp + ["--out", "y.npy", "--format", "bogus"]),
        ("--format CSR", sp + ["--out", "y.npy", "--format", "CSR"]),
        ("--format empty", sp + ["--out", "y.npy", "--format", ""]),
        ("--type u8", sp + ["--out", "y.npy", "--type", "u8"]),
        ("--type f16", sp + ["--out", "y.npy", "--type", "f16"]),
        ("--threads -1", sp + ["--out", "y.npy", "--threads", "-1"]),
        ("--threads 5000", sp + ["--out", "y.npy", "--threads", "5000"]),
        ("--threads two", sp + ["--out", "y.npy", "--threads", "two"]),
        ("--repeat without --time", sp + ["--out", "y.npy", "--repeat", "3"]),
        ("--repeat 0", sp + ["--out", "y.npy", "--time", "--repeat", "0"]),
        ("--repeat -2", sp + ["--out", "y.npy", "--time", "--repeat", "-2"]),
        ("--x given to info", ["sparse", "info", "A.mtx", "--x", "x.npy"]),
        ("--out given to info", ["sparse", "info", "A.mtx", "--out", "y.npy"]),
        ("--time given to info", ["sparse", "info", "A.mtx", "--time"]),
        ("--format twice", sp + ["--out", "y.npy", "--format", "csr", "--format", "dia"]),
        ("--format twice, the same", sp + ["--out", "y.npy", "--format", "csr", "--format", "csr"]),
        ("--x twice", sp + ["--x", "x.npy", "--out", "y.npy"]),
        ("--out twice", sp + ["--out", "y.npy", "--out", "z.npy"]),
        ("--time twice", sp + ["--out", "y.npy", "--time", "--time"]),
        ("unknown option", sp + ["--out", "y.npy", "--bogus"]),
        ("option without value", sp + ["--out", "y.npy", "--format"]),
        ("--time with a value", sp + ["--out", "y.npy", "--time=1"]),
    ]
    for what, args in cases:
        for sentinel in (False, True):
            ypath = os.path.join(d, "y.npy")
            if sentinel:
                with open(ypath, "wb") as f:
                    f.write(b"sentinel: not pxl's\n")
            before = snapshot(d)
            rc, so, se = run(args, cwd=d)
            after = snapshot(d)
            tag = f"{what}{' (a file at y.npy)' if sentinel else ''}"
            g.check(rc == 2, f"{tag}: expected exit 2: {show(args, rc, so, se)}")
            g.check("error" in se and len(se.strip()) > 0, f"{tag}: no message on stderr: {se!r}")
            g.check(so == "", f"{tag}: wrote to stdout: {so[:200]!r}")
            g.check(before == after, f"{tag}: changed files: {diff_snapshots(before, after)}")
            if sentinel:
                os.remove(ypath)
    g.report()


# ---- 4. read and run errors ---------------------------------------------------------

def group_errors():
    g = Group("4 read and run errors")
    d = os.path.join(WORK, "errors")
    os.makedirs(d)
    scipy.io.mmwrite(os.path.join(d, "A.mtx"), rand(30, 20, 0.2))
    scipy.io.mmwrite(os.path.join(d, "A12.mtx"), rand(10, 12, 0.3))
    scipy.io.mmwrite(os.path.join(d, "D.mtx"), dense_row(200, 0.01, 3))
    np.save(os.path.join(d, "x.npy"), rng.standard_normal(20))
    np.save(os.path.join(d, "x12.npy"), rng.standard_normal(12))
    np.save(os.path.join(d, "x200.npy"), rng.standard_normal(200))
    np.save(os.path.join(d, "x21.npy"), rng.standard_normal(21))
    np.save(os.path.join(d, "x2d.npy"), rng.standard_normal((3, 4)))
    np.save(os.path.join(d, "xt.npy"), rng.standard_normal(20))
    with open(os.path.join(d, "xt.npy"), "r+b") as f:
        f.truncate(os.path.getsize(os.path.join(d, "xt.npy")) - 12)
    with open(os.path.join(d, "xh.npy"), "wb") as f:
        f.write(b"\x93NUMPY\x01\x00\x20\x00{'descr': '<f8', 'fortr")
    with open(os.path.join(d, "bad.mtx"), "w") as f:
        f.write("%%MatrixMarket matrix coordinate real general\n3 3 2\n1 1 1.0\nthis is garbage\n")
    with open(os.path.join(d, "bad2.mtx"), "w") as f:
        f.write("%%MatrixMarket matrix coordinate real general\n3 3 2\n1 1 1.0\n4 1 2.0\n")
    with open(os.path.join(d, "empty.mtx"), "w") as f:
        pass
    A = ["sparse", "spmv", "A.mtx", "--x", "x.npy"]
    cases = [  # (what, args, exit, words one of which the message has)
        ("missing A.mtx", ["sparse", "spmv", "nope.mtx", "--x", "x.npy"], 3, ["nope.mtx"]),
        ("missing x", A[:3] + ["--x", "nope.npy"], 3, ["nope.npy"]),
        ("malformed .mtx", ["sparse", "spmv", "bad.mtx", "--x", "x.npy"], 3, ["bad.mtx"]),
        ("an index outside the .mtx's size", ["sparse", "spmv", "bad2.mtx", "--x", "x.npy"], 3, ["bad2.mtx"]),
        ("an empty .mtx", ["sparse", "spmv", "empty.mtx", "--x", "x.npy"], 3, ["empty.mtx"]),
        ("a directory as .mtx", ["sparse", "spmv", "sub", "--x", "x.npy"], 3, ["sub"]),
        ("x truncated", A[:3] + ["--x", "xt.npy"], 3, ["xt.npy"]),
        ("x's header truncated", A[:3] + ["--x", "xh.npy"], 3, ["xh.npy"]),
        ("x 2-D (3x4)", ["sparse", "spmv", "A12.mtx", "--x", "x2d.npy"], 3, ["x2d.npy"]),
        ("x of the wrong length", A[:3] + ["--x", "x21.npy"], 4, ["x21.npy"]),
        ("x of the wrong length (f32)", A[:3] + ["--x", "x21.npy", "--type", "f32"], 4, ["x21.npy"]),
        ("x of the rows' length", ["sparse", "spmv", "A.mtx", "--x", "x30.npy"], 4, ["x30.npy"]),
        ("--device cuda", A + ["--device", "cuda"], 4, ["cuda"]),
        ("--device opencl", A + ["--device", "opencl"], 4, ["opencl"]),
        ("ell of a dense row", ["sparse", "spmv", "D.mtx", "--x", "x200.npy", "--format", "ell"], 3,
         ["padding", "more than"]),
    ]
    np.save(os.path.join(d, "x30.npy"), rng.standard_normal(30))
    os.makedirs(os.path.join(d, "sub"))
    for what, args, code, words in cases:
        for sentinel in (False, True):
            ypath = os.path.join(d, "sub", "y.npy")
            full = args + ["--out", "sub/y.npy"]
            if sentinel:
                with open(ypath, "wb") as f:
                    f.write(b"sentinel: not pxl's\n" * 3)
            before = snapshot(d)
            rc, so, se = run(full, cwd=d)
            after = snapshot(d)
            tag = f"{what}{' (a file at --out)' if sentinel else ''}"
            g.check(rc == code, f"{tag}: expected exit {code}: {show(full, rc, so, se)}")
            g.check(se.startswith("pxl: error: ") and any(w in se for w in words),
                    f"{tag}: the message does not say {' or '.join(words)}: {se!r}")
            g.check(before == after, f"{tag}: changed files: {diff_snapshots(before, after)}")
            if sentinel:
                os.remove(ypath)
    # --out in a directory that does not exist
    full = A + ["--out", "nodir/y.npy"]
    before = snapshot(d)
    rc, so, se = run(full, cwd=d)
    g.check(rc == 3 and "nodir" in se, f"--out in a missing directory: expected exit 3: {show(full, rc, so, se)}")
    g.check(before == snapshot(d) and not os.path.exists(os.path.join(d, "nodir")),
            f"--out in a missing directory: changed files: {diff_snapshots(before, snapshot(d))}")
    # --out in a directory that cannot be written (not as root: root writes anyway)
    if os.geteuid() != 0:
        ro = os.path.join(d, "ro")
        os.makedirs(ro)
        with open(os.path.join(ro, "y.npy"), "wb") as f:
            f.write(b"sentinel")
        os.chmod(ro, 0o555)
        full = A + ["--out", "ro/y.npy"]
        before = snapshot(d)
        rc, so, se = run(full, cwd=d)
        g.check(rc == 3, f"--out in a read-only directory: expected exit 3: {show(full, rc, so, se)}")
        g.check(before == snapshot(d), "--out in a read-only directory: changed files")
        os.chmod(ro, 0o755)
    g.report()


# ---- 5. --time, --repeat, help ------------------------------------------------------

def group_time_help():
    g = Group("5 time and help")
    d = os.path.join(WORK, "time")
    os.makedirs(d)
    M = banded(700, 4)
    scipy.io.mmwrite(os.path.join(d, "B.mtx"), M)
    A = read_csr(os.path.join(d, "B.mtx"))
    x = rng.standard_normal(700)
    np.save(os.path.join(d, "x.npy"), x)
    want = A @ x
    TIME = re.compile(r"^pxl: time: [0-9]+(\.[0-9]+)? ms$")
    for fmt in FORMATS:
        for rep in (None, "1", "3", "20"):
            args = ["sparse", "spmv", "B.mtx", "--x", "x.npy", "--out", "y.npy", "--format", fmt, "--time"]
            if rep:
                args += ["--repeat", rep]
            rc, so, se = run(args, cwd=d)
            if not g.check(rc == 0, show(args, rc, so, se)):
                continue
            lines = se.splitlines()
            g.check(sum(bool(TIME.match(l)) for l in lines) == 1, f"pxl {' '.join(args)}: no one 'pxl: time: X ms': {se!r}")
            fl = [l for l in lines if l.startswith("pxl: format: ")]
            ok = len(fl) == 1 and (fl[0] == f"pxl: format: {fmt}" if fmt != "auto" else
                                   fl[0][len("pxl: format: "):] in FORMATS[:-1])
            g.check(ok, f"pxl {' '.join(args)}: the format line: {fl}")
            times = [l for l in lines if l.startswith("pxl: times:")]
            if rep and int(rep) > 1:
                n = int(rep) - 1
                g.check(len(times) == 1 and re.match(
                    rf"^pxl: times: first [0-9.]+ ms; of the {n} after it: best [0-9.]+ ms, median [0-9.]+ ms, "
                    r"worst [0-9.]+ ms$", times[0]) is not None, f"pxl {' '.join(args)}: the times line: {times}")
                if times and TIME.match(lines[0] if lines else ""):
                    best = re.search(r"best ([0-9.]+) ms", times[0])
                    t = [l for l in lines if TIME.match(l)][0]
                    g.check(best is not None and t == f"pxl: time: {best.group(1)} ms",
                            f"pxl {' '.join(args)}: time is not the best of the repeats: {se!r}")
            else:
                g.check(not times, f"pxl {' '.join(args)}: a times line with one product: {times}")
            g.check(so == "", f"pxl {' '.join(args)}: wrote to stdout: {so!r}")
            y = np.load(os.path.join(d, "y.npy"))
            g.check(np.array_equal(bits(y), bits(want)), f"pxl {' '.join(args)}: y differs from SciPy")
            os.remove(os.path.join(d, "y.npy"))
    # no timing lines without --time
    args = ["sparse", "spmv", "B.mtx", "--x", "x.npy", "--out", "y.npy"]
    rc, so, se = run(args, cwd=d)
    g.check(rc == 0 and "time" not in se and "format" not in se and so == "",
            f"without --time: {show(args, rc, so, se)}")
    # help
    rc, h1, se = run(["sparse", "--help"], cwd=d)
    g.check(rc == 0 and se == "", f"pxl sparse --help: exit {rc}, stderr {se!r}")
    for f in FORMATS + ["spmv", "info", "--x", "--out", "--time", "--repeat", "--threads", "--device", "--type"]:
        g.check(re.search(r"(?<![\w-])" + re.escape(f) + r"(?![\w])", h1) is not None,
                f"pxl sparse --help does not mention {f}")
    rc, h2, se = run(["help", "sparse"], cwd=d)
    g.check(rc == 0 and h2 == h1, f"pxl help sparse: exit {rc}, the same text as --help: {h2 == h1}")
    rc, h3, se = run(["sparse", "-h"], cwd=d)
    g.check(rc == 0 and h3 == h1, f"pxl sparse -h: exit {rc}, the same text: {h3 == h1}")
    rc, h4, se = run(["sparse", "spmv", "B.mtx", "--help"], cwd=d)
    g.check(rc == 0 and h4 == h1, f"pxl sparse spmv B.mtx --help: exit {rc}, the same text: {h4 == h1}")
    rc, hm, se = run(["--help"], cwd=d)
    g.check(rc == 0 and "sparse" in hm, f"pxl --help: exit {rc}, mentions sparse: {'sparse' in hm}")
    rc, hh, se = run(["help"], cwd=d)
    g.check(rc == 0 and "sparse" in hh, f"pxl help: exit {rc}, mentions sparse: {'sparse' in hh}")
    g.check(os.listdir(d) == [] or sorted(os.listdir(d)) == ["B.mtx", "x.npy", "y.npy"],
            f"stray files: {sorted(os.listdir(d))}")
    g.report()


def main():
    mats = write_matrices()
    group_products(mats)
    group_info(mats)
    group_usage()
    group_errors()
    group_time_help()
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
