/*
 * pxl.h - the C API of libpxl: compile image-processing kernels written in the pxl
 * kernel language and run them on images.
 *
 * Usage:
 *
 *   pxl_context *ctx = pxl_context_new();
 *   pxl_program *prog; pxl_image *in; pxl_run_result *res;
 *   if (pxl_program_from_file(ctx, "edges.pxl", &prog) ||
 *       pxl_image_load(ctx, "in.png", &in)) { fprintf(stderr, "%s\n", pxl_errmsg(ctx)); ... }
 *   pxl_args *args = pxl_args_new(ctx);
 *   pxl_args_image(args, "in", in);          // named arguments
 *   pxl_args_scalar(args, "t", 40);
 *   if (pxl_run(ctx, prog, "edges", args, &res) == PXL_OK)
 *     pxl_image_save(ctx, pxl_result_image(res), "out.png");
 *   pxl_result_free(res); pxl_args_free(args); pxl_image_free(in);
 *   pxl_program_free(prog); pxl_context_free(ctx);
 *
 * Conventions: every function that can fail returns an int status (PXL_OK == 0) and
 * leaves a message in the context (pxl_errmsg). The library never prints and never
 * exits. Objects are freed by the pxl_*_free function named after them; freeing NULL is
 * a no-op. A context is not thread-safe; use one per thread.
 */
#ifndef PXL_PXL_H
#define PXL_PXL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PXL_VERSION_STRING "0.1.0"

/* Status codes. */
#define PXL_STATUSES(X)                                                              \
  X(PXL_OK, 0, "ok")                                                               \
  X(PXL_ERROR, 1, "error")                     /* generic failure */                 \
  X(PXL_ENOMEM, 2, "out of memory")                                                \
  X(PXL_ESOURCE, 3, "kernel source error")     /* syntax or type errors */          \
  X(PXL_EIO, 4, "input/output error")          /* missing file, unreadable, write */ \
  X(PXL_EFORMAT, 5, "bad or unsupported image file")                               \
  X(PXL_EARG, 6, "bad argument")               /* wrong name, type, size, value */  \
  X(PXL_ENOTFOUND, 7, "not found")             /* no such kernel / pipeline */      \
  X(PXL_EDEVICE, 8, "device unavailable")      /* absent: no driver, library, device */ \
  X(PXL_EBACKEND, 9, "backend compilation failed")                                 \
  X(PXL_ETOOBIG, 10, "image too large")        /* or any input over its size limit */ \
  X(PXL_EFAULT, 11, "device failure")          /* present but failing: launch, load */

enum {
#define X(name, value, text) name = value,
  PXL_STATUSES(X)
#undef X
};

const char *pxl_status_name(int status); /* "PXL_EIO", ...; "PXL_?" for unknown */

/* Pixel element types. */
typedef enum {
  PXL_U8,
  PXL_I16,
  PXL_U16,
  PXL_I32,
  PXL_U32,
  PXL_F32,
  PXL_F64
} pxl_type;

typedef struct pxl_context pxl_context;
typedef struct pxl_program pxl_program;
typedef struct pxl_image pxl_image;
typedef struct pxl_args pxl_args;
typedef struct pxl_run_result pxl_run_result;

/* ---- context ---- */

/* A new context with device "auto" (CPU backend); NULL on out-of-memory. */
pxl_context *pxl_context_new(void);
/* Frees the context. Programs and images made with it must be freed first. */
void pxl_context_free(pxl_context *ctx);
/* The message of the last failure on ctx ("" if none). Valid until the next call. */
const char *pxl_errmsg(const pxl_context *ctx);
/* The warnings recorded on ctx since the last call of this function, one per line
 * ("" if none): problems pxl worked around, such as a cache directory it refused or a
 * GPU failure after which "auto" ran on the CPU. Owned by ctx, valid until the next
 * call of this function. */
const char *pxl_take_warnings(pxl_context *ctx);
/* Selects the device: "auto" (default: the first CUDA GPU if one works, else the CPU
 * backend; a run the GPU cannot do falls back to the CPU), "cpu", "ref" (the reference
 * interpreter), "cuda" / "cuda:N" (an NVIDIA GPU through the CUDA driver and NVRTC,
 * loaded at run time), or "opencl" (the first GPU of any OpenCL platform, else its first
 * device) / "opencl:P:D" (device D of platform P, numbered as the OpenCL loader lists
 * them) through the OpenCL ICD loader, loaded at run time. Runs fail with PXL_EDEVICE
 * where the library or device is missing; "auto" never picks OpenCL. PXL_EARG for an
 * unknown or malformed name. */
int pxl_set_device(pxl_context *ctx, const char *device);
/* Sets the directory for compiled kernels (default: $PXL_CACHE_DIR, else
 * $XDG_CACHE_HOME/pxl, else ~/.cache/pxl, else a private temporary directory). The string
 * is copied. A directory that is not the user's own, is writable by others or cannot be
 * written is not used: runs compile into a private temporary directory instead, with a
 * warning (pxl_take_warnings; docs/SECURITY.md). */
int pxl_set_cache_dir(pxl_context *ctx, const char *dir);
/* Number of threads the CPU backend uses (0 = all cores, the default). */
int pxl_set_threads(pxl_context *ctx, int nthreads);
/* Fusion of pipeline stages (docs/ARCHITECTURE.md, "Fusion"): a stage whose image only
 * one later stage reads is computed inside that stage's kernel where the compiler can do
 * so exactly, so the image never reaches memory. PXL_FUSE_AUTO (the default): on every
 * backend but "ref", which runs pipelines as written (the oracle); PXL_FUSE_OFF: never
 * (for comparison); PXL_FUSE_ALL: on "ref" too (the interpreter then checks the fused
 * kernels). The results are the same bits in every mode. PXL_EARG for another value. */
enum { PXL_FUSE_AUTO = 0, PXL_FUSE_OFF = 1, PXL_FUSE_ALL = 2 };
int pxl_set_fusion(pxl_context *ctx, int mode);
/* Stages kept as written (their images stored) in every pipeline run with this context,
 * even where fusion would compute them inside their consumer: names separated by
 * commas, e.g. "smooth,gx", each the name of a stage or of the kernel it calls (which
 * names its every call, and the anonymous ones); NULL or "" keeps none (the default). A run of a pipeline
 * that has no stage of a given name fails with PXL_EARG naming it. With PXL_FUSE_AUTO the
 * cost model still decides the other stages; with PXL_FUSE_ALL every other exact fusion
 * is made. PXL_EARG for a list that is not names and commas. */
int pxl_set_fusion_keep(pxl_context *ctx, const char *stages);

/* ---- programs ---- */

/* Compiles a .pxl file. On PXL_ESOURCE the message holds every diagnostic
 * (file:line:col: error: ..., the source line and a caret). Free with pxl_program_free. */
int pxl_program_from_file(pxl_context *ctx, const char *path, pxl_program **out);
/* Compiles source text; `name` is used as the file name in diagnostics. */
int pxl_program_from_string(pxl_context *ctx, const char *name, const char *src,
                            pxl_program **out);
void pxl_program_free(pxl_program *prog);
/* Number of entry points (kernels, reductions, histograms, scans, pipelines) in declaration order. */
int pxl_program_entry_count(const pxl_program *prog);
/* Name of entry i, or NULL when out of range. */
const char *pxl_program_entry_name(const pxl_program *prog, int i);
/* Index of entry `name`, or with NULL/"" of the entry pxl_run would run by default (the
 * last pipeline, else the last entry); -1 if there is none. */
int pxl_program_entry_find(const pxl_program *prog, const char *name);
/* Entry i as declared, e.g. "kernel u8 blur3(image u8 in : mirror)" or
 * "pipeline edges(image u8 in, u8 t) -> image u8"; owned by prog; NULL if out of range. */
const char *pxl_program_entry_signature(const pxl_program *prog, int i);
/* The parameters of entry i, in declaration order: how many (-1: no such entry), and
 * parameter k's name (owned by prog), kind, element type (an image's pixel type, a
 * scalar's or array element's type; f64 for a type pxl_type does not name, such as
 * bool), channels (images; 1 otherwise) and length (arrays: N of `T name[N]`; else 0).
 * pxl_program_entry_param returns 1, or 0 when i or k is out of range. */
typedef enum { PXL_PARAM_IMAGE, PXL_PARAM_SCALAR, PXL_PARAM_ARRAY } pxl_param_kind;
typedef struct {
  const char *name;
  pxl_param_kind kind;
  pxl_type type;
  int channels;
  int length;
} pxl_param_info;
int pxl_program_entry_param_count(const pxl_program *prog, int i);
int pxl_program_entry_param(const pxl_program *prog, int i, int k, pxl_param_info *out);
/* 1 if entry i produces an image (a kernel, scan or pipeline), 0 if a value or histogram. */
int pxl_program_entry_makes_image(const pxl_program *prog, int i);
/* 1 when entry i produces an image, with its element type and channel count in *type and
 * *channels (either may be NULL); 0 otherwise. Known before any run. */
int pxl_program_entry_output(const pxl_program *prog, int i, pxl_type *type, int *channels);
/* The number of images entry i produces: a kernel with several outputs (`kernel (i16 gx,
 * i16 gy) k(...)`) one per output, a pipeline `-> (image T1, image T2)` one per image it
 * returns, other kernels and pipelines 1, others 0. */
int pxl_program_entry_output_count(const pxl_program *prog, int i);
/* 1 when entry i has output k (0 <= k < pxl_program_entry_output_count), with its element
 * type, channel count and name (a kernel's output name; "" for a single output and for a
 * pipeline's images; owned by prog) in the non-NULL pointers; 0 otherwise.
 * pxl_program_entry_output is output 0. */
int pxl_program_entry_output_at(const pxl_program *prog, int i, int k, pxl_type *type, int *channels,
                                const char **name);
/* Generic entries (`kernel<T: u8 | u16 | f32> T blur3(image T in)`): one entry per type
 * of the list, all with the same name; pxl_program_entry_find gives the first. 1 when
 * entry i is such an instance, else 0. */
int pxl_program_entry_is_generic(const pxl_program *prog, int i);
/* The instance of generic entry i that pxl_run would take for args: the first whose image
 * parameters have the element types of the images in args (bound by name, else in order);
 * i itself when entry i is not generic or no instance matches (the run then reports the
 * mismatch); -1 when i is out of range. */
int pxl_program_entry_for_args(const pxl_program *prog, int i, const pxl_args *args);
/* The report of `pxl check --explain`: per entry its skeleton class, window and per-pixel
 * counts. Returns a string owned by prog, valid until pxl_program_free. */
const char *pxl_program_explain(pxl_context *ctx, pxl_program *prog);
/* The cost model's predicted time in seconds of one run of entry i on images of
 * width x height pixels on a device class, "cpu" or "gpu" (docs/PERFORMANCE.md, "Cost
 * model": calibrated on one machine of each, a guide for comparing forms and entries,
 * not a promise), of the form ctx's fusion settings run there. PXL_EARG for a bad
 * entry, class or size; a pipeline kept unfused by name that lacks the stage too. */
int pxl_program_entry_predict(pxl_context *ctx, pxl_program *prog, int i, const char *device, int width, int height,
                              double *seconds);

/* Ahead-of-time compilation: writes `base`.c and `base`.h (atomically) holding one
 * documented C function per entry point, needing only a C11 compiler (OpenMP optional)
 * and libm at run time. `base` may include a directory. */
int pxl_program_write_c(pxl_context *ctx, pxl_program *prog, const char *base);

/* ---- images ---- */

/* A new zero-filled image; rows padded to 64 bytes. Free with pxl_image_free. */
int pxl_image_create(pxl_context *ctx, int width, int height, pxl_type type, int channels,
                     pxl_image **out);
/* An image over caller memory (not copied, not freed) with a row pitch in bytes. */
int pxl_image_wrap(pxl_context *ctx, void *data, int width, int height, pxl_type type,
                   int channels, size_t pitch_bytes, pxl_image **out);
/* A view of the rectangle (x, y, w, h) of img (a region of interest): shares img's memory,
 * which must outlive the view. Kernels see the view as a whole image. */
int pxl_image_view(pxl_context *ctx, pxl_image *img, int x, int y, int w, int h,
                   pxl_image **out);
/* Loads PNG (8/16-bit), JPEG, PGM/PPM (P2 P3 P5 P6) as u8 or u16 with 1 (gray), 3 (RGB)
 * or 4 (RGBA) channels; gray+alpha PNGs become RGBA. TIFF (the first page: strips or
 * tiles, either planar configuration, uncompressed, LZW, Deflate, PackBits; gray or RGB
 * with 1, 3 or 4 samples) and NumPy .npy (versions 1.0-3.0, shape (H, W) or (H, W, C),
 * little- or big-endian, C or Fortran order) load as any pxl_type: 8/16/32-bit unsigned
 * (u1 u2 u4), 16/32-bit signed (i2 i4), 32/64-bit float (f4 f8). The format is taken
 * from the first bytes, not the name. Corrupt, truncated or unsupported
 * files fail with PXL_EFORMAT and a message naming the file and the reason (a PNG chunk
 * whose CRC is wrong, a JPEG with more than 100 scans; a JPEG that lacks only its final
 * EOI marker loads); a file over 1 GiB (/dev/zero, an endless pipe), dimensions over 65535
 * or images over 4 GiB fail with PXL_ETOOBIG before any pixel allocation; a missing or
 * unreadable file or a directory with PXL_EIO. */
int pxl_image_load(pxl_context *ctx, const char *path, pxl_image **out);
/* Saves by extension, any case: .png (u8/u16; 1, 3, 4 channels), .jpg/.jpeg (u8; 1, 3),
 * .pgm .ppm .pnm (u8/u16; 1 or 3), .tif/.tiff (every type; 1, 3, 4; Deflate-compressed)
 * and .npy (every type; 1, 3, 4; version 1.0). Writes a temporary file in the same
 * directory and renames it, so a failure never leaves a partial file and an existing file
 * is untouched; a failed write (a full disk) is PXL_EIO naming the file and the reason. A
 * new file gets 0666 less the umask, a replaced one keeps its permissions. An extension
 * that names no format, or a type or channel count its format cannot store, is PXL_EARG
 * (pxl_image_save_check tells beforehand). */
int pxl_image_save(pxl_context *ctx, const pxl_image *img, const char *path);
/* PXL_OK when pxl_image_save can write an image of this type and channel count to path,
 * else the PXL_EARG and message it would fail with; only the name is looked at. Lets a
 * caller refuse an output file before computing the image. */
int pxl_image_save_check(pxl_context *ctx, const char *path, pxl_type type, int channels);
/* The format pxl_image_save writes for path's extension ("PNG", "JPEG", "PGM/PPM", "TIFF",
 * ".npy"; a static string), or NULL when the extension names none. */
const char *pxl_image_save_format(const char *path);

/* ---- frame streams ----
 *
 * Video and image sequences, read and written one frame at a time so that memory stays
 * bounded however long the stream: YUV4MPEG2 files (.y4m, the format ffmpeg and x264
 * read and write: 8-bit 4:2:0, 4:2:2, 4:4:4 or mono) and numbered image files (a name
 * with one %d or %0Nd, e.g. "frame_%04d.png"; %% for a '%'). A frame is a list of
 * planes, each an image: a y4m frame's Y, Cb and Cr planes (u8, one channel; Cb and Cr
 * subsampled as its colour space says), or its Y plane alone for mono; a numbered
 * file's frame is its one image, as pxl_image_load reads it. Messages name the stream
 * and the frame ("in.y4m: frame 12: truncated: 1000 of 3110400 bytes"). The name "-"
 * is standard input or output, a y4m stream (a pipe to or from `ffmpeg -f yuv4mpegpipe`);
 * standard output is written as frames come, without a temporary file.
 *
 *   pxl_frames *in, *out;
 *   pxl_frames_open(ctx, "in.y4m", &in);
 *   pxl_frames_create(ctx, "out.y4m", in, &out);
 *   pxl_image *planes[3]; int got;
 *   while (!pxl_frames_read(ctx, in, planes, &got) && got) { ...; pxl_frames_write(ctx, out, res, 3); ... }
 *   pxl_frames_finish(ctx, out);             // a y4m file appears under its name here
 *   pxl_frames_free(out); pxl_frames_free(in);
 */
typedef struct pxl_frames pxl_frames;

/* Whether path names a stream pxl_frames_open reads: 2 a numbered pattern, 1 "-" or a
 * regular file whose first bytes are "YUV4MPEG2 " (content, not the name), 0 neither (a
 * pipe or device is not read to find out: give "-" for a stream on standard input). */
int pxl_frames_is_stream(const char *path);
/* Whether path names a stream pxl_frames_create writes: 2 a numbered pattern, 1 a name
 * ending in .y4m (any case), 0 neither. */
int pxl_frames_is_output(const char *path);
/* Opens a stream for reading. A pattern's frames are the files numbered from the first
 * of 0..4 that exists up to the one before the first missing number. PXL_EIO for a
 * missing or unreadable file, PXL_EFORMAT for a malformed or unsupported stream (a
 * 10-bit y4m), PXL_ETOOBIG for frames over the image limits, PXL_EARG for a bad pattern.
 * Free with pxl_frames_free. */
int pxl_frames_open(pxl_context *ctx, const char *path, pxl_frames **out);
/* Starts writing a stream at path. For y4m, `like` (a stream being read, or NULL)
 * gives the colour space and header parameters (frame rate, interlacing, pixel aspect);
 * the frame size is the first frame's. Nothing appears under path before
 * pxl_frames_finish; an existing file stays untouched until then. Numbered files are
 * each written (atomically) by pxl_frames_write. PXL_EARG for a path that is neither,
 * and for numbered files that would replace a file of `like` (an input read while the
 * output is written). */
int pxl_frames_create(pxl_context *ctx, const char *path, const pxl_frames *like, pxl_frames **out);
/* PXL_OK when pxl_frames_create(path) can take planes of this type and channel count
 * (y4m: u8, one channel; numbered files: what pxl_image_save takes for that extension),
 * else PXL_EARG with the reason; touches no file. */
int pxl_frames_check_output(pxl_context *ctx, const char *path, pxl_type type, int channels);
/* Planes per frame of a stream being read (1 or 3), its first frame's size (the Y plane's
 * for y4m), and its frame count where known (a numbered run; a regular y4m file whose
 * frame headers are all as long as the first: known from the open for bare "FRAME" lines,
 * else once the first frame is read), else -1. */
int pxl_frames_planes(const pxl_frames *f);
void pxl_frames_size(const pxl_frames *f, int *width, int *height);
int64_t pxl_frames_count(const pxl_frames *f);
/* The number of the frame last read: 1, 2, ... for y4m, the file's number for a pattern. */
int64_t pxl_frames_number(const pxl_frames *f);
/* Reads the next frame: planes[0 .. pxl_frames_planes - 1] receive new images (free each
 * with pxl_image_free) and *got is 1; at the end of the stream *got is 0 and nothing is
 * allocated. planes must have room for 3. */
int pxl_frames_read(pxl_context *ctx, pxl_frames *f, pxl_image **planes, int *got);
/* Reads the next frame into the caller's host images planes[0 .. pxl_frames_planes - 1]
 * (y4m: read straight into their rows), which must have the frame's plane sizes, type
 * and channels (PXL_EARG otherwise, naming the frame): frames read into pinned images
 * (pxl_image_create_pinned) go to a GPU by DMA. *got as pxl_frames_read. */
int pxl_frames_read_into(pxl_context *ctx, pxl_frames *f, pxl_image *const *planes, int *got);
/* Writes the next frame of n planes (y4m: 1 makes a mono stream, 3 the colour space of
 * `like`; sized as that colour space says for the first frame's Y plane, which every
 * frame keeps; numbered files: 1 image, named with `number`). Host images only. */
int pxl_frames_write(pxl_context *ctx, pxl_frames *f, int64_t number, pxl_image *const *planes, int n);
/* Completes a stream being written (a y4m file renamed into place); PXL_EARG for a y4m
 * stream with no frame. A no-op for a stream being read. */
int pxl_frames_finish(pxl_context *ctx, pxl_frames *f);
/* Closes a stream; one being written and not finished is abandoned (a y4m file's
 * temporary file removed, its final name untouched). NULL is a no-op. */
void pxl_frames_free(pxl_frames *f);

/* ---- queues: runs in flight ----
 *
 * A queue runs one entry point on a sequence of arguments (the frames of a video, pushed
 * in order) with several runs in flight, and gives the results back in the order of the
 * pushes. Each of its `depth` workers has a context of its own on the device of ctx (a
 * thread, a copy of the program, and on a GPU a stream or command queue), so on a GPU the
 * copy of one frame's inputs to the device, the run of another and the copy of a third's
 * result back overlap; host images made with pxl_image_create_pinned (inputs, and bound
 * outputs, pxl_args_output) are copied by DMA. On the CPU (and "ref") frames run in
 * parallel, each worker on its share of the threads. Results are the same as pxl_run's.
 *
 *   pxl_queue *q;
 *   pxl_queue_new(ctx, prog, "downscale", 0, &q);     // depth 0: the device's choice
 *   for (each frame f) {
 *     if (pxl_queue_pending(q) == pxl_queue_depth(q)) { pxl_queue_pop(q, &res); use(res); }
 *     pxl_args *a = pxl_args_new(ctx);                 // the frame's images and scalars
 *     pxl_args_image(a, "in", frame[f]); pxl_args_output(a, out[f]);
 *     pxl_queue_push(q, a);                             // the queue frees a
 *   }
 *   while (pxl_queue_pending(q)) { pxl_queue_pop(q, &res); use(res); }
 *   pxl_queue_free(q);
 *
 * The images of pushed arguments are read (and a bound output written) by a worker
 * until the run's result is popped: do not change or free them before. Host images only
 * (device images run with pxl_run). The first run compiles the entry once; the other
 * workers wait for it and take the compiled code from the cache. */
typedef struct pxl_queue pxl_queue;

/* The most runs a queue holds in flight (its depth). */
#define PXL_QUEUE_MAX_DEPTH 16

/* A queue for `entry` (NULL: pxl_run's default) of prog on ctx's device. depth: runs in
 * flight, 1 to PXL_QUEUE_MAX_DEPTH, or 0 for the device's choice (GPUs 4: uploads, runs and downloads
 * overlap; the CPU and "ref" one per core, at most 8, the cores shared out among them). */
int pxl_queue_new(pxl_context *ctx, pxl_program *prog, const char *entry, int depth, pxl_queue **out);
/* Queues a run with args (taken over: freed by the queue, also on failure). PXL_EARG when
 * the queue is full (pending == depth: pop first) or args hold a device image. */
int pxl_queue_push(pxl_queue *q, pxl_args *args);
/* The result of the oldest run pushed (waits for it): *out as pxl_run gives it; its
 * failure is reported on the queue's context like pxl_run's. PXL_EARG when nothing is
 * pending. */
int pxl_queue_pop(pxl_queue *q, pxl_run_result **out);
/* Runs pushed and not yet popped; the queue's depth. */
int pxl_queue_pending(const pxl_queue *q);
int pxl_queue_depth(const pxl_queue *q);
/* Waits for the runs in flight, drops their results, and frees the queue. NULL: no-op. */
void pxl_queue_free(pxl_queue *q);

/* ---- files ---- */

/* Writes n bytes to path the way pxl writes every file: into a temporary file in the
 * same directory ("PATH.tmpXXXXXX"), flushed, synced and renamed over path; a new file
 * gets 0666 less the umask, a replaced one keeps its permissions. PXL_EIO on failure
 * (message naming path and the reason), nothing left behind and path untouched. */
int pxl_write_file(pxl_context *ctx, const char *path, const void *data, size_t n);
/* Removes the temporary files of the writes in progress in this process (image saves,
 * pxl_write_file, cache entries, a C compiler's output) and kills the C compilers it is
 * running (they run in process groups of their own, which a terminal's Ctrl-C does not
 * reach). Async-signal-safe: call it from a SIGINT/SIGTERM
 * handler, then let the signal take its default action, so an interrupted program
 * leaves no partial file. */
void pxl_remove_partial_files(void);
void pxl_image_free(pxl_image *img);
int pxl_image_width(const pxl_image *img);
int pxl_image_height(const pxl_image *img);
int pxl_image_channels(const pxl_image *img);
pxl_type pxl_image_type(const pxl_image *img);
size_t pxl_image_pitch(const pxl_image *img); /* bytes between rows */
void *pxl_image_data(pxl_image *img);         /* first pixel of the first row */
const char *pxl_type_name(pxl_type t);        /* "u8", ... */

/* ---- device memory (GPU backends) ----
 *
 * Images can live in the memory of the context's device, so that a chain of runs never
 * moves pixels over the bus. A run whose inputs are all device images writes a device
 * image and returns as soon as the work is queued (reductions and histograms wait for
 * their value); a run with host images copies them in and the output back, and keeps a
 * pipeline's intermediates on the device either way. pxl_image_data() of a device image
 * is the device address for CUDA (a CUdeviceptr), so other GPU code can use it; for
 * OpenCL it is the byte offset of the first pixel in the image's cl_mem. Free device
 * images before their context.
 *
 * CUDA: a pipeline run whose inputs and bound output are device images is recorded as a
 * CUDA graph at its second run with the same images (addresses and sizes), borders and
 * scalars, and replayed from the third - one launch for the whole pipeline. New pixels in
 * the same buffers are fine; the environment variable PXL_CUDA_GRAPHS=0 turns this off. */

/* A new zero-filled image in device memory, rows padded to the device's preferred pitch.
 * PXL_EDEVICE when the context's device has no memory of its own (cpu, ref, or "auto"
 * that found no GPU). */
int pxl_image_create_device(pxl_context *ctx, int width, int height, pxl_type type,
                            int channels, pxl_image **out);
/* An image over device memory the caller allocated (not copied, not freed), e.g. with
 * cudaMalloc; for OpenCL, data is a cl_mem (the image starts at its first byte), which
 * OpenCL requires to belong to the cl_context pxl runs in. pitch_bytes may be anything
 * from a row's size up. */
int pxl_image_wrap_device(pxl_context *ctx, void *data, int width, int height, pxl_type type,
                          int channels, size_t pitch_bytes, pxl_image **out);
/* A new zero-filled host image in the memory the context's device copies fastest: on
 * CUDA page-locked ("pinned") memory, which the GPU reads and writes by DMA at the
 * link's full speed, with no staging copy; elsewhere plain host memory (as
 * pxl_image_create). Use it for the images of a stream of runs (pxl_queue), and free it
 * before its context. */
int pxl_image_create_pinned(pxl_context *ctx, int width, int height, pxl_type type,
                            int channels, pxl_image **out);
/* A device copy of img (which may be a host or a device image). */
int pxl_image_to_device(pxl_context *ctx, const pxl_image *img, pxl_image **out);
/* A host copy of img; waits for the work queued on img. */
int pxl_image_to_host(pxl_context *ctx, const pxl_image *img, pxl_image **out);
/* Copies the pixels of src into dst (same size, type and channels; host or device each). */
int pxl_image_copy(pxl_context *ctx, const pxl_image *src, pxl_image *dst);
/* 1 if img lives in device memory, else 0. */
int pxl_image_on_device(const pxl_image *img);
/* Waits until all work queued by the context has finished; reports a failure of it. */
int pxl_sync(pxl_context *ctx);
/* The name of the device runs will use ("cpu", "ref", or e.g. "cuda:0 (NVIDIA H200)",
 * "opencl:0:0 (NVIDIA H200, NVIDIA CUDA)": device, then platform),
 * resolving "auto"; owned by ctx, valid until the next call on it. */
const char *pxl_device_name(pxl_context *ctx);

/* ---- running ---- */

/* Named arguments for one run. Free with pxl_args_free. NULL on out-of-memory. */
pxl_args *pxl_args_new(pxl_context *ctx);
void pxl_args_free(pxl_args *args);
/* Binds image parameter `name` (borrowed: must outlive the run). */
int pxl_args_image(pxl_args *args, const char *name, pxl_image *img);
/* Binds scalar parameter `name`; converted to the parameter's type as the language does. */
int pxl_args_scalar(pxl_args *args, const char *name, double value);
/* Binds a scalar from text ("40", "0.5"); PXL_EARG if it is not a number. */
int pxl_args_scalar_text(pxl_args *args, const char *name, const char *text);
/* The most elements an array parameter (`T name[N]`) has. */
#define PXL_MAX_ARRAY 4096
/* Binds array parameter `name` (`T name[N]` of a kernel, reduction or histogram) to n
 * values (0..PXL_MAX_ARRAY): copied now, so `values` may be freed or changed after the
 * call. Each is converted to the element type as the language converts an f64 (floats
 * rounded to f32 for f32; for integer types rounded to the nearest, ties to even, and
 * saturated, NaN 0); integers are exact up to 2^53. Fewer than N values leave the rest 0; more than N make the run
 * fail with PXL_EARG naming the parameter and N. */
int pxl_args_array(pxl_args *args, const char *name, const double *values, int n);
/* Binds array parameter `name` from text: 1 to PXL_MAX_ARRAY numbers separated by commas
 * and/or white space ("1,4,6,4,1", a file's contents; one trailing comma allowed); PXL_EARG
 * naming the first value that is not a number. A value bound with pxl_args_scalar to an
 * array parameter is its first element. */
int pxl_args_array_text(pxl_args *args, const char *name, const char *text);
/* Overrides the border mode of image parameter `name` for a kernel run directly:
 * "clamp", "mirror", "mirror101", "wrap", "constant(V)", "none". */
int pxl_args_border(pxl_args *args, const char *name, const char *mode);

/* Binds the output image of a kernel or pipeline run: it must have the output's size, type
 * and channels - those of the inputs in a per-channel run (pxl_run) - (PXL_EARG otherwise);
 * the run writes into it instead of allocating. */
int pxl_args_output(pxl_args *args, pxl_image *img);

/* Runs entry point `entry` (NULL: the program's last pipeline, else its last entry).
 * Each image must have its parameter's type, with one exception: a kernel or pipeline
 * whose image parameters and output are all one channel, given host images that all have
 * 3 or 4 channels of the parameters' element type, runs per channel - on each channel's
 * plane with the same scalars and borders - and its result has as many channels (a
 * bound output must too). Other mismatches (channel counts that differ between images,
 * another element type, a reduction or histogram, a vector output) and device images
 * in a per-channel run are PXL_EARG naming the parameter, the expected and the given
 * type. */
int pxl_run(pxl_context *ctx, pxl_program *prog, const char *entry, pxl_args *args,
            pxl_run_result **out);
void pxl_result_free(pxl_run_result *res);

typedef enum { PXL_RESULT_IMAGE, PXL_RESULT_SCALAR, PXL_RESULT_HISTOGRAM } pxl_result_kind;
pxl_result_kind pxl_result_kind_of(const pxl_run_result *res);
/* The output image (owned by res), or NULL if the result is not an image. */
pxl_image *pxl_result_image(pxl_run_result *res);
/* Transfers the image to the caller (free with pxl_image_free); NULL if none. */
pxl_image *pxl_result_take_image(pxl_run_result *res);
/* The number of images of the result: a kernel `kernel (T1 a, T2 b, ...) k(...)` with
 * several outputs gives one per output, in the declared order, and a pipeline `-> (image
 * T1, image T2, ...)` one per image it returns; other image results 1; scalars and
 * histograms 0. pxl_result_image and pxl_result_take_image are image 0 (a
 * bound output, pxl_args_output, is image 0; the others are allocated by the run). */
int pxl_result_image_count(const pxl_run_result *res);
/* Image i (0 <= i < pxl_result_image_count), owned by res; NULL when out of range. */
pxl_image *pxl_result_image_at(pxl_run_result *res, int i);
/* Transfers image i to the caller (free with pxl_image_free); NULL when out of range,
 * already taken, or (image 0) the caller's bound output. */
pxl_image *pxl_result_take_image_at(pxl_run_result *res, int i);
/* Reduction value; for argmin/argmax also the position (x, y). Integers are exact up to
 * 2^53 in `value`; `ivalue` holds integer results exactly. */
typedef struct {
  double value;
  int64_t ivalue;
  int is_float;
  int has_pos;
  int x, y;
} pxl_scalar_result;
int pxl_result_scalar(const pxl_run_result *res, pxl_scalar_result *out);
/* Histogram bins (owned by res), their count in *n; float bins when *is_float. Integer
 * bins are exact up to 2^53 here; pxl_result_bins_i64 holds them exactly. */
const double *pxl_result_bins(const pxl_run_result *res, int *n, int *is_float);
/* Integer histogram bins exactly (owned by res), their count in *n; NULL for float bins
 * or another result. */
const int64_t *pxl_result_bins_i64(const pxl_run_result *res, int *n);
/* What a histogram's bins hold (pxl_bins_op): sums (bin: counts, weights), or per-bin
 * minima or maxima (bin_min, bin_max), whose empty bins hold the identity: INT64_MAX or
 * +inf for minima, INT64_MIN or -inf for maxima. -1 for another result. */
typedef enum { PXL_BINS_SUM, PXL_BINS_MIN, PXL_BINS_MAX } pxl_bins_op;
int pxl_result_bins_op(const pxl_run_result *res);
/* Name of the entry that produced the result. */
const char *pxl_result_name(const pxl_run_result *res);
/* The device that ran it, as pxl_device_name says it: after a fallback of "auto" (a GPU
 * that failed, a missing C compiler) the one that really ran. */
const char *pxl_result_device(const pxl_run_result *res);

/* ---- sparse matrices and vectors ----
 *
 * A sparse matrix of f32 or f64 values, held in one storage format at a time: "csr",
 * "coo", "ell", "sell" (SELL-C-sigma), "dia" or "bcsr" (docs/SPARSE.md gives each
 * layout and the one definition of the product, which every format and device meets
 * bit for bit for finite x). Matrices are read from and written to Matrix Market files
 * (.mtx); vectors are plain arrays of the matrix's value type, read from and written to
 * NumPy .npy files of shape (N,), (N, 1) or (1, N). Products run on the context's device:
 * "cpu" (and "auto") on its threads, "ref" the definition on one thread; a GPU device is
 * refused with PXL_EDEVICE (not yet).
 *
 *   pxl_sparse *A, *B;
 *   if (pxl_sparse_load(ctx, "a.mtx", PXL_F64, &A) == PXL_OK &&
 *       pxl_sparse_convert(ctx, A, "auto", &B) == PXL_OK)
 *     pxl_sparse_spmv(ctx, B, x, pxl_sparse_cols(B), y, pxl_sparse_rows(B));
 */
typedef struct pxl_sparse pxl_sparse;

/* Reads a Matrix Market file (coordinate real, integer or pattern; general, symmetric or
 * skew-symmetric; or array real/integer general) as CSR with values of type (PXL_F32 or
 * PXL_F64); duplicate entries are summed in file order. PXL_EFORMAT names the line. */
int pxl_sparse_load(pxl_context *ctx, const char *path, pxl_type type, pxl_sparse **out);
/* Writes A as `coordinate real general`, values that read back to the same bits;
 * atomically (nothing is left at path on failure). */
int pxl_sparse_save(pxl_context *ctx, const pxl_sparse *A, const char *path);
/* A CSR matrix from n entries (i[e], j[e], v[e]), 0-based, in any order; duplicates are
 * summed in the order given. */
int pxl_sparse_from_triplets(pxl_context *ctx, int64_t rows, int64_t cols, pxl_type type, int64_t n,
                             const int64_t *i, const int64_t *j, const double *v, pxl_sparse **out);
/* A copy of A in `format`, or with "auto" in the format products of A's structure are
 * fastest in on the context's device: formats are predicted from the bytes they move,
 * the likely ones built and timed, and the answer is kept in the cache directory per
 * structure and device (a second "auto" for the same structure measures nothing).
 * PXL_ETOOBIG when the format would store over 16 times A's entries (padding: ELL
 * with a long row, DIA with scattered diagonals). */
int pxl_sparse_convert(pxl_context *ctx, const pxl_sparse *A, const char *format, pxl_sparse **out);
/* The entries A would store in `format` (padding included) into *stored, without
 * building it; PXL_ETOOBIG, as pxl_sparse_convert would refuse, past 16 times A's
 * entries. */
int pxl_sparse_stored_as(pxl_context *ctx, const pxl_sparse *A, const char *format, int64_t *stored);
/* What "auto" chose for A and why, as text ("dia: csr 1.90 ms, dia 0.71 ms, ..." or
 * "dia (cached)") into report[n]; the format's name into *format (static). */
int pxl_sparse_choose(pxl_context *ctx, const pxl_sparse *A, const char **format, char *report, size_t n);
/* y = A x: x has pxl_sparse_cols(A) elements (nx), y pxl_sparse_rows(A) (ny), both of
 * A's value type; y must not overlap x. */
int pxl_sparse_spmv(pxl_context *ctx, const pxl_sparse *A, const void *x, int64_t nx, void *y, int64_t ny);
void pxl_sparse_free(pxl_sparse *A);
const char *pxl_sparse_format(const pxl_sparse *A);
pxl_type pxl_sparse_type(const pxl_sparse *A);
int64_t pxl_sparse_rows(const pxl_sparse *A);
int64_t pxl_sparse_cols(const pxl_sparse *A);
int64_t pxl_sparse_nnz(const pxl_sparse *A);    /* entries of the CSR form */
int64_t pxl_sparse_stored(const pxl_sparse *A); /* entries the format stores, padding included */

/* A vector from a .npy file, converted to type (PXL_F32 or PXL_F64): *data (free with
 * pxl_vector_free) of *n elements. */
int pxl_vector_load(pxl_context *ctx, const char *path, pxl_type type, void **data, int64_t *n);
/* Writes n elements of type as a .npy file of shape (n,), atomically. */
int pxl_vector_save(pxl_context *ctx, const char *path, const void *data, int64_t n, pxl_type type);
void pxl_vector_free(void *data);
/* Writes rows x cols elements of type (row-major) as a .npy array of shape (rows, cols). */
int pxl_array_save(pxl_context *ctx, const char *path, const void *data, int64_t rows, int64_t cols, pxl_type type);

/* ---- normalized cuts (docs/SPARSE.md) ---- */

/* The normalized-cuts affinity of img's first channel (integer types scaled to [0, 1]
 * by their maximum, floats as they are): a DIA matrix of width * height rows joining
 * each pixel to those within `radius` (0 to 64; 5 gives 81 diagonals) with the weight
 * exp(-(I_p - I_q)^2 / sigma_i^2) * exp(-d^2 / sigma_x^2), times exp(-E^2 / sigma_e^2)
 * with an edge image (NULL: none), E the largest edge value on the segment from p to q. */
int pxl_sparse_affinity(pxl_context *ctx, const pxl_image *img, const pxl_image *edges, int radius, double sigma_i,
                        double sigma_x, double sigma_e, pxl_type type, pxl_sparse **out);
/* The k largest (largest != 0) or smallest eigenvalues of symmetric A into vals and their
 * unit eigenvectors into vecs (rows x k, column-major: vector c at vecs + c * rows), each
 * signed so that its largest component is positive; tol: relative residual (0: 1e-10,
 * for f32 matrices 1e-5).
 * Thick-restart Lanczos with full reorthogonalisation, on the host. */
int pxl_sparse_eigsh(pxl_context *ctx, const pxl_sparse *A, int k, int largest, double tol, double *vals,
                     double *vecs);
/* Normalized-cuts segmentation: `regions` (2 to 64) regions of W's pixels (W from
 * pxl_sparse_affinity) into labels (a host u8 or u16 image of one channel with W's pixel
 * count, values 0 .. regions - 1), and the generalized eigenvalues lambda of
 * (D - W) y = lambda D y into vals (regions of them, smallest first). */
int pxl_sparse_ncuts(pxl_context *ctx, const pxl_sparse *W, int regions, pxl_image *labels, double *vals);

#ifdef __cplusplus
}
#endif
#endif
