"""What the oracle scripts share: the CUDA skip, reading a sample image and running pxl.

Imported from the scripts' own directory (Python puts a script's directory first on its path).
"""
import os
import subprocess
import sys

import cv2


def skip_without_cuda(devices):
    """True, after printing ctest's skip line (the tests' SKIP_RETURN_CODE is 77), when cuda is
    the only device and no NVIDIA device node exists: an absent device skips, a device that
    fails is a failure."""
    if devices == ["cuda"] and not os.path.exists("/dev/nvidiactl"):
        print("skipped: no CUDA device")
        return True
    return False


def run_pxl(cmd, outs=(), timeout=None, env=None):
    """Runs the pxl command line cmd, the files outs (its outputs) removed first, so that a
    failed run never leaves an earlier result to be read. None when it succeeded, else why
    not: 'exit N: its message', or 'no result after T s' when timeout seconds passed."""
    for out in outs:
        if os.path.exists(out):
            os.remove(out)
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return "no result after %d s" % timeout
    return None if r.returncode == 0 else "exit %d: %s" % (r.returncode, r.stderr.strip())


def sample(examples, name, flags):
    """samples/NAME (the folder beside EXAMPLES_DIR) read by cv2.imread with flags; exits with
    a message naming the file when it cannot be read."""
    img = cv2.imread(os.path.join(os.path.dirname(os.path.abspath(examples)), "samples", name), flags)
    if img is None:
        script = os.path.splitext(os.path.basename(sys.argv[0]))[0]
        sys.exit("%s: cannot read samples/%s" % (script, name))
    return img


class Tally:
    """Counts an oracle's checks. check(what, ok, why) prints 'FAIL what: why' for a failed
    one (why: a string, or a function giving it, called only then); summary() prints
    'N passed, N failed' and returns the script's exit status (1 after any failure)."""

    def __init__(self):
        self.passed = self.failed = 0

    def check(self, what, ok, why):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
            print("FAIL %s: %s" % (what, why() if callable(why) else why))

    def summary(self):
        print("%d passed, %d failed" % (self.passed, self.failed))
        return 1 if self.failed else 0
