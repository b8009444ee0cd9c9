"""What the oracle scripts share: the CUDA skip and reading a sample image.

Imported from the scripts' own directory (Python puts a script's directory first on its path).
"""
import os
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


def sample(examples, name, flags):
    """samples/NAME (the folder beside EXAMPLES_DIR) read by cv2.imread with flags; exits with
    a message naming the file when it cannot be read."""
    img = cv2.imread(os.path.join(os.path.dirname(os.path.abspath(examples)), "samples", name), flags)
    if img is None:
        script = os.path.splitext(os.path.basename(sys.argv[0]))[0]
        sys.exit("%s: cannot read samples/%s" % (script, name))
    return img
