"""What the Python benchmarks share: timing a peer in this process, and a pxl run's own time.

Imported from the scripts' own directory (Python puts a script's directory first on its path).
"""
import re
import subprocess
import sys
import time


def best_ms(f, reps):
    """The best of reps calls of f, in ms, and the last call's value."""
    best, out = float("inf"), None
    for _ in range(reps):
        t = time.perf_counter()
        out = f()
        best = min(best, time.perf_counter() - t)
    return best * 1e3, out


def pxl_time_ms(cmd, reps, what):
    """Runs the pxl command line cmd (`pxl run ...`) with `--time --repeat reps+1` and returns
    the time pxl prints: the best of the runs after the first, which loads or compiles the
    kernels. Exits naming `what` when the run fails or prints no time."""
    r = subprocess.run(cmd + ["--time", "--repeat", str(reps + 1)], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("%s: %s" % (what, r.stderr.strip()))
    m = re.search(r"pxl: time: ([0-9.]+) ms", r.stderr)
    if not m:
        sys.exit("%s: no time in pxl's output: %s" % (what, r.stderr.strip()))
    return float(m.group(1))
