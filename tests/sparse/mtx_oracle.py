#!/usr/bin/python3
"""mtx_oracle.py MTX_TEST - pxl's Matrix Market reader and writer against SciPy's.

scipy.io.mmwrite writes random matrices (scipy.sparse.random: 1x1, no entries, 1xN, Nx1,
300x200 at density 0.05 and others, values over the whole double range with subnormals,
-0, +-inf and NaN; symmetric and skew-symmetric ones, integer and pattern fields, dense
arrays with zeros); `MTX_TEST --roundtrip IN OUT f64|f32` reads each with sparse_read_mtx
and writes it again with sparse_write_mtx; scipy.io.mmread reads both files, and pxl's
CSR form must equal SciPy's reading of the original exactly (after sum_duplicates and
sort_indices; an array's zeros left out, as scipy.sparse.csr_matrix does): the same
shape, row pointers, columns and value bits for f64, and for f32 the same float32 bits
as SciPy's values rounded to float32; a NaN equals a NaN of either sign (the mirror of a
skew-symmetric file's NaN: SciPy multiplies by -1, which keeps the sign on x86, pxl
negates, which flips it; mtx_test holds NaN signs through a round trip). Prints
'N passed, N failed' and exits 1 on a failure; SciPy or NumPy missing is a failure
(python3-scipy, tools/deps.txt).
"""
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import scipy.io
    import scipy.sparse
except ImportError as e:
    sys.exit(f"mtx_oracle: {e} (install python3-numpy and python3-scipy, tools/deps.txt)")

MTX_TEST = sys.argv[1]
rng = np.random.default_rng(20240611)
SPECIAL = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, 2.2250738585072009e-308, 1e308,
                    np.finfo(np.float64).max, 0.1, 1e-300, 1.0 / 3.0, 16777217.0, 3.4028235677973366e38])


def wide_values(n):
    """n doubles over the whole range: normal ones scaled by 10^-320 .. 10^308, and specials."""
    v = rng.standard_normal(n) * 10.0 ** rng.integers(-320, 308, n).astype(np.float64)
    k = rng.random(n) < 0.1
    v[k] = rng.choice(SPECIAL, int(k.sum()))
    return v


def random_matrix(rows, cols, density, values="wide"):
    if values == "int":
        rvs = lambda n: rng.integers(-10**12, 10**12, n).astype(np.float64)
    elif values == "small":
        rvs = lambda n: rng.integers(-1000, 1000, n).astype(np.float64)
    else:
        rvs = wide_values
    return scipy.sparse.random(rows, cols, density=density, format="coo", random_state=rng, data_rvs=rvs)


def cases():
    """(name, matrix, mmwrite's keyword arguments)."""
    shapes = [(1, 1, 1.0), (5, 7, 0.0), (1, 1, 0.0), (1, 50, 0.3), (60, 1, 0.3), (300, 200, 0.05),
              (37, 41, 0.2), (1000, 3, 0.5), (2, 2, 1.0)]
    for seed in range(3):
        for rows, cols, d in shapes:
            yield "%dx%d d=%g #%d" % (rows, cols, d, seed), random_matrix(rows, cols, d), {}
        for n in (1, 4, 50):
            b = random_matrix(n, n, 0.2).tocsr()
            lower = scipy.sparse.tril(b)
            yield "symmetric %d #%d" % (n, seed), (lower + scipy.sparse.tril(b, -1).T).tocoo(), \
                {"symmetry": "symmetric"}
            strict = scipy.sparse.tril(b, -1)
            yield "skew-symmetric %d #%d" % (n, seed), (strict - strict.T).tocoo(), \
                {"symmetry": "skew-symmetric"}
        a = random_matrix(40, 30, 0.1, "int")
        yield "integer #%d" % seed, scipy.sparse.coo_matrix(a.toarray().astype(np.int64)), \
            {"field": "integer"}
        b = random_matrix(25, 25, 0.2, "small").tocsr()
        s = scipy.sparse.tril(b) + scipy.sparse.tril(b, -1).T
        yield "integer symmetric #%d" % seed, scipy.sparse.coo_matrix(s.toarray().astype(np.int64)), \
            {"field": "integer", "symmetry": "symmetric"}
        yield "pattern #%d" % seed, random_matrix(30, 70, 0.1), {"field": "pattern"}
        yield "pattern symmetric #%d" % seed, scipy.sparse.tril(random_matrix(20, 20, 0.3)).tocoo(), \
            {"field": "pattern", "symmetry": "symmetric"}
        dense = random_matrix(9, 6, 0.5).toarray()
        dense[0, 0], dense[-1, -1] = -0.0, np.nan
        yield "array #%d" % seed, dense, {}
        yield "integer array #%d" % seed, random_matrix(4, 11, 0.5, "small").toarray().astype(np.int64), \
            {"field": "integer"}


def csr_of(m):
    """m (what mmread gives: a sparse matrix or, for an array file, an ndarray) as float64
    CSR, duplicates summed, columns sorted."""
    c = scipy.sparse.csr_matrix(m.astype(np.float64))
    c.sum_duplicates()
    c.sort_indices()
    return c


def differ(want, got, f32):
    """None when got is want (f32: with want's values rounded to float32), else how not."""
    if want.shape != got.shape:
        return "shape %s, expected %s" % (got.shape, want.shape)
    if not np.array_equal(want.indptr, got.indptr):
        r = int(np.argmax(want.indptr != got.indptr))
        return "row pointer %d is %d, expected %d" % (r, got.indptr[r], want.indptr[r])
    if not np.array_equal(want.indices, got.indices):
        e = int(np.argmax(want.indices != got.indices))
        return "entry %d in column %d, expected %d" % (e, got.indices[e], want.indices[e])
    t, u = (np.float32, np.uint32) if f32 else (np.float64, np.uint64)
    with np.errstate(over="ignore"):  # f32: doubles beyond its range become +-inf, as pxl rounds them
        wt, gt = want.data.astype(t), got.data.astype(t)
    a, b = wt.view(u), gt.view(u)
    bad = (a != b) & ~(np.isnan(wt) & np.isnan(gt))
    if bad.any():
        e = int(np.argmax(bad))
        return "entry %d is %r (%x), expected %r (%x)" % (e, got.data[e], b[e], want.data[e], a[e])
    return None


def main():
    passed = failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        src, out = os.path.join(tmp, "in.mtx"), os.path.join(tmp, "out.mtx")
        for name, m, kw in cases():
            if os.path.exists(src):
                os.remove(src)
            scipy.io.mmwrite(src, m, **kw)
            want = csr_of(scipy.io.mmread(src))
            for t in ("f64", "f32"):
                if os.path.exists(out):
                    os.remove(out)
                r = subprocess.run([MTX_TEST, "--roundtrip", src, out, t], capture_output=True, text=True)
                why = None
                if r.returncode != 0:
                    why = "exit %d: %s" % (r.returncode, r.stderr.strip())
                else:
                    with open(out) as f:
                        banner = f.readline()
                    if banner != "%%MatrixMarket matrix coordinate real general\n":
                        why = "banner %r" % banner
                    else:
                        why = differ(want, csr_of(scipy.io.mmread(out)), t == "f32")
                if why:
                    failed += 1
                    print("FAIL %s %s (%d entries): %s" % (name, t, want.nnz, why))
                else:
                    passed += 1
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
