/*
 * pxl.c - the `pxl` command: the outermost layer, a thin driver over the public C API
 * (include/pxl/pxl.h) and nothing else. `pxl run` compiles a .pxl file, loads the input
 * images, binds arguments, runs one entry point and saves or prints the result; `pxl
 * check` compiles and reports; `pxl compile` writes the entry points as portable C.
 *
 * The library never prints and never exits, so every message the user sees and every
 * exit status is decided here: library statuses map to four exit codes (source error,
 * usage, I/O, run time; see exit_code), and usage problems are caught before anything is
 * loaded: a malformed option value, or a single-valued option given twice, is a usage
 * error before anything runs. Output is never left half-written: images go through
 * pxl_image_save and CSV through pxl_write_file (both a temporary file plus rename), --out
 * may not name an input, and SIGINT, SIGTERM, SIGHUP and the --time-limit timer remove
 * the temporary file of a write in progress before the process dies.
 * docs/CLI.md is the user's documentation; keep it and the help texts below in step.
 */
#define _XOPEN_SOURCE 700

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "pxl/pxl.h"

/* Exit codes; documented in HELP_MAIN and docs/CLI.md. */
enum {
  RC_OK = 0,     /* success */
  RC_SOURCE = 1, /* the kernel source has errors */
  RC_USAGE = 2,  /* bad command line or refused overwrite */
  RC_IO = 3,     /* file or image-format error */
  RC_RUN = 4,    /* anything else the library reports */
  RC_TIMEOUT = 124 /* --time-limit exceeded; the status timeout(1) gives, so that
                      `pxl run --time-limit N` can replace `timeout N pxl run` */
};

/* ---- help texts ---- */

static const char HELP_MAIN[] =
    "pxl - compile and run image-processing kernels written in the pxl kernel language\n"
    "\n"
    "Usage:\n"
    "  pxl run FILE.pxl [ENTRY] --in [NAME=]PATH ... [--out PATH ...] [OPTIONS]\n"
    "  pxl check FILE.pxl [--explain]\n"
    "  pxl compile FILE.pxl [-o BASE]\n"
    "  pxl sparse info|spmv|eigs A.mtx | affinity|ncuts IMAGE [OPTIONS]\n"
    "  pxl help [COMMAND]\n"
    "  pxl --help | --version\n"
    "\n"
    "Commands:\n"
    "  run      run a kernel, reduction, histogram or pipeline on image files, or on\n"
    "           every frame of a video (.y4m) or of numbered image files\n"
    "  check    compile FILE.pxl and report its errors; --explain describes each entry\n"
    "  compile  write FILE.pxl's entry points as portable C: BASE.c and BASE.h\n"
    "  sparse   sparse matrices (Matrix Market): describe one, multiply a vector, find\n"
    "           eigenpairs; normalized cuts of an image (affinity, segmentation)\n"
    "  help     show this help, or the help of COMMAND\n"
    "\n"
    "Options:\n"
    "  -h, --help   show this help ('pxl COMMAND --help' shows a command's help)\n"
    "  --version    print \"pxl VERSION\" and exit\n"
    "\n"
    "Exit status:\n"
    "  0  success\n"
    "  1  the kernel source has errors (printed as FILE:LINE:COL: error: ...)\n"
    "  2  usage error: unknown option, missing or bad argument, refused overwrite\n"
    "  3  input/output error: missing or unreadable file, corrupt or unsupported image,\n"
    "     image too large, failed write\n"
    "  4  run-time error: bad argument for the entry (wrong name, type, size or value),\n"
    "     no such entry point, device unavailable, backend compilation failed, out of\n"
    "     memory, other\n"
    "  124  pxl run --time-limit exceeded\n"
    "  A signal (SIGINT from Ctrl-C, SIGTERM, SIGHUP) ends pxl with that signal's status\n"
    "  (130, 143, 129 in a shell), leaving no partial output file.\n"
    "\n"
    "A single-valued option given twice is a usage error; --in, --param and --border\n"
    "repeat with different NAMEs, --out once per output of the entry.\n"
    "\n"
    "Errors go to standard error as \"pxl: error: MESSAGE\", warnings (problems pxl\n"
    "worked around) as \"pxl: warning: MESSAGE\"; results go to standard output or to\n"
    "files.\n"
    "\n"
    "Environment:\n"
    "  PXL_CACHE_DIR  directory for compiled kernels (default $XDG_CACHE_HOME/pxl,\n"
    "                 else ~/.cache/pxl); each kernel's generated C and compiler log\n"
    "                 are kept there next to it. It must be yours and not writable by\n"
    "                 others: else pxl warns and uses a private temporary directory\n"
    "                 (docs/SECURITY.md)\n"
    "  PXL_CC         C compiler of the CPU backend (default: the one pxl was built\n"
    "                 with). Without a working compiler, --device auto falls back to\n"
    "                 the interpreter (with a warning) and --device cpu fails (exit 4)\n"
    "  PXL_CC_TIMEOUT seconds the C compiler may take for one kernel (default 120,\n"
    "                 0: no limit); past it the compile is a failure (exit 4)\n";

static const char HELP_RUN[] =
    "Usage: pxl run FILE.pxl [ENTRY] --in [NAME=]PATH ... [--out PATH ...] [OPTIONS]\n"
    "\n"
    "Compiles FILE.pxl and runs one of its entry points on image files.\n"
    "\n"
    "ENTRY names a kernel, reduce, histogram or pipeline of FILE.pxl. Without ENTRY the\n"
    "program's last pipeline runs, or its last entry point if it has no pipeline. A\n"
    "generic entry (kernel<T: u8 | u16 | f32> ...) runs its instance for the element\n"
    "type of the images given: examples/blur3.pxl blurs u8, u16 and f32 images alike.\n"
    "\n"
    "Options:\n"
    "  --in [NAME=]PATH     bind image file PATH to image parameter NAME; repeat for each\n"
    "                       image parameter. Without NAME= the image binds to the entry's\n"
    "                       first image parameter; NAME= is required when more than one\n"
    "                       --in is given. The text is taken as NAME=PATH only when the\n"
    "                       part before the first '=' is an identifier: write ./PATH for a\n"
    "                       file whose name has that shape. Files: PNG (8/16-bit), JPEG,\n"
    "                       PGM/PPM (P2 P3 P5 P6) as u8/u16; TIFF (first page) and NumPy\n"
    "                       .npy as any image type. A kernel or pipeline written for one\n"
    "                       channel runs on RGB/RGBA files channel by channel (every\n"
    "                       --in with the same channels; not reductions, histograms).\n"
    "  -o, --out PATH       where an image result is saved (required for one); the\n"
    "                       format follows the extension: .png (u8, u16), .jpg .jpeg\n"
    "                       (u8), .pgm .ppm .pnm (u8, u16), .tif .tiff .npy (every type).\n"
    "                       A result type the format cannot store is refused before the\n"
    "                       run (exit 2). A kernel with several outputs (kernel (i16\n"
    "                       gx, i16 gy) k(...)) or a pipeline returning several images\n"
    "                       (-> (image T1, image T2)) takes one --out per output, in\n"
    "                       the declared order; too few or too many is exit 2 before\n"
    "                       the run, and each output's type is checked against its file.\n"
    "                       For a histogram, --out FILE.csv writes the CSV there instead\n"
    "                       of standard output. Ignored, with a note, for a reduction.\n"
    "  --param NAME=VALUE   scalar parameter NAME, e.g. --param t=40 --param s=0.5;\n"
    "                       an integer parameter takes an integer its type can hold\n"
    "                       (t=300 for a u8 is refused, not saturated); a float\n"
    "                       parameter takes any number. A VALUE that is not a number\n"
    "                       is a usage error (exit 2), one the parameter's type cannot\n"
    "                       hold a run-time error (exit 4)\n"
    "  --param NAME=V,V,... values of array parameter NAME (T NAME[N]), e.g.\n"
    "                       --param taps=1,4,6,4,1: at most N numbers, the rest 0,\n"
    "                       each converted to the element type as the language does\n"
    "                       (a single number binds the first element)\n"
    "  --param NAME=@FILE   the values from FILE: numbers separated by commas or white\n"
    "                       space (at most 1 MiB). A malformed list or unreadable FILE\n"
    "                       is a usage error (exit 2); more than N values exit 4\n"
    "  --border NAME=MODE   override the border mode of image parameter NAME when a\n"
    "                       kernel is run directly: clamp, mirror, mirror101, wrap,\n"
    "                       constant(V) or none (another MODE: exit 2)\n"
    "  --device DEV         auto (default: the first NVIDIA GPU when CUDA works, else\n"
    "                       the CPU backend; an entry the GPU cannot run goes to the\n"
    "                       CPU), cpu, ref (the reference interpreter: slow, exact, the\n"
    "                       oracle for other devices), cuda / cuda:N (NVIDIA GPU N\n"
    "                       through the CUDA driver and NVRTC, loaded at run time), or\n"
    "                       opencl / opencl:P:D (through the OpenCL loader, loaded at\n"
    "                       run time: the first GPU of any platform, else the first\n"
    "                       device; or device D of platform P); exit 4 when the device\n"
    "                       is missing\n"
    "  --threads N          threads of the CPU backend (0 = all cores, the default)\n"
    "  --fuse MODE          fusion of pipeline stages (a stage whose image only one\n"
    "                       later stage reads computed inside that stage's kernel, so\n"
    "                       the image never reaches memory; the same bits either way):\n"
    "                       auto (the default: where the cost model predicts a gain,\n"
    "                       on every device but ref, which runs pipelines as written),\n"
    "                       off, or all (every fusion that is exact, whatever the\n"
    "                       model says, on ref too). `pxl check --explain` lists what\n"
    "                       fuses and the predicted times\n"
    "  --no-fuse            the same as --fuse off\n"
    "  --unfused STAGE,...  keep the named pipeline stages as written (their images\n"
    "                       stored) even where fusion would compute them inside their\n"
    "                       consumer; fusion decides the others (for comparison; exit\n"
    "                       4 when the pipeline has no such stage)\n"
    "  --roi X,Y,W,H        run on the W x H rectangle at (X, Y) of every input (a\n"
    "                       region of interest); the entry sees it as a whole image, so\n"
    "                       an image result is W x H\n"
    "  --planes MODE        for a YUV4MPEG2 --in: all (the default: the entry runs on\n"
    "                       the Y, Cb and Cr planes of each frame, --out gets all three)\n"
    "                       or y (the Y plane only: --out is a mono stream, or one\n"
    "                       image per frame)\n"
    "  --in-flight N        for a YUV4MPEG2 --in: runs in flight at once, 1 to 16 (1:\n"
    "                       one plane after another), or 0, the default: the device's\n"
    "                       choice (GPUs 4: copying in, running and copying out\n"
    "                       overlap; the CPU one per core, up to 8)\n"
    "  --time               print the wall time of the run to standard error as\n"
    "                       \"pxl: time: MS ms\" and the device that ran it as \"pxl:\n"
    "                       device: NAME\" (loading, compiling FILE.pxl and saving are\n"
    "                       excluded; the first run of a kernel on a device may include\n"
    "                       compiling it for the device, later runs use the cache; on a\n"
    "                       GPU the time includes copying the images in and out).\n"
    "                       The device is the one that ran the entry: after a fallback\n"
    "                       (auto without a GPU or C compiler) the fallback\n"
    "  --repeat N           with --time: run the entry N times (1 to 100000) with the\n"
    "                       same images and parameters and print the best time of the\n"
    "                       runs after the first as \"pxl: time: MS ms\", then \"pxl:\n"
    "                       times: ...\" (the first, then the best, median and worst of\n"
    "                       the others); the last run's result is saved. Later runs\n"
    "                       reuse compiled kernels and intermediate images\n"
    "  --time-limit SECONDS stop after SECONDS of wall time (a number > 0, e.g. 60 or\n"
    "                       0.5), counted from the start of the command: print \"pxl:\n"
    "                       error: time limit of SECONDS s exceeded\", remove a partial\n"
    "                       output file and exit 124. A kernel that never ends is\n"
    "                       otherwise stopped with Ctrl-C\n"
    "  -h, --help           show this help\n"
    "  --                   end of options: later arguments are FILE.pxl and ENTRY\n"
    "Options take their value as the next argument or after '=' (--out=x.png). Options\n"
    "other than --in, --param and --border may be given once (twice: exit 2).\n"
    "\n"
    "Results:\n"
    "  image      saved to --out. The file is written under a temporary name and\n"
    "             renamed, so a failure never leaves a partial file and an existing\n"
    "             file is untouched unless the run and the save succeed. Several\n"
    "             images (one --out each) are saved all or none.\n"
    "  reduction  printed to standard output as \"NAME = VALUE\": integers exactly,\n"
    "             floating-point values with 9 significant digits (%.9g); argmin and\n"
    "             argmax as \"NAME = VALUE at (X, Y)\", X and Y in the coordinates of\n"
    "             the input images (the --roi origin is added).\n"
    "  histogram  CSV on standard output: the line \"bin,count\", then \"INDEX,COUNT\" for\n"
    "             each bin from 0 (integer counts exactly, weighted ones with %.9g).\n"
    "             With --out FILE.csv the CSV goes to that file, written atomically.\n"
    "\n"
    "Frames: an --in that is a YUV4MPEG2 file (.y4m, found by its content: 8-bit 4:2:0,\n"
    "4:2:2, 4:4:4 or mono, as ffmpeg writes it) or a numbered file pattern (a name with\n"
    "one %d or %0Nd: frame_%04d.png, numbers from the first of 0..4 that exists to the\n"
    "last in a row) is a stream: the entry runs on every frame, a few frames in memory at\n"
    "a time, the other --in images the same for all. A y4m frame runs plane by plane (see\n"
    "--planes); a numbered file is one image. An image result goes to --out NAME.y4m\n"
    "(u8 planes; rate, interlacing, aspect and colour space copied; written under a\n"
    "temporary name and renamed when every frame is done) or --out NAME_%04d.EXT (one\n"
    "file per frame, each atomic, numbered as the input: 1, 2, ... for y4m); a reduction\n"
    "prints a line per frame and plane (\"frame 3 Cb: total = 123\"). A truncated or\n"
    "malformed stream stops with the frame named (exit 3) and no --out written. '-' is\n"
    "standard input or output, a y4m stream (pipes to and from ffmpeg -f yuv4mpegpipe).\n"
    "On a terminal, standard error shows the frames done, frames per second and the time\n"
    "left.\n"
    "\n"
    "Safety: pxl refuses (exit 2) an --out that names the same file as an --in image or\n"
    "FILE.pxl: when the output exists, by device and inode (so links are caught); when\n"
    "it does not, by its resolved directory and file name.\n"
    "\n"
    "Exit status: 0 success, 1 source errors, 2 usage error or refused overwrite,\n"
    "3 input/output or image-file error, 4 run-time error, 124 --time-limit exceeded\n"
    "(see 'pxl --help').\n"
    "\n"
    "Examples:\n"
    "  pxl run edges.pxl --in photo.png --out edges.png --param t=40\n"
    "  pxl run blend.pxl blend --in a=left.png --in b=right.png -o out.png\n"
    "  pxl run stats.pxl total --in photo.png --roi 0,0,64,64\n"
    "  pxl run stats.pxl hist --in photo.png --out hist.csv\n"
    "  pxl run sobel_xy.pxl sobel_xy --in photo.png --out gx.tiff --out gy.tiff\n"
    "  pxl run blur3.pxl --in clip.y4m --out blurred.y4m\n"
    "  pxl run edges.pxl --in clip.y4m --planes y --out edges_%04d.png --param t=40\n";

static const char HELP_CHECK[] =
    "Usage: pxl check FILE.pxl [--explain]\n"
    "\n"
    "Compiles FILE.pxl without running it. On errors prints every diagnostic to standard\n"
    "error (FILE:LINE:COL: error: MESSAGE, the source line and a caret) and exits 1. On\n"
    "success prints \"FILE.pxl: ok (N entry points)\" to standard output, then each entry\n"
    "point as declared, e.g. \"  kernel u8 blur3(image u8 in)\", one per line.\n"
    "\n"
    "Options:\n"
    "  --explain    also print, to standard output, a report per entry point: its\n"
    "               skeleton class (P2P pixel-to-pixel, N2P neighbourhood-to-pixel, R2S\n"
    "               reduction-to-scalar, R2V reduction-to-vector such as histograms,\n"
    "               tiler, gather, ...), each image's window or affine read and border,\n"
    "               a tiler's tile, paving, repetition space and footprint, a separable\n"
    "               window's passes, the per-pixel counts and Park's six metrics, the\n"
    "               time the cost model predicts at 4096x4096 on the CPU and on GPUs and\n"
    "               the bytes a GPU run copies; for a pipeline its stages and the fusion\n"
    "               plan the compiled backends follow (docs/LANGUAGE.md, \"Skeleton\n"
    "               classes and --explain\")\n"
    "  -h, --help   show this help\n"
    "\n"
    "Exit status: 0 success, 1 source errors, 2 usage error, 3 FILE.pxl unreadable,\n"
    "4 other error (see 'pxl --help').\n";

static const char HELP_COMPILE[] =
    "Usage: pxl compile FILE.pxl [-o BASE]\n"
    "\n"
    "Compiles FILE.pxl ahead of time into portable C: writes BASE.c and BASE.h, one\n"
    "documented C function per entry point, needing only a C11 compiler (OpenMP\n"
    "optional) and libm. Entry ENTRY becomes the C function B_ENTRY, B being BASE's file\n"
    "name as an identifier (other bytes as _); BASE.h documents each and the compile line\n"
    "(cc -std=c11 -O3 -march=native -fopenmp -ffp-contract=off -fno-math-errno).\n"
    "Each file is written under a temporary name and renamed. Prints\n"
    "\"wrote BASE.c\" and \"wrote BASE.h\" to standard output.\n"
    "\n"
    "Options:\n"
    "  -o, --output BASE  path of the output files without extension; may include a\n"
    "                     directory (default: FILE.pxl without its .pxl extension)\n"
    "  -h, --help         show this help\n"
    "\n"
    "pxl refuses (exit 2) when BASE.c or BASE.h would be FILE.pxl itself.\n"
    "\n"
    "Exit status: 0 success, 1 source errors, 2 usage error, 3 read or write error,\n"
    "4 other error (see 'pxl --help').\n";

static const char HELP_SPARSE[] =
    "Usage:\n"
    "  pxl sparse info A.mtx [--format F|auto] [OPTIONS]\n"
    "  pxl sparse spmv A.mtx --x X.npy --out Y.npy [--format F|auto] [OPTIONS]\n"
    "  pxl sparse eigs A.mtx --k K [--which largest|smallest] --out VALS.npy\n"
    "                 [--vectors VECS.npy] [--tol T] [OPTIONS]\n"
    "  pxl sparse affinity IMAGE --out W.mtx [AFFINITY OPTIONS]\n"
    "  pxl sparse ncuts IMAGE --k REGIONS --out LABELS.png [--vals VALS.npy]\n"
    "                 [AFFINITY OPTIONS]\n"
    "\n"
    "Sparse matrices from Matrix Market files (.mtx: coordinate real, integer or\n"
    "pattern, general, symmetric or skew-symmetric; array real or integer), held in one\n"
    "of the formats csr, coo, ell, sell (SELL-C-sigma), dia or bcsr (docs/SPARSE.md).\n"
    "\n"
    "  info      print the matrix's shape, entries, and the entries each format would\n"
    "            store; with --format auto, also what the automatic choice measured\n"
    "            and chose (\"choice: FORMAT: csr MS ms, ...\", or \"FORMAT (cached)\"\n"
    "            when this structure was measured before)\n"
    "  spmv      y = A x: x from a .npy vector of A's column count (shape (N,), (N, 1)\n"
    "            or (1, N), any numeric dtype, converted to --type), y written as a .npy\n"
    "            vector of shape (rows,). Every format and device gives the same bits\n"
    "            for a finite x: each row's entries in column order, each product\n"
    "            rounded, then added, from +0 (SciPy's CSR product)\n"
    "  eigs      the K largest (default) or smallest eigenvalues of symmetric A into a\n"
    "            .npy vector (largest or smallest first), their unit eigenvectors with\n"
    "            --vectors as a (rows, K) array, each signed so that its largest\n"
    "            component is positive (thick-restart Lanczos; --tol: the relative\n"
    "            residual, default 1e-10, 1e-5 with --type f32)\n"
    "  affinity  the normalized-cuts affinity of IMAGE's first channel (integer pixels\n"
    "            scaled to [0, 1]): each pixel joined to those within --radius by\n"
    "            exp(-(I_p - I_q)^2 / sigma_i^2) exp(-d^2 / sigma_x^2), written as .mtx\n"
    "  ncuts     normalized-cuts segmentation of IMAGE into K regions (2 to 64): the\n"
    "            affinity, the K largest eigenvectors of D^-1/2 W D^-1/2, k-means of\n"
    "            the pixels' rows; LABELS (u8, 0 .. K-1) in any image format, the\n"
    "            generalized eigenvalues of (D - W) y = lambda D y with --vals; prints\n"
    "            \"IMAGE: K regions; eigenvalues ...\"\n"
    "\n"
    "Options:\n"
    "  --format F      the storage format the product runs in: csr (default), coo,\n"
    "                  ell, sell, dia, bcsr, or auto (measured once per structure\n"
    "                  and device, the answer kept in the cache directory)\n"
    "  --type T        value type: f64 (default) or f32\n"
    "  --device D      cpu (default; auto means cpu) or ref (one thread; spmv: the\n"
    "                  definition on CSR); GPUs have no sparse product yet (exit 4)\n"
    "  --threads N     CPU threads, 0 = all cores (default 0)\n"
    "  --time          spmv: print \"pxl: time: MS ms\" for the product alone\n"
    "  --repeat N      with --time: N products (1 to 100000); prints the best of those\n"
    "                  after the first as \"pxl: time: MS ms\", then \"pxl: times: ...\"\n"
    "                  (the first, then the best, median and worst of the others)\n"
    "  -k, --k K       eigs: eigenpairs (1 to 4096; default 6); ncuts: regions\n"
    "Affinity options:\n"
    "  --radius R      pixels joined within R (0 to 64; default 5: 81 diagonals)\n"
    "  --sigma-i S     intensity scale (default 0.1)\n"
    "  --sigma-x S     distance scale in pixels (default 4)\n"
    "  --edges E       an edge-strength image of IMAGE's size: weights also times\n"
    "                  exp(-e^2 / sigma_e^2), e the largest edge value on the segment\n"
    "                  between the pixels (intervening contours)\n"
    "  --sigma-e S     edge scale (default 0.1)\n"
    "  -h, --help      show this help\n"
    "\n"
    "Outputs are written under temporary names and renamed, so a failure leaves no\n"
    "partial file, and may not name an input. spmv and eigs write .npy, affinity .mtx.\n"
    "\n"
    "Exit status: 0 success, 2 usage error or refused overwrite, 3 unreadable or bad\n"
    ".mtx, .npy or image file, failed write, a format storing too much padding, 4 other\n"
    "error, eigenpairs that did not converge included (see 'pxl --help').\n"
    "\n"
    "Examples:\n"
    "  pxl sparse info affinity.mtx --format auto\n"
    "  pxl sparse spmv affinity.mtx --x x.npy --out y.npy --format dia --time --repeat 20\n"
    "  pxl sparse eigs graph.mtx --k 9 --out vals.npy --vectors vecs.npy\n"
    "  pxl sparse ncuts samples/scene.png --k 6 --out regions.png --vals lambda.npy\n";

static const char HELP_HELP[] =
    "Usage: pxl help [COMMAND]\n"
    "\n"
    "Shows the overview of pxl, or the help of COMMAND (run, check, compile, sparse,\n"
    "help); "
    "the same as 'pxl --help' and 'pxl COMMAND --help'.\n";

/* ---- messages and exit codes ---- */

/* The short text of a status, from the API's own table. */
static const char *status_text(int st) {
  switch (st) {
#define X(name, value, text) \
  case value:                \
    return text;
    PXL_STATUSES(X)
#undef X
  }
  return "unknown error";
}

/* The exit code for a failed library status. */
static int exit_code(int st) {
  switch (st) {
  case PXL_OK: return RC_OK;
  case PXL_ESOURCE: return RC_SOURCE;
  case PXL_EIO:
  case PXL_EFORMAT:
  case PXL_ETOOBIG: return RC_IO;
  default: return RC_RUN;
  }
}

/* Writes msg to stderr, ending it with exactly one newline. */
static void put_line(const char *msg) {
  size_t n = strlen(msg);
  while (n > 0 && msg[n - 1] == '\n') n--;
  fprintf(stderr, "%.*s\n", (int)n, msg);
}

/* Prints "pxl: error: ..." to stderr. */
static void error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("pxl: error: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

/* Prints a usage error with a pointer to the command's help; returns RC_USAGE. */
static int usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int usage_error(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("pxl: error: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  if (cmd)
    fprintf(stderr, "Try 'pxl %s --help' for usage.\n", cmd);
  else
    fputs("Try 'pxl --help' for usage.\n", stderr);
  return RC_USAGE;
}

/* Reports the library failure st (message from ctx) and returns its exit code. Source
 * diagnostics are already formatted and are printed as they are; `what`, if not NULL,
 * prefixes other messages with what the CLI was doing. */
static int fail(pxl_context *ctx, int st, const char *what) {
  const char *msg = ctx ? pxl_errmsg(ctx) : NULL;
  if (!msg || !*msg) msg = status_text(st);
  if (st == PXL_ESOURCE) {
    put_line(msg);
  } else {
    fputs("pxl: error: ", stderr);
    if (what) fprintf(stderr, "%s: ", what);
    put_line(msg);
  }
  return exit_code(st);
}

/* Prints the warnings the library recorded on ctx since the last call, one
 * "pxl: warning: LINE" per line. Called after each call that may record them. */
static void print_warnings(pxl_context *ctx) {
  const char *w = ctx ? pxl_take_warnings(ctx) : NULL;
  while (w && *w) {
    size_t n = strcspn(w, "\n");
    if (n > 0) fprintf(stderr, "pxl: warning: %.*s\n", (int)n, w);
    w += n;
    if (*w) w++;
  }
}

/* ---- signals and the time limit ---- */

/* The message of an expired --time-limit, made before the timer is armed: the handler
 * may only write(2) it. */
static char time_limit_msg[160];
static size_t time_limit_len;

/* The images save_all has written under temporary names and not renamed yet: removed
 * by the handlers below (unlink is async-signal-safe), so an interrupted save of several
 * images leaves none of them. */
static char saved_tmp[8][PATH_MAX];
static volatile sig_atomic_t nsaved_tmp;

static void remove_saved_tmp(void) {
  for (int k = 0; k < nsaved_tmp; k++) unlink(saved_tmp[k]);
}

/* SIGINT, SIGTERM, SIGHUP: removes the temporary file of a write in progress, then dies
 * of the signal (the handler was reset to the default on entry and the signal is not
 * blocked: SA_RESETHAND | SA_NODEFER), so the caller sees the signal's status. */
static void on_fatal_signal(int sig) {
  pxl_remove_partial_files();
  remove_saved_tmp();
  raise(sig);
}

/* SIGALRM from the --time-limit timer. */
static void on_time_limit(int sig) {
  (void)sig;
  pxl_remove_partial_files();
  remove_saved_tmp();
  ssize_t r = write(STDERR_FILENO, time_limit_msg, time_limit_len);
  (void)r;
  _exit(RC_TIMEOUT);
}

/* Installs on_fatal_signal for the signals that end a command, except those ignored
 * when pxl started (nohup, a background job of a non-interactive shell), which stay so. */
static void install_signal_handlers(void) {
  static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
  for (size_t k = 0; k < sizeof sigs / sizeof *sigs; k++) {
    struct sigaction old, sa;
    if (sigaction(sigs[k], NULL, &old) != 0 || old.sa_handler == SIG_IGN) continue;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_fatal_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND | SA_NODEFER;
    sigaction(sigs[k], &sa, NULL);
  }
}

/* Starts the --time-limit timer: seconds of wall time from now; text is the option's
 * value, for the message. 0 on success. */
static int arm_time_limit(double seconds, const char *text) {
  int n = snprintf(time_limit_msg, sizeof time_limit_msg, "pxl: error: time limit of %.32s s exceeded\n", text);
  time_limit_len = n > 0 && (size_t)n < sizeof time_limit_msg ? (size_t)n : strlen(time_limit_msg);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_time_limit;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGALRM, &sa, NULL) != 0) return -1;
  struct itimerval it = {{0, 0}, {(time_t)seconds, (suseconds_t)((seconds - floor(seconds)) * 1e6)}};
  if (it.it_value.tv_sec == 0 && it.it_value.tv_usec == 0) it.it_value.tv_usec = 1;
  return setitimer(ITIMER_REAL, &it, NULL);
}

/* ---- option parsing ---- */

typedef struct {
  const char *name; /* long name without "--"; NULL ends a table */
  char short_name;  /* 0 if none */
  int has_arg;      /* takes a value */
  int id;           /* returned by next_arg; below 32 */
  int repeats;      /* may be given more than once (--in, --param, --border: one per NAME) */
} Opt;

enum { ARG_END = 0, ARG_POS = -1, ARG_BAD = -2 };

typedef struct {
  const char *cmd;  /* command name, for messages */
  const Opt *opts;
  char **argv;
  int argc, i;
  int opts_done;    /* "--" seen: the rest are positional */
  unsigned seen;    /* bit id: option id was given */
} ArgIter;

/* Next argument: an option's id (value, if any, in *val), ARG_POS (text in *val),
 * ARG_END, or ARG_BAD after printing a usage error. */
static int next_arg(ArgIter *it, const char **val) {
  *val = NULL;
  if (it->i >= it->argc) return ARG_END;
  const char *s = it->argv[it->i++];
  if (it->opts_done || s[0] != '-' || s[1] == '\0') {
    *val = s;
    return ARG_POS;
  }
  if (strcmp(s, "--") == 0) {
    it->opts_done = 1;
    return next_arg(it, val);
  }
  const Opt *o;
  const char *inline_val = NULL;
  if (s[1] == '-') {
    const char *name = s + 2, *eq = strchr(name, '=');
    size_t len = eq ? (size_t)(eq - name) : strlen(name);
    for (o = it->opts; o->name; o++)
      if (strlen(o->name) == len && strncmp(o->name, name, len) == 0) break;
    if (eq) inline_val = eq + 1;
  } else {
    for (o = it->opts; o->name; o++)
      if (o->short_name && o->short_name == s[1]) break;
    if (s[2]) inline_val = s + 2; /* -oBASE */
  }
  if (!o->name) {
    fprintf(stderr, "pxl: error: unknown option '%s' for 'pxl %s'\n", s, it->cmd);
    fprintf(stderr, "Try 'pxl %s --help' for usage.\n", it->cmd);
    return ARG_BAD;
  }
  if (o->has_arg) {
    if (inline_val)
      *val = inline_val;
    else if (it->i < it->argc)
      *val = it->argv[it->i++];
    else {
      usage_error(it->cmd, "option '--%s' needs a value", o->name);
      return ARG_BAD;
    }
  } else if (inline_val) {
    usage_error(it->cmd, "option '--%s' takes no value (got '%s')", o->name, s);
    return ARG_BAD;
  }
  /* One rule for every command: a single-valued option given twice is an error, never
   * a silent choice between the two values. */
  if (!o->repeats && (it->seen & (1u << o->id))) {
    usage_error(it->cmd, "option '--%s' is given twice", o->name);
    return ARG_BAD;
  }
  it->seen |= 1u << o->id;
  return o->id;
}

/* Whether s[0..len) is an identifier of the kernel language. */
static int is_ident(const char *s, size_t len) {
  if (len == 0 || !(s[0] == '_' || (s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z')))
    return 0;
  for (size_t i = 1; i < len; i++)
    if (!(s[i] == '_' || (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
          (s[i] >= '0' && s[i] <= '9')))
      return 0;
  return 1;
}

/* Parses a decimal int in [lo, hi] from s[0..len); 0 on success. */
static int parse_int(const char *s, size_t len, long lo, long hi, int *out) {
  char buf[32];
  if (len == 0 || len >= sizeof buf) return -1;
  memcpy(buf, s, len);
  buf[len] = '\0';
  char *end;
  errno = 0;
  long v = strtol(buf, &end, 10);
  if (errno || *end || end == buf || v < lo || v > hi) return -1;
  *out = (int)v;
  return 0;
}

/* Parses "X,Y,W,H" (X, Y >= 0; W, H >= 1); 0 on success. */
static int parse_roi(const char *s, int roi[4]) {
  for (int k = 0; k < 4; k++) {
    const char *comma = strchr(s, ',');
    size_t len = comma ? (size_t)(comma - s) : strlen(s);
    if ((k < 3) != (comma != NULL)) return -1;
    if (parse_int(s, len, k < 2 ? 0 : 1, INT_MAX, &roi[k])) return -1;
    s += len + 1;
  }
  return 0;
}

/* Splits "NAME=VALUE"; *name is a new string (free it). 0 on success. */
static int split_pair(const char *s, char **name, const char **value) {
  const char *eq = strchr(s, '=');
  if (!eq || !is_ident(s, (size_t)(eq - s))) return -1;
  *name = strndup(s, (size_t)(eq - s));
  *value = eq + 1;
  return *name ? 0 : -1;
}

/* The extension of path's file name without the dot, or "". */
static const char *extension(const char *path) {
  const char *slash = strrchr(path, '/');
  const char *base = slash ? slash + 1 : path;
  const char *dot = strrchr(base, '.');
  return dot && dot != base ? dot + 1 : "";
}

/* ---- files ---- */

/* Saves the count images of res to outs[] all or none: each is written beside its file
 * under a temporary name (its extension kept, for the format), and only when every one
 * was written are they renamed into place; otherwise the temporary files are removed
 * and no --out file is touched. */
static int save_all(pxl_context *ctx, pxl_run_result *res, const char *const *outs, int count) {
  char(*tmp)[PATH_MAX] = saved_tmp;
  nsaved_tmp = 0;
  for (int k = 0; k < count; k++) {
    int n = snprintf(tmp[k], sizeof tmp[k], "%s.pxl-%ld.%s", outs[k], (long)getpid(), extension(outs[k]));
    int st = PXL_OK;
    if (n < 0 || (size_t)n >= sizeof tmp[k])
      error("--out '%s': the path is too long for a temporary name beside it", outs[k]);
    else
      st = pxl_image_save(ctx, pxl_result_image_at(res, k), tmp[k]);
    print_warnings(ctx);
    if (n < 0 || (size_t)n >= sizeof tmp[k] || st) {
      remove_saved_tmp();
      nsaved_tmp = 0;
      char what[PATH_MAX + 64];
      snprintf(what, sizeof what, "--out '%s' (no image saved)", outs[k]);
      return st ? fail(ctx, st, what) : RC_IO;
    }
    nsaved_tmp = k + 1;
  }
  for (int k = 0; k < count; k++) {
    if (rename(tmp[k], outs[k]) == 0) continue;
    error("cannot rename '%s' to '%s': %s (%d of %d images saved)", tmp[k], outs[k], strerror(errno), k, count);
    for (int j = k; j < count; j++) remove(tmp[j]);
    nsaved_tmp = 0;
    return RC_IO;
  }
  nsaved_tmp = 0;
  return RC_OK;
}

/* A canonical name for path: realpath of the file when it exists, else realpath of its
 * directory plus its file name. NULL if neither resolves. Free the result. */
static char *canon_path(const char *path) {
  char *r = realpath(path, NULL);
  if (r) return r;
  const char *slash = strrchr(path, '/');
  const char *base = slash ? slash + 1 : path;
  if (!*base || strcmp(base, ".") == 0 || strcmp(base, "..") == 0) return NULL;
  char *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
  char *rdir = dir ? realpath(dir, NULL) : NULL;
  free(dir);
  if (!rdir) return NULL;
  size_t n = strlen(rdir) + strlen(base) + 2;
  char *out = malloc(n);
  if (out) snprintf(out, n, "%s%s%s", rdir, strcmp(rdir, "/") == 0 ? "" : "/", base);
  free(rdir);
  return out;
}

/* Whether paths a and b name the same file: by device and inode when both exist (so
 * hard and symbolic links count), else by canonical name. */
static int same_file(const char *a, const char *b) {
  struct stat sa, sb;
  if (stat(a, &sa) == 0 && stat(b, &sb) == 0)
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  char *ca = canon_path(a), *cb = canon_path(b);
  int same = ca && cb && strcmp(ca, cb) == 0;
  free(ca);
  free(cb);
  return same;
}

/* Writes the histogram bins as CSV: "bin,count" (sums; "bin,min" or "bin,max" for minima or
 * maxima per bin) then one "INDEX,VALUE" line per bin; integer bins exactly, an empty bin of
 * minima or maxima (its identity) as an empty field. */
static void print_csv(FILE *f, const pxl_run_result *res) {
  int n = 0, is_float = 0, op = pxl_result_bins_op(res);
  const double *bins = pxl_result_bins(res, &n, &is_float);
  const int64_t *ibins = pxl_result_bins_i64(res, NULL);
  fputs(op == PXL_BINS_MIN ? "bin,min\n" : op == PXL_BINS_MAX ? "bin,max\n" : "bin,count\n", f);
  for (int i = 0; i < n; i++) {
    int empty = op == PXL_BINS_MIN   ? (is_float ? bins[i] == INFINITY : ibins[i] == INT64_MAX)
                 : op == PXL_BINS_MAX ? (is_float ? bins[i] == -INFINITY : ibins[i] == INT64_MIN)
                                      : 0;
    if (empty)
      fprintf(f, "%d,\n", i);
    else if (is_float)
      fprintf(f, "%d,%.9g\n", i, bins[i]);
    else
      fprintf(f, "%d,%" PRId64 "\n", i, ibins[i]);
  }
}

/* Writes the CSV to path with the library's atomic writer (pxl_write_file): on failure
 * nothing is left behind and an existing file is untouched. Returns RC_OK, or an exit
 * code after printing the error. */
static int write_csv_atomic(pxl_context *ctx, const char *path, const pxl_run_result *res) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (!f) {
    error("%s: out of memory", path);
    return RC_RUN;
  }
  print_csv(f, res);
  if (fclose(f) != 0 || !text) {
    free(text);
    error("%s: out of memory", path);
    return RC_RUN;
  }
  int st = pxl_write_file(ctx, path, text, len);
  free(text);
  return st ? fail(ctx, st, NULL) : RC_OK;
}

/* Compiles path into *prog; prints the diagnostics and returns the exit code on failure. */
static int load_program(pxl_context *ctx, const char *path, pxl_program **prog) {
  int st = pxl_program_from_file(ctx, path, prog);
  print_warnings(ctx);
  return st ? fail(ctx, st, NULL) : RC_OK;
}

/* ---- pxl run ---- */

enum { O_IN = 1, O_OUT, O_PARAM, O_BORDER, O_DEVICE, O_THREADS, O_ROI, O_TIME, O_TIME_LIMIT, O_FUSE, O_NO_FUSE, O_UNFUSED, O_PLANES, O_IN_FLIGHT, O_REPEAT, O_HELP };

static const Opt RUN_OPTS[] = {
    {"in", 0, 1, O_IN, 1},         {"out", 'o', 1, O_OUT, 1},         {"param", 0, 1, O_PARAM, 1},
    {"border", 0, 1, O_BORDER, 1}, {"device", 0, 1, O_DEVICE, 0},     {"threads", 0, 1, O_THREADS, 0},
    {"roi", 0, 1, O_ROI, 0},       {"time", 0, 0, O_TIME, 0},         {"time-limit", 0, 1, O_TIME_LIMIT, 0},
    {"fuse", 0, 1, O_FUSE, 0},     {"no-fuse", 0, 0, O_NO_FUSE, 0},  {"unfused", 0, 1, O_UNFUSED, 0},
    {"planes", 0, 1, O_PLANES, 0}, {"in-flight", 0, 1, O_IN_FLIGHT, 0}, {"repeat", 0, 1, O_REPEAT, 0},
    {"help", 'h', 0, O_HELP, 1},
    {NULL, 0, 0, 0, 0}};

typedef struct {
  char *name;       /* parameter name; "" for a bare --in (first image parameter) */
  const char *path; /* file, or the value text for --param / --border */
  pxl_image *img;   /* loaded image (--in only) */
  pxl_image *view;  /* its --roi view, or NULL */
  char *list;       /* --param NAME=@FILE: the file's text (heap); NAME=V,V,...: NULL, path is the list */
  int is_list;      /* --param of an array parameter: a list, or @FILE */
} Binding;

typedef struct {
  const char *file, *entry, *out, *device; /* out: the first --out (outs[0]) */
  const char *outs[8]; /* every --out in order: one per output of a kernel with several */
  int nout;
  int threads;      /* -1: library default */
  int fusion;       /* PXL_FUSE_AUTO, _OFF, _ALL */
  const char *unfused; /* --unfused: stage names, or NULL */
  int roi[4], has_roi, time;
  int repeat;       /* --repeat N: runs of the entry (0: not given, one run) */
  int luma_only;    /* --planes y: of a y4m stream, the Y plane only */
  int in_flight;    /* --in-flight N: runs in flight over a y4m stream (0: the device's choice; 1: in turn) */
  int has_in_flight; /* --in-flight was given */
  double time_limit;           /* seconds; 0: none */
  const char *time_limit_text; /* as given, for the message */
  Binding *ins, *params, *borders;
  int nin, nparam, nborder;
} RunOpts;

/* Adds a NAME=VALUE binding to list (*n entries), refusing a repeated name. */
static int add_pair(const char *opt, const char *text, Binding *list, int *n) {
  char *name;
  const char *value;
  if (split_pair(text, &name, &value))
    return usage_error("run", "--%s needs NAME=VALUE, got '%s'", opt, text);
  for (int k = 0; k < *n; k++)
    if (strcmp(list[k].name, name) == 0) {
      free(name);
      return usage_error("run", "--%s %s is given twice", opt, list[k].name);
    }
  list[*n].name = name;
  list[*n].path = value;
  ++*n;
  return RC_OK;
}

/* Adds an --in binding: "NAME=PATH" when the text before '=' is an identifier. */
static int add_input(const char *text, RunOpts *o) {
  const char *eq = strchr(text, '=');
  Binding *b = &o->ins[o->nin];
  if (eq && is_ident(text, (size_t)(eq - text))) {
    b->name = strndup(text, (size_t)(eq - text));
    b->path = eq + 1;
  } else {
    b->name = strdup("");
    b->path = text;
  }
  if (!b->name) {
    error("out of memory");
    return RC_RUN;
  }
  if (!*b->path) {
    free(b->name);
    return usage_error("run", "--in needs a file name, got '%s'", text);
  }
  for (int k = 0; k < o->nin; k++)
    if (*b->name && strcmp(o->ins[k].name, b->name) == 0) {
      free(b->name);
      return usage_error("run", "--in %s is given twice", o->ins[k].name);
    }
  o->nin++;
  return RC_OK;
}

/* Which option value check_value checks, with the library's own parser of it. */
typedef enum { CHECK_DEVICE, CHECK_PARAM, CHECK_BORDER, CHECK_ARRAY } ValueKind;

/* The most bytes of an --param NAME=@FILE list (4096 values with room for long ones). */
#define LIST_FILE_MAX (1 << 20)

/* Reads the list file of --param NAME=@FILE into b->list: a regular file of at most
 * LIST_FILE_MAX bytes of text (no NUL). RC_USAGE with a message naming the file. */
static int read_list_file(Binding *b, const char *path) {
  if (!*path) return usage_error("run", "--param %s=@: give a file name after '@'", b->name);
  FILE *f = fopen(path, "rb");
  if (!f) return usage_error("run", "--param %s=@%s: %s", b->name, path, strerror(errno));
  struct stat st;
  if (fstat(fileno(f), &st) || !S_ISREG(st.st_mode)) {
    fclose(f);
    return usage_error("run", "--param %s=@%s: not a regular file", b->name, path);
  }
  char *text = malloc(LIST_FILE_MAX + 1);
  if (!text) {
    fclose(f);
    error("out of memory");
    return RC_RUN;
  }
  size_t n = fread(text, 1, LIST_FILE_MAX + 1, f);
  int bad = ferror(f);
  fclose(f);
  if (bad || n > LIST_FILE_MAX || memchr(text, 0, n)) {
    free(text);
    return usage_error("run", "--param %s=@%s: %s", b->name, path,
                       bad ? "cannot read it" : n > LIST_FILE_MAX ? "larger than 1 MiB" : "not a text file (a NUL byte)");
  }
  text[n] = 0;
  b->list = text;
  return RC_OK;
}

/* Checks an option value against the library's grammar for it, on a scratch context
 * that loads nothing: a device name (pxl_set_device), a number (pxl_args_scalar_text),
 * a border mode (pxl_args_border). Returns RC_OK, or RC_USAGE after printing the
 * library's message. So a malformed value is a usage error before anything runs, and
 * the grammar lives in one place. */
static int check_value(ValueKind kind, const char *opt, const char *name, const char *value) {
  pxl_context *probe = pxl_context_new();
  pxl_args *args = probe ? pxl_args_new(probe) : NULL;
  if (!args) {
    pxl_context_free(probe);
    error("out of memory");
    return RC_RUN;
  }
  int st = kind == CHECK_DEVICE   ? pxl_set_device(probe, value)
           : kind == CHECK_PARAM  ? pxl_args_scalar_text(args, name, value)
           : kind == CHECK_ARRAY  ? pxl_args_array_text(args, name, value)
                                  : pxl_args_border(args, name, value);
  int rc = RC_OK;
  if (st == PXL_ENOMEM) {
    error("out of memory");
    rc = RC_RUN;
  } else if (st) {
    const char *msg = pxl_errmsg(probe);
    if (kind == CHECK_ARRAY)
      rc = usage_error("run", "--%s %s: %s", opt, name, *msg ? msg : status_text(st));
    else if (name)
      rc = usage_error("run", "--%s %s=%s: %s", opt, name, value, *msg ? msg : status_text(st));
    else
      rc = usage_error("run", "--%s %s: %s", opt, value, *msg ? msg : status_text(st));
  }
  pxl_args_free(args);
  pxl_context_free(probe);
  return rc;
}

/* Parses the arguments of `pxl run` into o; returns RC_OK, -1 after printing the help,
 * or an exit code after printing a usage error. */
static int parse_run(int argc, char **argv, RunOpts *o) {
  ArgIter it = {"run", RUN_OPTS, argv, argc, 0, 0, 0};
  const char *v;
  int id, rc;
  while ((id = next_arg(&it, &v)) != ARG_END) {
    switch (id) {
    case ARG_BAD: return RC_USAGE;
    case ARG_POS:
      if (!o->file)
        o->file = v;
      else if (!o->entry)
        o->entry = v;
      else
        return usage_error("run", "unexpected argument '%s' (FILE.pxl and ENTRY are '%s' and '%s')",
                           v, o->file, o->entry);
      break;
    case O_IN:
      if ((rc = add_input(v, o))) return rc;
      break;
    case O_OUT:
      if (!*v) return usage_error("run", "--out needs a file name");
      if (o->nout == 8)
        return usage_error("run", "--out is given more than 8 times (a kernel has at most 8 outputs)");
      o->outs[o->nout++] = v;
      o->out = o->outs[0];
      break;
    case O_PARAM:
    {
      if ((rc = add_pair("param", v, o->params, &o->nparam))) return rc;
      Binding *b = &o->params[o->nparam - 1];
      /* an array parameter's values: a list with a comma, or @FILE */
      b->is_list = b->path[0] == '@' || strchr(b->path, ',');
      if (b->path[0] == '@' && (rc = read_list_file(b, b->path + 1))) return rc;
      if ((rc = check_value(b->is_list ? CHECK_ARRAY : CHECK_PARAM, "param", b->name, b->list ? b->list : b->path)))
        return rc;
      break;
    }
    case O_BORDER:
      if ((rc = add_pair("border", v, o->borders, &o->nborder))) return rc;
      if ((rc = check_value(CHECK_BORDER, "border", o->borders[o->nborder - 1].name,
                            o->borders[o->nborder - 1].path)))
        return rc;
      break;
    case O_DEVICE:
      if ((rc = check_value(CHECK_DEVICE, "device", NULL, v))) return rc;
      o->device = v;
      break;
    case O_THREADS:
      if (parse_int(v, strlen(v), 0, 4096, &o->threads))
        return usage_error("run", "--threads needs a number from 0 to 4096, got '%s'", v);
      break;
    case O_FUSE:
      if (!strcmp(v, "auto")) o->fusion = PXL_FUSE_AUTO;
      else if (!strcmp(v, "off")) o->fusion = PXL_FUSE_OFF;
      else if (!strcmp(v, "all")) o->fusion = PXL_FUSE_ALL;
      else return usage_error("run", "--fuse needs auto, off or all, got '%s'", v);
      break;
    case O_NO_FUSE:
      o->fusion = PXL_FUSE_OFF;
      break;
    case O_UNFUSED:
      o->unfused = v;
      break;
    case O_ROI:
      if (parse_roi(v, o->roi))
        return usage_error("run", "--roi needs X,Y,W,H (X, Y >= 0; W, H >= 1), got '%s'", v);
      o->has_roi = 1;
      break;
    case O_PLANES:
      if (!strcmp(v, "all")) o->luma_only = 0;
      else if (!strcmp(v, "y")) o->luma_only = 1;
      else return usage_error("run", "--planes needs all or y, got '%s'", v);
      break;
    case O_IN_FLIGHT: {
      char *end;
      errno = 0;
      long n = strtol(v, &end, 10);
      if (errno || end == v || *end || n < 0 || n > PXL_QUEUE_MAX_DEPTH)
        return usage_error("run", "--in-flight needs a number of runs from 0 (the device's choice) to %d, got '%s'",
                           PXL_QUEUE_MAX_DEPTH, v);
      o->in_flight = (int)n;
      o->has_in_flight = 1;
      break;
    }
    case O_TIME: o->time = 1; break;
    case O_REPEAT:
      if (parse_int(v, strlen(v), 1, 100000, &o->repeat))
        return usage_error("run", "--repeat needs a number of runs from 1 to 100000, got '%s'", v);
      break;
    case O_TIME_LIMIT:
    {
      char *end;
      errno = 0;
      double t = strtod(v, &end);
      if (end == v || *end || errno || !isfinite(t) || t <= 0 || t > 1e6)
        return usage_error("run", "--time-limit needs a number of seconds above 0 (at most 1e6), got '%s'", v);
      o->time_limit = t;
      o->time_limit_text = v;
      break;
    }
    case O_HELP: fputs(HELP_RUN, stdout); return -1;
    }
  }
  if (!o->file) return usage_error("run", "missing FILE.pxl");
  if (o->nin > 1)
    for (int k = 0; k < o->nin; k++)
      if (!*o->ins[k].name)
        return usage_error("run", "--in '%s' needs NAME= when more than one --in is given",
                           o->ins[k].path);
  if (o->has_roi && o->nin == 0) return usage_error("run", "--roi needs an --in image");
  for (int j = 0; j < o->nout; j++) {
    const char *out = o->outs[j];
    if (strcasecmp(extension(out), "csv") != 0 && !pxl_image_save_format(out) && !pxl_frames_is_output(out))
      return usage_error("run",
                         "--out '%s': unknown file type; use .png, .jpg, .jpeg, .pgm, .ppm, "
                         ".pnm, .tif, .tiff or .npy for an image, .csv for a histogram, .y4m "
                         "or a %%d pattern (frame_%%04d.png) for a stream of frames",
                         out);
    /* Refuse to overwrite an input, or an output with another, before anything is
     * loaded or run ("-": standard output, a stream, never a file) */
    if (strcmp(out, "-") == 0) continue;
    if (same_file(out, o->file)) {
      error("--out '%s' is the kernel source '%s'; refusing to overwrite it", out, o->file);
      return RC_USAGE;
    }
    for (int k = 0; k < o->nin; k++)
      if (same_file(out, o->ins[k].path)) {
        error("--out '%s' is the same file as input '%s'; refusing to overwrite an input",
              out, o->ins[k].path);
        return RC_USAGE;
      }
    for (int k = 0; k < j; k++)
      if (same_file(out, o->outs[k]) || strcmp(out, o->outs[k]) == 0) {
        error("--out '%s' is given twice (outputs %d and %d)", out, k + 1, j + 1);
        return RC_USAGE;
      }
  }
  return RC_OK;
}

/* Prints a reduction's value after `lead` as "NAME = VALUE" (integers exactly, floats
 * %.9g) and its position " at (X, Y)" moved by (dx, dy), then a newline. */
static void print_scalar(const char *lead, const char *name, const pxl_scalar_result *s, int dx, int dy) {
  printf("%s%s = ", lead, name);
  if (s->is_float)
    printf("%.9g", s->value);
  else
    printf("%" PRId64, s->ivalue);
  if (s->has_pos) printf(" at (%d, %d)", s->x + dx, s->y + dy);
  putchar('\n');
}

/* Prints or saves the result of the run; returns the exit code. */
static int emit_result(pxl_context *ctx, pxl_run_result *res, const RunOpts *o) {
  const char *name = pxl_result_name(res);
  if (!name) name = o->entry ? o->entry : "result";
  int is_csv = o->out && strcasecmp(extension(o->out), "csv") == 0;
  switch (pxl_result_kind_of(res)) {
  case PXL_RESULT_IMAGE: {
    int count = pxl_result_image_count(res);
    if (!o->out) return usage_error("run", "'%s' produces an image: give --out PATH", name);
    if (o->nout != count) /* checked before the run (check_output_file); kept for safety */
      return usage_error("run", "'%s' produces %d image%s; --out is given %d time%s", name, count,
                         count == 1 ? "" : "s", o->nout, o->nout == 1 ? "" : "s");
    for (int k = 0; k < count; k++) {
      if (strcasecmp(extension(o->outs[k]), "csv") == 0)
        return usage_error("run", "'%s' produces an image; --out '%s' is for histograms", name,
                           o->outs[k]);
    }
    if (count == 1) {
      int st = pxl_image_save(ctx, pxl_result_image_at(res, 0), o->outs[0]);
      print_warnings(ctx);
      return st ? fail(ctx, st, NULL) : RC_OK;
    }
    return save_all(ctx, res, o->outs, count);
  }
  case PXL_RESULT_SCALAR: {
    pxl_scalar_result s;
    int st = pxl_result_scalar(res, &s);
    if (st) return fail(ctx, st, NULL);
    if (o->out)
      fprintf(stderr, "pxl: note: --out '%s' ignored: '%s' is a reduction, printed below\n",
              o->out, name);
    print_scalar("", name, &s, o->has_roi ? o->roi[0] : 0, o->has_roi ? o->roi[1] : 0);
    return RC_OK;
  }
  case PXL_RESULT_HISTOGRAM: {
    int n = 0, is_float = 0;
    const double *bins = pxl_result_bins(res, &n, &is_float);
    if (!bins && n > 0) return fail(ctx, PXL_ERROR, NULL);
    if (is_csv) return write_csv_atomic(ctx, o->out, res);
    if (o->out)
      fprintf(stderr,
              "pxl: note: --out '%s' ignored: '%s' is a histogram, printed below as CSV "
              "(name a .csv file to write it there)\n",
              o->out, name);
    print_csv(stdout, res);
    return RC_OK;
  }
  }
  error("'%s' produced a result of an unknown kind", name);
  return RC_RUN;
}

/* Refuses (exit 2), before anything runs, an --out image file whose format cannot store
 * the output type and channel count of entry `entry` (an f32 result to .png): the run
 * could take long and its result would be lost. The inputs are not loaded yet, except
 * for a generic entry, whose output type depends on theirs. Returns the exit code. */
static int check_output_file(pxl_context *ctx, pxl_program *prog, int entry, const RunOpts *o) {
  pxl_type type;
  int channels;
  int count = pxl_program_entry_output_count(prog, entry);
  if (o->nout > 1 && count == 0) {
    error("--out is given %d times, but '%s' produces no image", o->nout, pxl_program_entry_name(prog, entry));
    return RC_USAGE;
  }
  if (!o->out || count == 0) return RC_OK;
  if (o->nout != count) { /* one --out per output, in order */
    if (count == 1)
      error("--out is given %d times, but '%s' produces one image", o->nout, pxl_program_entry_name(prog, entry));
    else
      error("'%s' produces %d images; give --out once for each, in order (--out is given %d time%s)",
            pxl_program_entry_name(prog, entry), count, o->nout, o->nout == 1 ? "" : "s");
    return RC_USAGE;
  }
  for (int k = 0; k < count; k++) {
    const char *oname = "";
    if (strcasecmp(extension(o->outs[k]), "csv") == 0 ||
        !pxl_program_entry_output_at(prog, entry, k, &type, &channels, &oname))
      continue;
    if (pxl_image_save_check(ctx, o->outs[k], type, channels) == PXL_OK) continue;
    error("--out: %s; '%s' produces %s%s%s%s with %d channel%s (.tif, .tiff and .npy store every type)",
          pxl_errmsg(ctx), pxl_program_entry_name(prog, entry), *oname ? "as output '" : "", oname,
          *oname ? "' " : "", pxl_type_name(type), channels, channels == 1 ? "" : "s");
    return RC_USAGE;
  }
  return RC_OK;
}

/* Binds the images of o (loaded; their --roi views) to args, --in number `sk` bound to
 * `frame` instead (a stream's plane; -1: none), then the scalar parameters and border
 * modes; returns the exit code. */
static int bind_args(pxl_context *ctx, const RunOpts *o, pxl_args *args, int sk, pxl_image *frame) {
  char what[256];
  int st;
  for (int k = 0; k < o->nin; k++) {
    const Binding *b = &o->ins[k];
    if ((st = pxl_args_image(args, b->name, k == sk ? frame : b->view ? b->view : b->img))) {
      snprintf(what, sizeof what, "--in %s%s%s", b->name, *b->name ? "=" : "", b->path);
      return fail(ctx, st, what);
    }
  }
  for (int k = 0; k < o->nparam; k++) {
    const Binding *b = &o->params[k];
    st = b->is_list ? pxl_args_array_text(args, b->name, b->list ? b->list : b->path)
                    : pxl_args_scalar_text(args, b->name, b->path);
    if (st) {
      snprintf(what, sizeof what, "--param %s=%s", o->params[k].name, o->params[k].path);
      return fail(ctx, st, what);
    }
  }
  for (int k = 0; k < o->nborder; k++) {
    if ((st = pxl_args_border(args, o->borders[k].name, o->borders[k].path))) {
      snprintf(what, sizeof what, "--border %s=%s", o->borders[k].name, o->borders[k].path);
      return fail(ctx, st, what);
    }
  }
  return RC_OK;
}

/* Loads the --in images (all but number sk, a stream) and their --roi views; returns the
 * exit code. */
static int load_inputs(pxl_context *ctx, RunOpts *o, int sk) {
  char what[256];
  for (int k = 0; k < o->nin; k++) {
    Binding *b = &o->ins[k];
    if (k == sk) continue;
    int st = pxl_image_load(ctx, b->path, &b->img);
    if (st) return fail(ctx, st, NULL);
    if (o->has_roi &&
        (st = pxl_image_view(ctx, b->img, o->roi[0], o->roi[1], o->roi[2], o->roi[3], &b->view))) {
      snprintf(what, sizeof what, "--roi %d,%d,%d,%d of '%s' (%dx%d)", o->roi[0], o->roi[1], o->roi[2], o->roi[3],
               b->path, pxl_image_width(b->img), pxl_image_height(b->img));
      return fail(ctx, st, what);
    }
  }
  return RC_OK;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Prints the times of --time: with several runs the best of those after the first (which
 * may compile, and allocates what later runs reuse), then what they spread over; sorts
 * ms[1..runs). */
static void print_times(double *ms, int runs) {
  if (runs > 1) {
    qsort(ms + 1, (size_t)runs - 1, sizeof *ms, cmp_double);
    fprintf(stderr, "pxl: time: %.3f ms\n", ms[1]);
    fprintf(stderr, "pxl: times: first %.3f ms; of the %d after it: best %.3f ms, median %.3f ms, worst %.3f ms\n",
            ms[0], runs - 1, ms[1], ms[1 + (runs - 1) / 2], ms[runs - 1]);
  } else {
    fprintf(stderr, "pxl: time: %.3f ms\n", ms[0]);
  }
}

static double now_seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* The progress line of a stream on a terminal: frames done (of the count when known),
 * frames per second, the time left; redrawn in place at most 10 times a second. */
typedef struct {
  int on;
  double t0, shown;
  int64_t count;
} Progress;

static void progress_show(Progress *p, int64_t done, int last) {
  if (!p->on) return;
  double t = now_seconds();
  if (!last && t - p->shown < 0.1) return;
  p->shown = t;
  double fps = t > p->t0 ? (double)done / (t - p->t0) : 0;
  fprintf(stderr, "\rpxl: frame %" PRId64, done);
  if (p->count > 0) fprintf(stderr, "/%" PRId64, p->count);
  fprintf(stderr, "  %.1f fps", fps);
  if (p->count > 0 && fps > 0 && done < p->count) {
    long left = lround((double)(p->count - done) / fps);
    fprintf(stderr, "  ETA %ld:%02ld", left / 60, left % 60);
  }
  fputs(last ? "          \n" : "          ", stderr);
}

/* Runs the entry on every frame of the stream --in number sk: per frame, on each of its
 * planes (--planes y: a y4m stream's Y plane only), the results written as a frame of
 * --out (a stream too) or, for a reduction, printed per plane. One frame in memory at a
 * time; --out appears only when every frame is done. Returns the exit code. */
/* The frames of a y4m stream after the first, through a queue of runs in flight
 * (pxl_queue): on a GPU the upload of one plane, the run of another and the download of
 * a third overlap, from and to page-locked images; on the CPU planes run in parallel.
 * A ring of frame slots (the queue's depth plus one) holds each frame's planes and
 * results until it is written; `tmpl` are the first frame's planes and results (their
 * sizes and types). Jobs complete in order: a frame is written once its last plane is
 * popped. Returns the exit code; *frames and *t_run grow with the frames done. */
typedef struct {
  pxl_image *in[3], *out[3];
  int64_t num;  /* the frame number in this slot */
} Slot;

static int stream_queued(pxl_context *ctx, RunOpts *o, pxl_program *prog, int entry0, int sk, pxl_frames *in,
                         pxl_frames *out, int nrun, pxl_image *const *tmpl_in, pxl_image *const *tmpl_out,
                         Progress *pg, int64_t *frames, double *t_run) {
  static const char *const plane_names[3] = {"Y", "Cb", "Cr"};
  int nplanes = pxl_frames_planes(in), rc = RC_OK, st;
  pxl_queue *q = NULL;
  Slot ring[PXL_QUEUE_MAX_DEPTH + 1]; /* the queue's depth, and the frame being read */
  int R = 0;
  memset(ring, 0, sizeof ring);
  if ((st = pxl_queue_new(ctx, prog, o->entry, o->in_flight, &q))) return fail(ctx, st, "a queue of runs");
  R = pxl_queue_depth(q) + 1;
  for (int s = 0; s < R && !rc; s++)
    for (int p = 0; p < nplanes && !rc; p++) {
      const pxl_image *t = tmpl_in[p], *r = p < nrun ? tmpl_out[p] : NULL;
      st = pxl_image_create_pinned(ctx, pxl_image_width(t), pxl_image_height(t), pxl_image_type(t),
                                   pxl_image_channels(t), &ring[s].in[p]);
      if (!st && r)
        st = pxl_image_create_pinned(ctx, pxl_image_width(r), pxl_image_height(r), pxl_image_type(r),
                                     pxl_image_channels(r), &ring[s].out[p]);
      if (st) rc = fail(ctx, st, NULL);
    }
  int64_t pushed = 0, popped = 0, nread = 0; /* jobs (frame-major, nrun a frame); frames read */
  int ended = 0;
  double t0 = now_seconds();
  /* a step at a time: push the next plane of a frame read, read the next frame into a
   * free slot, or (neither possible) pop the oldest job */
  while (!rc) {
    int mid = pushed < nread * nrun; /* a frame read whose planes are not all pushed */
    if (mid && pxl_queue_pending(q) < pxl_queue_depth(q)) {
      Slot *sl = &ring[(pushed / nrun) % R];
      int p = (int)(pushed % nrun);
      pxl_args *args = pxl_args_new(ctx);
      if (!args) rc = fail(ctx, PXL_ENOMEM, NULL);
      if (!rc) rc = bind_args(ctx, o, args, sk, sl->in[p]);
      if (!rc && sl->out[p] && (st = pxl_args_output(args, sl->out[p]))) rc = fail(ctx, st, NULL);
      if (rc) {
        pxl_args_free(args);
        break;
      }
      if ((st = pxl_queue_push(q, args))) rc = fail(ctx, st, NULL);
      else pushed++;
      continue;
    }
    if (!mid && !ended && nread - popped / nrun < R) {
      Slot *sl = &ring[nread % R];
      int got = 0;
      if ((st = pxl_frames_read_into(ctx, in, sl->in, &got))) {
        rc = fail(ctx, st, NULL);
        break;
      }
      if (got) sl->num = pxl_frames_number(in), nread++;
      else ended = 1;
      continue;
    }
    if (popped == pushed) break; /* the end: every frame read is written */
    pxl_run_result *res = NULL;
    Slot *sl = &ring[(popped / nrun) % R];
    int p = (int)(popped % nrun);
    st = pxl_queue_pop(q, &res);
    print_warnings(ctx);
    if (st) {
      char what[64];
      snprintf(what, sizeof what, "frame %" PRId64 "%s%s", sl->num, nplanes > 1 ? " plane " : "",
               nplanes > 1 ? plane_names[p] : "");
      rc = fail(ctx, st, what);
      break;
    }
    if (!out) { /* a value per frame and plane, printed */
      pxl_scalar_result sv;
      if ((st = pxl_result_scalar(res, &sv))) {
        pxl_result_free(res);
        rc = fail(ctx, st, NULL);
        break;
      }
      char lead[64];
      snprintf(lead, sizeof lead, "frame %" PRId64 "%s%s: ", sl->num, nplanes > 1 ? " " : "",
               nplanes > 1 ? plane_names[p] : "");
      print_scalar(lead, pxl_result_name(res) ? pxl_result_name(res) : pxl_program_entry_name(prog, entry0), &sv, 0, 0);
    }
    pxl_result_free(res);
    if (++popped % nrun == 0) { /* the frame's last plane */
      if (out && (st = pxl_frames_write(ctx, out, sl->num, sl->out, nrun))) {
        rc = fail(ctx, st, NULL);
        break;
      }
      if (pg->count < 0) pg->count = pxl_frames_count(in);
      progress_show(pg, ++*frames, 0);
    }
  }
  *t_run += now_seconds() - t0;
  pxl_queue_free(q);
  for (int s = 0; s < R; s++)
    for (int p = 0; p < 3; p++) pxl_image_free(ring[s].in[p]), pxl_image_free(ring[s].out[p]);
  return rc;
}

static int run_stream(pxl_context *ctx, RunOpts *o, pxl_program *prog, int entry0, int sk) {
  const char *sname = o->ins[sk].path;
  pxl_frames *in = NULL, *out = NULL;
  pxl_image *planes[3] = {NULL, NULL, NULL}, *results[3] = {NULL, NULL, NULL};
  pxl_args *args = NULL;
  pxl_run_result *res = NULL;
  int rc = RC_OK, st;
  for (int k = sk + 1; k < o->nin; k++) /* (do_run found those before sk not streams) */
    if (pxl_frames_is_stream(o->ins[k].path))
      return usage_error("run", "--in '%s' and '%s' are both streams of frames; give one (the others still images)",
                         sname, o->ins[k].path);
  if (o->has_roi) return usage_error("run", "--roi is not available with a stream of frames ('%s')", sname);
  if (pxl_program_entry_output_count(prog, entry0) > 1)
    return usage_error("run", "'%s' produces several images; a stream of frames takes one", pxl_program_entry_name(prog, entry0));
  const char *sig = pxl_program_entry_signature(prog, entry0);
  if (sig && strncmp(sig, "histogram", 9) == 0)
    return usage_error("run", "'%s' is a histogram; over a stream of frames pxl runs kernels, pipelines and "
                       "reductions (run it on one frame: save it with --out frame_%%04d.png first)",
                       pxl_program_entry_name(prog, entry0));
  int makes_image = pxl_program_entry_makes_image(prog, entry0);
  if (makes_image && (!o->out || !pxl_frames_is_output(o->out)))
    return usage_error("run", "'%s' over the frames of '%s' makes frames: give --out NAME.y4m or --out NAME_%%04d.EXT",
                       pxl_program_entry_name(prog, entry0), sname);
  if (!makes_image && o->out)
    return usage_error("run", "'%s' gives a value per frame, printed: --out '%s' has nothing to take",
                       pxl_program_entry_name(prog, entry0), o->out);
  if ((rc = load_inputs(ctx, o, sk))) return rc;
  if ((st = pxl_frames_open(ctx, sname, &in))) return fail(ctx, st, NULL);
  int nplanes = pxl_frames_planes(in), nrun = o->luma_only ? 1 : nplanes;
  if (makes_image && nrun > 1 && pxl_frames_is_output(o->out) == 2) {
    rc = usage_error("run", "--out '%s' takes one image per frame and '%s' has %d planes: add --planes y for the "
                     "Y plane only, or write a .y4m", o->out, sname, nplanes);
    goto done;
  }
  if (makes_image) {
    pxl_type type;
    int channels;
    if (!pxl_program_entry_is_generic(prog, entry0) && pxl_program_entry_output(prog, entry0, &type, &channels) &&
        (st = pxl_frames_check_output(ctx, o->out, type, channels))) {
      error("--out: %s; '%s' produces %s with %d channel%s", pxl_errmsg(ctx), pxl_program_entry_name(prog, entry0),
            pxl_type_name(type), channels, channels == 1 ? "" : "s");
      rc = RC_USAGE;
      goto done;
    }
    if ((st = pxl_frames_create(ctx, o->out, in, &out))) {
      rc = fail(ctx, st, NULL);
      goto done;
    }
  }
  Progress pg = {isatty(STDERR_FILENO), now_seconds(), 0, pxl_frames_count(in)};
  double t_run = 0, t_first = 0; /* running the entry: all frames, the first frame */
  int64_t done_frames = 0;
  static const char *const plane_names[3] = {"Y", "Cb", "Cr"};
  for (;;) {
    int got = 0;
    if ((st = pxl_frames_read(ctx, in, planes, &got))) {
      rc = fail(ctx, st, NULL);
      goto done;
    }
    if (!got) break;
    int64_t num = pxl_frames_number(in);
    for (int p = 0; p < nrun; p++) {
      if (!(args = pxl_args_new(ctx))) {
        rc = fail(ctx, PXL_ENOMEM, NULL);
        goto done;
      }
      if ((rc = bind_args(ctx, o, args, sk, planes[p]))) goto done;
      double t0 = now_seconds();
      st = pxl_run(ctx, prog, o->entry, args, &res);
      t_run += now_seconds() - t0;
      if (done_frames == 0) t_first = t_run;
      print_warnings(ctx);
      if (st) {
        char what[64];
        snprintf(what, sizeof what, "frame %" PRId64 "%s%s", num, nplanes > 1 ? " plane " : "",
                 nplanes > 1 ? plane_names[p] : "");
        rc = fail(ctx, st, what);
        goto done;
      }
      if (makes_image) {
        results[p] = pxl_result_take_image(res);
      } else {
        pxl_scalar_result sv;
        if ((st = pxl_result_scalar(res, &sv))) {
          rc = fail(ctx, st, NULL);
          goto done;
        }
        char lead[64];
        snprintf(lead, sizeof lead, "frame %" PRId64 "%s%s: ", num, nplanes > 1 ? " " : "",
                 nplanes > 1 ? plane_names[p] : "");
        print_scalar(lead, pxl_result_name(res) ? pxl_result_name(res) : pxl_program_entry_name(prog, entry0), &sv, 0,
                     0);
      }
      pxl_result_free(res);
      res = NULL;
      pxl_args_free(args);
      args = NULL;
    }
    if (makes_image && (st = pxl_frames_write(ctx, out, num, results, nrun))) {
      rc = fail(ctx, st, NULL);
      goto done;
    }
    if (done_frames == 0 && o->in_flight != 1 && pxl_frames_is_stream(sname) == 1) {
      /* a y4m stream: its frames are one size; the rest through a queue of runs in flight */
      if (pg.count < 0) pg.count = pxl_frames_count(in);
      progress_show(&pg, ++done_frames, 0);
      if ((rc = stream_queued(ctx, o, prog, entry0, sk, in, out, nrun, planes, results, &pg, &done_frames, &t_run)))
        goto done;
      break;
    }
    for (int p = 0; p < 3; p++) {
      pxl_image_free(results[p]), results[p] = NULL;
      pxl_image_free(planes[p]), planes[p] = NULL;
    }
    if (pg.count < 0) pg.count = pxl_frames_count(in); /* known after the first frame, for some */
    progress_show(&pg, ++done_frames, 0);
  }
  progress_show(&pg, done_frames, 1);
  if (out && (st = pxl_frames_finish(ctx, out))) {
    rc = fail(ctx, st, NULL);
    goto done;
  }
  fflush(stdout);
  if (o->time) { /* the first frame apart: it pays for starting the device and compiling */
    fprintf(stderr, "pxl: time: %.3f ms (%" PRId64 " frames: the first %.3f ms", t_run * 1e3, done_frames, t_first * 1e3);
    if (done_frames > 1)
      fprintf(stderr, ", then %.3f ms a frame", (t_run - t_first) * 1e3 / (double)(done_frames - 1));
    fprintf(stderr, ")\npxl: device: %s\n", pxl_device_name(ctx));
  }
done:
  for (int p = 0; p < 3; p++) {
    pxl_image_free(results[p]);
    pxl_image_free(planes[p]);
  }
  pxl_result_free(res);
  pxl_args_free(args);
  pxl_frames_free(out);
  pxl_frames_free(in);
  return rc;
}

/* Loads the inputs, binds the arguments, runs and emits; returns the exit code. */
static int do_run(pxl_context *ctx, RunOpts *o) {
  pxl_program *prog = NULL;
  pxl_args *args = NULL;
  pxl_run_result *res = NULL;
  double *ms = NULL; /* the runs' times, ms */
  int rc, st;

  if (o->device && (st = pxl_set_device(ctx, o->device))) return fail(ctx, st, "--device");
  if (o->threads >= 0 && (st = pxl_set_threads(ctx, o->threads))) return fail(ctx, st, "--threads");
  if ((st = pxl_set_fusion(ctx, o->fusion))) return fail(ctx, st, "--fuse");
  if ((st = pxl_set_fusion_keep(ctx, o->unfused))) return usage_error("run", "--unfused: %s", pxl_errmsg(ctx));
  if ((rc = load_program(ctx, o->file, &prog))) return rc;
  const int entry0 = pxl_program_entry_find(prog, o->entry);
  const int generic = pxl_program_entry_is_generic(prog, entry0);
  int sk = -1; /* the --in that is a stream of frames */
  for (int k = 0; k < o->nin && sk < 0; k++)
    if (pxl_frames_is_stream(o->ins[k].path)) sk = k;
  if (sk >= 0) {
    rc = run_stream(ctx, o, prog, entry0, sk);
    goto done;
  }
  if (o->luma_only || o->has_in_flight) {
    rc = usage_error("run", "%s is for a stream of frames (a .y4m --in)", o->luma_only ? "--planes" : "--in-flight");
    goto done;
  }
  if (o->repeat && !o->time) {
    rc = usage_error("run", "--repeat is for timing: give --time too");
    goto done;
  }
  for (int j = 0; j < o->nout; j++)
    if (pxl_frames_is_output(o->outs[j])) {
      rc = usage_error("run", "--out '%s' is a stream of frames; the --in images are single images (give a .y4m "
                       "or a %%d pattern as --in)", o->outs[j]);
      goto done;
    }
  if (!generic && (rc = check_output_file(ctx, prog, entry0, o))) goto done;
  if (!(args = pxl_args_new(ctx))) {
    rc = fail(ctx, PXL_ENOMEM, NULL);
    goto done;
  }
  if ((rc = load_inputs(ctx, o, -1)) || (rc = bind_args(ctx, o, args, -1, NULL))) goto done;

  int entry = pxl_program_entry_for_args(prog, entry0, args);
  if (generic && (rc = check_output_file(ctx, prog, entry, o))) goto done;
  if (entry >= 0 && pxl_program_entry_makes_image(prog, entry) && !o->out) {
    rc = usage_error("run", "'%s' produces an image: give --out PATH", pxl_program_entry_name(prog, entry));
    goto done;
  }
  /* --repeat N: N runs, each result freed but the last's; the times of all but the
   * first (which may compile and allocates what later runs reuse) */
  int runs = o->repeat > 0 ? o->repeat : 1;
  st = PXL_OK;
  ms = calloc((size_t)runs, sizeof *ms);
  if (!ms) {
    rc = fail(ctx, PXL_ENOMEM, "out of memory");
    goto done;
  }
  for (int r = 0; r < runs && st == PXL_OK; r++) {
    pxl_result_free(res);
    res = NULL;
    double t0 = now_seconds();
    st = pxl_run(ctx, prog, o->entry, args, &res);
    ms[r] = (now_seconds() - t0) * 1e3;
    if (st) runs = r + 1;
  }
  print_warnings(ctx);
  if (o->time) {
    print_times(ms, runs);
    /* the device that ran it: after a fallback of "auto", not the one first picked */
    fprintf(stderr, "pxl: device: %s\n", st == PXL_OK ? pxl_result_device(res) : pxl_device_name(ctx));
  }
  if (st) {
    rc = fail(ctx, st, NULL);
    goto done;
  }
  rc = emit_result(ctx, res, o);

done:
  free(ms);
  pxl_result_free(res);
  pxl_args_free(args);
  for (int k = 0; k < o->nin; k++) {
    pxl_image_free(o->ins[k].view);
    pxl_image_free(o->ins[k].img);
    o->ins[k].view = o->ins[k].img = NULL;
  }
  pxl_program_free(prog);
  return rc;
}

/* pxl run FILE.pxl [ENTRY] --in [NAME=]PATH ... [--out PATH] [options] */
static int cmd_run(int argc, char **argv) {
  RunOpts o = {0};
  o.threads = -1;
  size_t cap = (size_t)argc + 1; /* no list can be longer than the argument count */
  o.ins = calloc(cap, sizeof *o.ins);
  o.params = calloc(cap, sizeof *o.params);
  o.borders = calloc(cap, sizeof *o.borders);
  int rc;
  if (!o.ins || !o.params || !o.borders) {
    error("out of memory");
    rc = RC_RUN;
  } else if ((rc = parse_run(argc, argv, &o)) == RC_OK) {
    pxl_context *ctx = NULL;
    if (o.time_limit > 0 && arm_time_limit(o.time_limit, o.time_limit_text)) {
      error("--time-limit: cannot start the timer: %s", strerror(errno));
      rc = RC_RUN;
    } else if (!(ctx = pxl_context_new())) {
      error("out of memory");
      rc = RC_RUN;
    } else {
      rc = do_run(ctx, &o);
      pxl_context_free(ctx);
    }
  } else if (rc < 0) {
    rc = RC_OK; /* --help */
  }
  for (int k = 0; k < o.nin; k++) free(o.ins[k].name);
  for (int k = 0; k < o.nparam; k++) {
    free(o.params[k].name);
    free(o.params[k].list);
  }
  for (int k = 0; k < o.nborder; k++) free(o.borders[k].name);
  free(o.ins);
  free(o.params);
  free(o.borders);
  return rc;
}

/* ---- pxl check ---- */

enum { O_EXPLAIN = 1, O_CHECK_HELP };

static const Opt CHECK_OPTS[] = {
    {"explain", 0, 0, O_EXPLAIN, 0}, {"help", 'h', 0, O_CHECK_HELP, 1}, {NULL, 0, 0, 0, 0}};

/* pxl check FILE.pxl [--explain] */
static int cmd_check(int argc, char **argv) {
  ArgIter it = {"check", CHECK_OPTS, argv, argc, 0, 0, 0};
  const char *v, *file = NULL;
  int id, explain = 0;
  while ((id = next_arg(&it, &v)) != ARG_END) {
    switch (id) {
    case ARG_BAD: return RC_USAGE;
    case ARG_POS:
      if (file) return usage_error("check", "unexpected argument '%s' (one FILE.pxl at a time)", v);
      file = v;
      break;
    case O_EXPLAIN: explain = 1; break;
    case O_CHECK_HELP: fputs(HELP_CHECK, stdout); return RC_OK;
    }
  }
  if (!file) return usage_error("check", "missing FILE.pxl");

  pxl_context *ctx = pxl_context_new();
  if (!ctx) {
    error("out of memory");
    return RC_RUN;
  }
  pxl_program *prog = NULL;
  int rc = load_program(ctx, file, &prog);
  if (rc == RC_OK) {
    int n = pxl_program_entry_count(prog);
    printf("%s: ok (%d entry point%s)\n", file, n, n == 1 ? "" : "s");
    for (int i = 0; i < n; i++) printf("  %s\n", pxl_program_entry_signature(prog, i));
    if (explain) {
      const char *text = pxl_program_explain(ctx, prog);
      print_warnings(ctx);
      if (!text) {
        rc = fail(ctx, PXL_ERROR, "--explain");
      } else {
        fputs(text, stdout);
        if (*text && text[strlen(text) - 1] != '\n') putchar('\n');
      }
    }
  }
  pxl_program_free(prog);
  pxl_context_free(ctx);
  return rc;
}

/* ---- pxl compile ---- */

enum { O_OUTPUT = 1, O_COMPILE_HELP };

static const Opt COMPILE_OPTS[] = {
    {"output", 'o', 1, O_OUTPUT, 0}, {"help", 'h', 0, O_COMPILE_HELP, 1}, {NULL, 0, 0, 0, 0}};

/* pxl compile FILE.pxl [-o BASE] */
static int cmd_compile(int argc, char **argv) {
  ArgIter it = {"compile", COMPILE_OPTS, argv, argc, 0, 0, 0};
  const char *v, *file = NULL, *base = NULL;
  int id;
  while ((id = next_arg(&it, &v)) != ARG_END) {
    switch (id) {
    case ARG_BAD: return RC_USAGE;
    case ARG_POS:
      if (file) return usage_error("compile", "unexpected argument '%s' (one FILE.pxl at a time)", v);
      file = v;
      break;
    case O_OUTPUT:
      if (!*v) return usage_error("compile", "-o needs a file name");
      base = v;
      break;
    case O_COMPILE_HELP: fputs(HELP_COMPILE, stdout); return RC_OK;
    }
  }
  if (!file) return usage_error("compile", "missing FILE.pxl");

  /* BASE.c / BASE.h; the default base is FILE without ".pxl". */
  size_t flen = strlen(file);
  char *def = NULL;
  if (!base) {
    size_t n = flen > 4 && strcmp(file + flen - 4, ".pxl") == 0 ? flen - 4 : flen;
    if (!(def = strndup(file, n))) {
      error("out of memory");
      return RC_RUN;
    }
    base = def;
  }
  size_t cap = strlen(base) + 3;
  char *cpath = malloc(cap), *hpath = malloc(cap);
  int rc = RC_OK;
  if (!cpath || !hpath) {
    error("out of memory");
    rc = RC_RUN;
    goto done;
  }
  snprintf(cpath, cap, "%s.c", base);
  snprintf(hpath, cap, "%s.h", base);
  if (same_file(cpath, file) || same_file(hpath, file)) {
    error("output '%s' would overwrite the kernel source '%s'; refusing",
          same_file(cpath, file) ? cpath : hpath, file);
    rc = RC_USAGE;
    goto done;
  }

  pxl_context *ctx = pxl_context_new();
  if (!ctx) {
    error("out of memory");
    rc = RC_RUN;
    goto done;
  }
  pxl_program *prog = NULL;
  rc = load_program(ctx, file, &prog);
  if (rc == RC_OK) {
    int st = pxl_program_write_c(ctx, prog, base);
    print_warnings(ctx);
    if (st)
      rc = fail(ctx, st, NULL);
    else
      printf("wrote %s\nwrote %s\n", cpath, hpath);
  }
  pxl_program_free(prog);
  pxl_context_free(ctx);
done:
  free(cpath);
  free(hpath);
  free(def);
  return rc;
}

/* ---- pxl sparse ---- */

/* The storage formats, as pxl_sparse_convert names them (docs/SPARSE.md). */
static const char *const SPARSE_FORMAT_NAMES[] = {"csr", "coo", "ell", "sell", "dia", "bcsr"};
#define SPARSE_FORMATS (sizeof SPARSE_FORMAT_NAMES / sizeof *SPARSE_FORMAT_NAMES)

enum {
  O_SP_FORMAT = 1, O_SP_TYPE, O_SP_DEVICE, O_SP_THREADS, O_SP_X, O_SP_OUT, O_SP_TIME, O_SP_REPEAT, O_SP_K,
  O_SP_WHICH, O_SP_TOL, O_SP_VECTORS, O_SP_RADIUS, O_SP_SIGMA_I, O_SP_SIGMA_X, O_SP_SIGMA_E, O_SP_EDGES,
  O_SP_VALS, O_SP_HELP
};

static const Opt SPARSE_OPTS[] = {
    {"format", 0, 1, O_SP_FORMAT, 0},   {"type", 0, 1, O_SP_TYPE, 0},       {"device", 0, 1, O_SP_DEVICE, 0},
    {"threads", 0, 1, O_SP_THREADS, 0}, {"x", 0, 1, O_SP_X, 0},             {"out", 'o', 1, O_SP_OUT, 0},
    {"time", 0, 0, O_SP_TIME, 0},       {"repeat", 0, 1, O_SP_REPEAT, 0},   {"k", 'k', 1, O_SP_K, 0},
    {"which", 0, 1, O_SP_WHICH, 0},     {"tol", 0, 1, O_SP_TOL, 0},         {"vectors", 0, 1, O_SP_VECTORS, 0},
    {"radius", 0, 1, O_SP_RADIUS, 0},   {"sigma-i", 0, 1, O_SP_SIGMA_I, 0}, {"sigma-x", 0, 1, O_SP_SIGMA_X, 0},
    {"sigma-e", 0, 1, O_SP_SIGMA_E, 0}, {"edges", 0, 1, O_SP_EDGES, 0},     {"vals", 0, 1, O_SP_VALS, 0},
    {"help", 'h', 0, O_SP_HELP, 1},     {NULL, 0, 0, 0, 0}};

/* A number > 0 (or >= 0 with zero_ok) from an option's value; 0 on success. */
static int parse_positive(const char *s, bool zero_ok, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || *end || !isfinite(v) || v < 0 || (v == 0 && !zero_ok)) return -1;
  *out = v;
  return 0;
}

/* What the eigs, affinity and ncuts verbs take. */
typedef struct {
  int k, radius;
  bool largest;
  double tol, sigma_i, sigma_x, sigma_e;
  const char *vectors, *edges, *vals;
} SpectralOpts;

/* pxl sparse eigs: the k extreme eigenpairs of A.mtx into .npy files. */
static int sparse_eigs_cmd(pxl_context *ctx, pxl_sparse *A, const SpectralOpts *so, const char *out) {
  int64_t n = pxl_sparse_rows(A);
  if (n != pxl_sparse_cols(A)) {
    error("eigenpairs need a square matrix, not %" PRId64 " x %" PRId64, n, pxl_sparse_cols(A));
    return RC_RUN;
  }
  if (so->k > n) {
    error("--k %d: the matrix has %" PRId64 " rows", so->k, n);
    return RC_RUN;
  }
  double *vals = malloc((size_t)so->k * sizeof *vals), *vecs = malloc((size_t)n * so->k * sizeof *vecs);
  double *rows = vecs ? malloc((size_t)n * so->k * sizeof *rows) : NULL;
  int rc = RC_OK, st = rows ? pxl_sparse_eigsh(ctx, A, so->k, so->largest, so->tol, vals, vecs) : PXL_ENOMEM;
  if (st) rc = fail(ctx, st, "eigs");
  if (!rc) st = pxl_vector_save(ctx, out, vals, so->k, PXL_F64);
  if (!rc && !st && so->vectors) {
    /* column c of the result is vector c: a (rows, k) array like SciPy's eigsh gives */
    for (int64_t r = 0; r < n; r++)
      for (int c = 0; c < so->k; c++) rows[r * so->k + c] = vecs[(int64_t)c * n + r];
    st = pxl_array_save(ctx, so->vectors, rows, n, so->k, PXL_F64);
  }
  if (!rc && st) rc = fail(ctx, st, NULL);
  free(vals), free(vecs), free(rows);
  return rc;
}

/* pxl sparse affinity and ncuts: the affinity of an image, written as .mtx or cut into
 * regions written as a label image. */
static int sparse_image_cmd(pxl_context *ctx, const char *file, bool cut, const SpectralOpts *so, pxl_type type,
                            const char *out) {
  pxl_image *img = NULL, *edges = NULL, *labels = NULL;
  pxl_sparse *W = NULL;
  int st = pxl_image_load(ctx, file, &img), rc = RC_OK;
  if (!st && so->edges) st = pxl_image_load(ctx, so->edges, &edges);
  if (!st)
    st = pxl_sparse_affinity(ctx, img, edges, so->radius, so->sigma_i, so->sigma_x, so->sigma_e, type, &W);
  if (!st && !cut) st = pxl_sparse_save(ctx, W, out);
  double vals[64];
  if (!st && cut) {
    st = pxl_image_create(ctx, pxl_image_width(img), pxl_image_height(img), PXL_U8, 1, &labels);
    if (!st) st = pxl_sparse_ncuts(ctx, W, so->k, labels, vals);
    if (!st) st = pxl_image_save(ctx, labels, out);
    if (!st && so->vals) st = pxl_vector_save(ctx, so->vals, vals, so->k, PXL_F64);
  }
  if (st) rc = fail(ctx, st, NULL);
  if (!rc && cut) {
    printf("%s: %d regions; eigenvalues", file, so->k);
    for (int c = 0; c < so->k; c++) printf(" %.9g", vals[c]);
    printf("\n");
  }
  pxl_image_free(labels), pxl_image_free(edges), pxl_image_free(img);
  pxl_sparse_free(W);
  return rc;
}

/* pxl sparse info: the shape, the rows' lengths, and what each format would store. */
static int sparse_info(pxl_context *ctx, const char *file, pxl_sparse *A, bool choose) {
  printf("%s: %" PRId64 " x %" PRId64 ", %" PRId64 " entries, %s\n", file, pxl_sparse_rows(A), pxl_sparse_cols(A),
         pxl_sparse_nnz(A), pxl_sparse_type(A) == PXL_F32 ? "f32" : "f64");
  for (size_t f = 0; f < SPARSE_FORMATS; f++) { /* counted, not built */
    int64_t stored;
    int st = pxl_sparse_stored_as(ctx, A, SPARSE_FORMAT_NAMES[f], &stored);
    if (st == PXL_ETOOBIG) {
      printf("  %-5s too much padding (%s)\n", SPARSE_FORMAT_NAMES[f], pxl_errmsg(ctx));
      continue;
    }
    if (st) return fail(ctx, st, SPARSE_FORMAT_NAMES[f]);
    double fill = pxl_sparse_nnz(A) ? (double)stored / (double)pxl_sparse_nnz(A) : 1.0;
    printf("  %-5s %" PRId64 " stored (%.2fx)\n", SPARSE_FORMAT_NAMES[f], stored, fill);
  }
  if (choose) {
    const char *fmt;
    char report[512];
    int st = pxl_sparse_choose(ctx, A, &fmt, report, sizeof report);
    print_warnings(ctx);
    if (st) return fail(ctx, st, "choosing a format");
    printf("choice: %s\n", report);
  }
  return RC_OK;
}

/* pxl sparse spmv: y = A x into --out, timed with --time. */
static int sparse_spmv_cmd(pxl_context *ctx, pxl_sparse *A, const char *xpath, const char *out, bool time,
                           int repeat) {
  pxl_type t = pxl_sparse_type(A);
  void *x = NULL, *y = NULL;
  int64_t nx = 0, ny = pxl_sparse_rows(A);
  int st = pxl_vector_load(ctx, xpath, t, &x, &nx);
  if (st) return fail(ctx, st, NULL);
  if (nx != pxl_sparse_cols(A)) {
    pxl_vector_free(x);
    error("%s has %" PRId64 " elements; the matrix has %" PRId64 " columns", xpath, nx, pxl_sparse_cols(A));
    return RC_RUN;
  }
  y = malloc((size_t)(ny > 0 ? ny : 1) * (t == PXL_F32 ? 4 : 8));
  int runs = repeat > 0 ? repeat : 1;
  double *ms = y ? malloc((size_t)runs * sizeof *ms) : NULL;
  if (!ms) {
    free(y);
    pxl_vector_free(x);
    error("out of memory");
    return RC_RUN;
  }
  for (int r = 0; r < runs && !st; r++) {
    double t0 = now_seconds();
    st = pxl_sparse_spmv(ctx, A, x, nx, y, ny);
    ms[r] = (now_seconds() - t0) * 1e3;
  }
  int rc = st ? fail(ctx, st, "spmv") : RC_OK;
  if (!rc) {
    st = pxl_vector_save(ctx, out, y, ny, t);
    if (st) rc = fail(ctx, st, NULL);
  }
  if (!rc && time) {
    print_times(ms, runs);
    fprintf(stderr, "pxl: format: %s\n", pxl_sparse_format(A));
  }
  free(ms);
  free(y);
  pxl_vector_free(x);
  return rc;
}

/* pxl sparse info|spmv A.mtx [options] */
static int cmd_sparse(int argc, char **argv) {
  ArgIter it = {"sparse", SPARSE_OPTS, argv, argc, 0, 0, 0};
  const char *v, *verb = NULL, *file = NULL, *format = "csr", *device = "cpu", *xpath = NULL, *out = NULL;
  int id, threads = 0, repeat = 0;
  bool time = false, eig_opt = false, k_given = false, image_opt = false;
  pxl_type type = PXL_F64;
  SpectralOpts so = {6, 5, true, 0, 0.1, 4, 0.1, NULL, NULL, NULL};
  while ((id = next_arg(&it, &v)) != ARG_END) {
    switch (id) {
    case ARG_BAD: return RC_USAGE;
    case ARG_POS:
      if (!verb) verb = v;
      else if (!file) file = v;
      else return usage_error("sparse", "unexpected argument '%s' (one A.mtx at a time)", v);
      break;
    case O_SP_FORMAT: format = v; break;
    case O_SP_TYPE:
      if (strcmp(v, "f64") && strcmp(v, "f32")) return usage_error("sparse", "--type needs f64 or f32, got '%s'", v);
      type = strcmp(v, "f32") ? PXL_F64 : PXL_F32;
      break;
    case O_SP_DEVICE: device = v; break;
    case O_SP_THREADS:
      if (parse_int(v, strlen(v), 0, 4096, &threads))
        return usage_error("sparse", "--threads needs a number from 0 to 4096, got '%s'", v);
      break;
    case O_SP_X: xpath = v; break;
    case O_SP_OUT: out = v; break;
    case O_SP_TIME: time = true; break;
    case O_SP_REPEAT:
      if (parse_int(v, strlen(v), 1, 100000, &repeat))
        return usage_error("sparse", "--repeat needs a number of products from 1 to 100000, got '%s'", v);
      break;
    case O_SP_K:
      if (parse_int(v, strlen(v), 1, 4096, &so.k))
        return usage_error("sparse", "--k needs a number from 1 to 4096, got '%s'", v);
      k_given = true;
      break;
    case O_SP_WHICH:
      if (strcmp(v, "largest") && strcmp(v, "smallest"))
        return usage_error("sparse", "--which needs largest or smallest, got '%s'", v);
      so.largest = !strcmp(v, "largest");
      eig_opt = true;
      break;
    case O_SP_TOL:
      if (parse_positive(v, false, &so.tol) || so.tol >= 1)
        return usage_error("sparse", "--tol needs a number in (0, 1), got '%s'", v);
      eig_opt = true;
      break;
    case O_SP_VECTORS: so.vectors = v; eig_opt = true; break;
    case O_SP_RADIUS:
      if (parse_int(v, strlen(v), 0, 64, &so.radius))
        return usage_error("sparse", "--radius needs 0 to 64, got '%s'", v);
      image_opt = true;
      break;
    case O_SP_SIGMA_I:
    case O_SP_SIGMA_X:
    case O_SP_SIGMA_E:
      if (parse_positive(v, false, id == O_SP_SIGMA_I ? &so.sigma_i : id == O_SP_SIGMA_X ? &so.sigma_x : &so.sigma_e))
        return usage_error("sparse", "--%s needs a number > 0, got '%s'",
                           id == O_SP_SIGMA_I ? "sigma-i" : id == O_SP_SIGMA_X ? "sigma-x" : "sigma-e", v);
      image_opt = true;
      break;
    case O_SP_EDGES: so.edges = v; image_opt = true; break;
    case O_SP_VALS: so.vals = v; image_opt = true; break;
    case O_SP_HELP: fputs(HELP_SPARSE, stdout); return RC_OK;
    }
  }
  if (!verb) return usage_error("sparse", "missing info, spmv, eigs, affinity or ncuts");
  bool spmv = !strcmp(verb, "spmv"), eigs = !strcmp(verb, "eigs"), aff = !strcmp(verb, "affinity"),
       cut = !strcmp(verb, "ncuts");
  if (!spmv && !eigs && !aff && !cut && strcmp(verb, "info"))
    return usage_error("sparse", "unknown verb '%s' (info, spmv, eigs, affinity or ncuts)", verb);
  if (!file) return usage_error("sparse", aff || cut ? "missing IMAGE" : "missing A.mtx");
  if (eig_opt && !eigs) return usage_error("sparse", "--which, --tol and --vectors are for eigs");
  if (k_given && !eigs && !cut) return usage_error("sparse", "--k is for eigs and ncuts");
  if (image_opt && !aff && !cut)
    return usage_error("sparse", "--radius, --sigma-i, --sigma-x, --sigma-e, --edges and --vals are for affinity "
                                 "and ncuts");
  if (so.vals && !cut) return usage_error("sparse", "--vals is for ncuts");
  if (cut && (so.k < 2 || so.k > 64)) return usage_error("sparse", "ncuts makes 2 to 64 regions (--k), not %d", so.k);
  if (eigs || aff || cut) {
    if (!out) return usage_error("sparse", "%s needs --out", verb);
    const char *want = eigs ? "npy" : aff ? "mtx" : NULL;
    if (want && strcasecmp(extension(out), want))
      return usage_error("sparse", "--out %s: %s writes .%s", out, verb, want);
    const char *ins[] = {file, so.edges, NULL}, *outs[] = {out, so.vectors, so.vals};
    for (int a = 0; a < 3; a++)
      for (int b = 0; b < 2 && outs[a]; b++)
        if (ins[b] && same_file(outs[a], ins[b]))
          return usage_error("sparse", "%s names an input (%s): refusing to overwrite it", outs[a], ins[b]);
    for (int a = 1; a < 3; a++)
      if (outs[a] && (same_file(outs[a], out) || !strcmp(outs[a], out)))
        return usage_error("sparse", "%s is given for two outputs", out);
    if (strcmp(format, "csr") && !eigs) return usage_error("sparse", "--format is for info, spmv and eigs");
    if (xpath || time) return usage_error("sparse", "--x and --time are for spmv");
  }
  bool ok = !strcmp(format, "auto");
  for (size_t k = 0; k < SPARSE_FORMATS; k++) ok |= !strcmp(format, SPARSE_FORMAT_NAMES[k]);
  if (!ok) return usage_error("sparse", "--format needs csr, coo, ell, sell, dia, bcsr or auto, got '%s'", format);
  if (spmv) {
    if (!xpath) return usage_error("sparse", "spmv needs --x X.npy");
    if (!out) return usage_error("sparse", "spmv needs --out Y.npy");
    if (strcasecmp(extension(out), "npy")) return usage_error("sparse", "--out %s: y is written as .npy", out);
    if (same_file(out, file) || same_file(out, xpath))
      return usage_error("sparse", "--out %s names an input (%s): refusing to overwrite it", out,
                         same_file(out, file) ? file : xpath);
  } else if (!eigs && !aff && !cut && (xpath || out || time)) {
    return usage_error("sparse", "--x, --out and --time are for spmv");
  }
  if (repeat && !time) return usage_error("sparse", "--repeat is for timing: give --time too");
  pxl_context *ctx = pxl_context_new();
  if (!ctx) {
    error("out of memory");
    return RC_RUN;
  }
  int st = pxl_set_device(ctx, device);
  if (!st) st = pxl_set_threads(ctx, threads);
  int rc = st ? (st == PXL_EARG ? RC_USAGE : fail(ctx, st, NULL)) : RC_OK;
  if (st == PXL_EARG) error("%s", pxl_errmsg(ctx));
  pxl_sparse *A = NULL, *B = NULL;
  if (!rc && (aff || cut)) rc = sparse_image_cmd(ctx, file, cut, &so, type, out);
  if (!rc && !aff && !cut && (st = pxl_sparse_load(ctx, file, type, &A))) rc = fail(ctx, st, NULL);
  if (!rc && !spmv && !eigs && !aff && !cut) rc = sparse_info(ctx, file, A, !strcmp(format, "auto"));
  if (!rc && (spmv || eigs) && (st = pxl_sparse_convert(ctx, A, format, &B))) rc = fail(ctx, st, NULL);
  print_warnings(ctx);
  if (!rc && spmv) rc = sparse_spmv_cmd(ctx, B, xpath, out, time, repeat);
  if (!rc && eigs) rc = sparse_eigs_cmd(ctx, B, &so, out);
  pxl_sparse_free(B);
  pxl_sparse_free(A);
  pxl_context_free(ctx);
  return rc;
}

/* ---- pxl help, and dispatch ---- */

static int cmd_help(int argc, char **argv);

typedef struct {
  const char *name;
  int (*fn)(int argc, char **argv); /* argv: the arguments after the command name */
  const char *help;
} Command;

static const Command COMMAND_TABLE[] = {
    {"run", cmd_run, HELP_RUN},
    {"check", cmd_check, HELP_CHECK},
    {"compile", cmd_compile, HELP_COMPILE},
    {"sparse", cmd_sparse, HELP_SPARSE},
    {"help", cmd_help, HELP_HELP},
};

/* The command called name, or NULL. */
static const Command *find_command(const char *name) {
  for (size_t k = 0; k < sizeof COMMAND_TABLE / sizeof *COMMAND_TABLE; k++)
    if (strcmp(COMMAND_TABLE[k].name, name) == 0) return &COMMAND_TABLE[k];
  return NULL;
}

/* pxl help [COMMAND] */
static int cmd_help(int argc, char **argv) {
  if (argc == 0 || strcmp(argv[0], "--help") == 0 || strcmp(argv[0], "-h") == 0) {
    fputs(argc == 0 ? HELP_MAIN : HELP_HELP, stdout);
    return RC_OK;
  }
  if (argc > 1) return usage_error("help", "unexpected argument '%s'", argv[1]);
  const Command *c = find_command(argv[0]);
  if (!c) return usage_error(NULL, "no command '%s' (commands: run, check, compile, sparse, help)", argv[0]);
  fputs(c->help, stdout);
  return RC_OK;
}

int main(int argc, char **argv) {
  int rc;
  install_signal_handlers();
  if (argc < 2) {
    fputs(HELP_MAIN, stderr);
    return RC_USAGE;
  }
  const char *name = argv[1];
  const Command *c;
  if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) {
    fputs(HELP_MAIN, stdout);
    rc = RC_OK;
  } else if (strcmp(name, "--version") == 0) {
    puts("pxl " PXL_VERSION_STRING);
    rc = RC_OK;
  } else if ((c = find_command(name))) {
    rc = c->fn(argc - 2, argv + 2);
  } else if (name[0] == '-') {
    rc = usage_error(NULL, "unknown option '%s'", name);
  } else {
    rc = usage_error(NULL, "unknown command '%s' (commands: run, check, compile, sparse, help)", name);
  }
  /* Results on stdout count only if they reached it. */
  if (fflush(stdout) != 0 || ferror(stdout)) {
    error("cannot write to standard output: %s", strerror(errno));
    if (rc == RC_OK) rc = RC_IO;
  }
  return rc;
}
