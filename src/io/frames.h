/*
 * frames.h - streams of frames, read and written one frame at a time: YUV4MPEG2 video
 * (.y4m, the format ffmpeg and x264 read and write) and numbered image files
 * ("frame_%04d.png").
 *
 * Memory stays bounded: a reader holds one frame, a writer none, whatever the stream's
 * length. A frame is a list of planes, each a pxl image: a YUV4MPEG2 frame is its Y, Cb
 * and Cr planes (u8, one channel, the chroma planes subsampled as the stream's colour
 * space says) or its Y plane alone for mono; a numbered file is one plane, the image as
 * io_load reads it (any type, 1, 3 or 4 channels).
 *
 * "-" is standard input (reading) or standard output (writing), a y4m stream either way,
 * for pipes to and from ffmpeg; standard output is written as the frames come, with no
 * temporary file.
 *
 * Every error message names the stream and, past the header, the frame ("in.y4m: frame
 * 12: truncated: 1000 of 3110400 bytes"). A YUV4MPEG2 file is written like every pxl
 * file (util/file.h's AtomicFile): under a temporary name renamed at frames_commit, so
 * a failed or interrupted run leaves nothing under the final name and an existing file
 * untouched. Numbered files are each written atomically as their frame completes.
 */
#ifndef PXL_FRAMES_H
#define PXL_FRAMES_H

#include <stddef.h>
#include <stdint.h>

#include "image/image.h"
#include "util/err.h"

#define FRAMES_MAX_PLANES 3
#define FRAMES_HEADER_MAX 4096 /* the longest stream or frame header line read */

typedef enum { FR_Y4M, FR_SEQ } FrameKind;
typedef enum { CH_MONO, CH_420, CH_422, CH_444 } Chroma;

typedef struct {
  FrameKind kind;
  int width, height;  /* the Y plane's (y4m) or the first file's size (numbered files) */
  int planes;         /* planes per frame: 1 (mono, numbered files) or 3 */
  Chroma chroma;      /* y4m: how Cb and Cr are subsampled */
  char cspace[32];    /* y4m: the C parameter as written ("420jpeg"), "" when absent */
  char extra[FRAMES_HEADER_MAX]; /* y4m: the header's other parameters (F, I, A, X...) as
                                  * written, each with its leading space, for a writer */
  int64_t count;      /* frames in the stream when known (a regular y4m file whose frame
                       * headers are all as long as the first: known at the open for bare
                       * "FRAME" lines, else after the first frame is read; a run of
                       * numbered files), else -1 */
} FrameInfo;

/* Whether path names a stream frames_open reads: 2 a numbered pattern (frames_pattern),
 * 1 "-" (standard input) or a regular file that starts with "YUV4MPEG2 ", 0 neither (an
 * image file, a missing file; a pipe or device, which is not read here). */
int frames_is_stream(const char *path);
/* Whether path names a stream frames_create writes: 2 a numbered pattern, 1 a name
 * ending in .y4m (any case), 0 neither. */
int frames_is_output(const char *path);

/* Checks a numbered file pattern: text with exactly one %d or %0Nd (N 1..9) and '%%' for
 * a '%'. PXL_OK and 1 in *is when path is one, PXL_OK and 0 when path has no '%', else
 * PXL_EARG naming what is wrong. */
int frames_pattern(const char *path, int *is, Err *err);
/* The file name of frame `number` of pattern (checked by frames_pattern) into buf.
 * PXL_EARG when it does not fit. */
int frames_name(const char *pattern, int64_t number, char *buf, size_t size, Err *err);

typedef struct FrameReader FrameReader;
/* Opens a stream for reading. A pattern's first file is the first of numbers 0 to 4
 * that exists, its last the one before the first missing number; a y4m file's header
 * is read and checked (8-bit 4:2:0, 4:2:2, 4:4:4 or mono). PXL_EIO for a missing or
 * unreadable file, PXL_EFORMAT for a malformed or unsupported header, PXL_ETOOBIG for
 * dimensions over the image limits. Close with frames_close. */
int frames_open(const char *path, FrameReader **out, Err *err);
/* A YUV4MPEG2 stream held in memory (n bytes at buf, which must outlive the reader);
 * `name` stands for it in messages. As frames_open otherwise. */
int frames_open_memory(const void *buf, size_t n, const char *name, FrameReader **out, Err *err);
const FrameInfo *frames_info(const FrameReader *r);
/* Reads the next frame into planes[0 .. info->planes - 1] (new images: free with
 * image_free) and sets *got to 1, or sets *got to 0 at the end of the stream. A frame
 * of numbered files may differ in size from the first; a y4m frame may not. */
int frames_read(FrameReader *r, struct pxl_image **planes, int *got, Err *err);
/* frames_read into the caller's host images planes[0 .. info->planes - 1], which must
 * have the frame's plane sizes, pixel type and channels (PXL_EARG otherwise, naming the
 * frame); y4m planes are read straight into their rows. */
int frames_read_into(FrameReader *r, struct pxl_image *const *planes, int *got, Err *err);
/* The number of the frame last read: 1, 2, ... for y4m, the file's number for a pattern. */
int64_t frames_number(const FrameReader *r);
void frames_close(FrameReader *r);
/* PXL_EARG naming the file when writing numbered files `out` with the numbers of r's
 * frames would replace one of r's files (patterns that differ in text and name the same
 * files: "f_%d.png" and "f_%01d.png"); PXL_OK otherwise and for a y4m r. */
int frames_overlap(const FrameReader *r, const char *out, Err *err);

typedef struct FrameWriter FrameWriter;
/* Starts writing a stream at path (frames_is_output). For y4m, `like` (may be NULL)
 * gives the colour space and the header's other parameters; the size comes from the
 * first frame. Nothing appears under path before frames_commit. */
int frames_create(const char *path, const FrameInfo *like, FrameWriter **out, Err *err);
/* PXL_OK when frames of planes of this type and channel count can be written to path:
 * y4m takes u8 one-channel planes; numbered files whatever io_save takes for the first
 * frame's name. PXL_EARG with the reason otherwise. Touches no file. */
int frames_check_output(const char *path, pxl_type type, int channels, Err *err);
/* Writes one frame: n planes (y4m: 1 for mono or 3, sized as the stream's colour space
 * says for the first frame's Y size; numbered files: 1), `number` naming a numbered
 * file. */
int frames_write(FrameWriter *w, int64_t number, const struct pxl_image *const *planes, int n, Err *err);
/* Completes the stream (a y4m file renamed into place) and frees w. A stream with no
 * frame is PXL_EARG (y4m: there is no size to write a header with). */
int frames_commit(FrameWriter *w, Err *err);
/* Abandons the stream: a y4m file's temporary file removed, its final name untouched;
 * numbered files already written stay. Frees w; NULL is a no-op. */
void frames_abort(FrameWriter *w);

/* The size of a chroma plane of a w x h frame in colour space c. */
void frames_chroma_size(Chroma c, int w, int h, int *cw, int *ch);

#endif
