#!/usr/bin/env python3
"""Sparse products: pxl's formats (bench_sparse) against SciPy's CSR product, same matrices.

    bench_sparse.py BENCH_SPARSE [--scale S] [--reps N] [--threads 1,2]

Runs the C benchmark (bench/bench_sparse.c: three generated matrices, every format and
the automatic choice on each thread count), then loads the same CSR arrays and x into
SciPy and times `A @ x` (csr_matvec, one thread: SciPy's product does not thread), the
best of N. Every format's y must have the bits of SciPy's (the product's definition,
docs/SPARSE.md); a mismatch fails the run. Prints one table: per matrix, SciPy's time,
pxl's CSR and its automatic choice on each thread count, and the ratios (above 1: pxl
faster).
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import best_ms  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("bench", help="the bench_sparse executable")
    ap.add_argument("--scale", default="1", help="matrix size factor (1: about 20M, 8M, 4M entries)")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--threads", default="1,2", help="pxl thread counts (0: all cores)")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        r = subprocess.run([a.bench, d, "--threads", a.threads, "--reps", str(a.reps), "--scale", a.scale],
                           capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit("bench_sparse failed: " + r.stderr.strip())
        rows = [ln.split() for ln in r.stdout.splitlines()[1:] if ln.strip()]
        table = {}
        for f in rows:
            if f[3] == "-":
                continue
            table.setdefault(f[0], {})[(f[1], int(f[2]))] = (float(f[3]), len(f) > 5 and f[5] == "auto")
        failed = 0
        print("matrix    rows      entries   SciPy ms | " +
              " | ".join("pxl %dt: csr ms, auto (format) ms, SciPy/auto" % t
                         for t in map(int, a.threads.split(","))))
        for name, res in table.items():
            load = lambda what: np.load(os.path.join(d, "%s_%s.npy" % (name, what)))
            indptr, indices, data, x = load("indptr"), load("indices"), load("data"), load("x")
            n = len(indptr) - 1
            A = sp.csr_matrix((data, indices.astype(np.int64), indptr.astype(np.int64)), shape=(n, len(x)))
            ms, y = best_ms(lambda: A @ x, a.reps)
            for fmt in ("csr", "coo", "ell", "sell", "dia", "bcsr"):
                p = os.path.join(d, "%s_y_%s.npy" % (name, fmt))
                if os.path.exists(p) and not np.array_equal(np.load(p), y):
                    print("FAIL: %s %s: y differs from SciPy's" % (name, fmt))
                    failed += 1
            cells = []
            for t in map(int, a.threads.split(",")):
                csr = res[("csr", t)][0]
                auto = [(f, v[0]) for (f, tt), v in res.items() if tt == t and v[1]]
                fa, ta = auto[0] if auto else ("?", float("nan"))
                cells.append("%.3f, %s %.3f, %.2fx" % (csr, fa, ta, ms / ta))
            print("%-9s %-9d %-9d %-8.3f | %s" % (name, n, A.nnz, ms, " | ".join(cells)))
        print("\nevery format (ms; GB/s counts the arrays, x and y once):")
        print(r.stdout.strip())
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
