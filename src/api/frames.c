/*
 * frames.c - the public face of io/frames.h: frame streams (y4m video, numbered image
 * files) read and written one frame at a time, for the CLI's `pxl run` over a stream and
 * for programs that feed frames themselves.
 */
#include "api/handles.h"
#include "io/frames.h"
#include "util/alloc.h"

struct pxl_frames {
  FrameReader *r; /* a stream being read, or */
  FrameWriter *w; /* one being written */
};

int pxl_frames_is_stream(const char *path) { return path ? frames_is_stream(path) : 0; }
int pxl_frames_is_output(const char *path) { return path ? frames_is_output(path) : 0; }

int pxl_frames_open(pxl_context *ctx, const char *path, pxl_frames **out) {
  api_clear(ctx);
  *out = NULL;
  if (!path) return api_fail(ctx, PXL_EARG, "no stream to open");
  pxl_frames *f = PXL_CALLOC(1, sizeof *f);
  if (!f) return api_fail(ctx, PXL_ENOMEM, "out of memory");
  Err e = {0};
  if (frames_open(path, &f->r, &e)) {
    PXL_FREE(f);
    return api_fail_err(ctx, &e);
  }
  *out = f;
  return PXL_OK;
}

int pxl_frames_create(pxl_context *ctx, const char *path, const pxl_frames *like, pxl_frames **out) {
  api_clear(ctx);
  *out = NULL;
  if (!path) return api_fail(ctx, PXL_EARG, "no stream to create");
  pxl_frames *f = PXL_CALLOC(1, sizeof *f);
  if (!f) return api_fail(ctx, PXL_ENOMEM, "out of memory");
  Err e = {0};
  if ((like && like->r && frames_overlap(like->r, path, &e)) ||
      frames_create(path, like && like->r ? frames_info(like->r) : NULL, &f->w, &e)) {
    PXL_FREE(f);
    return api_fail_err(ctx, &e);
  }
  *out = f;
  return PXL_OK;
}

int pxl_frames_check_output(pxl_context *ctx, const char *path, pxl_type type, int channels) {
  api_clear(ctx);
  Err e = {0};
  if (!path) return api_fail(ctx, PXL_EARG, "no stream name");
  return frames_check_output(path, type, channels, &e) ? api_fail_err(ctx, &e) : PXL_OK;
}

int pxl_frames_planes(const pxl_frames *f) { return f && f->r ? frames_info(f->r)->planes : 0; }

void pxl_frames_size(const pxl_frames *f, int *width, int *height) {
  const FrameInfo *in = f && f->r ? frames_info(f->r) : NULL;
  if (width) *width = in ? in->width : 0;
  if (height) *height = in ? in->height : 0;
}

int64_t pxl_frames_count(const pxl_frames *f) { return f && f->r ? frames_info(f->r)->count : -1; }
int64_t pxl_frames_number(const pxl_frames *f) { return f && f->r ? frames_number(f->r) : 0; }

int pxl_frames_read(pxl_context *ctx, pxl_frames *f, pxl_image **planes, int *got) {
  api_clear(ctx);
  *got = 0;
  if (!f || !f->r) return api_fail(ctx, PXL_EARG, "not a stream being read");
  Err e = {0};
  return frames_read(f->r, planes, got, &e) ? api_fail_err(ctx, &e) : PXL_OK;
}

int pxl_frames_read_into(pxl_context *ctx, pxl_frames *f, pxl_image *const *planes, int *got) {
  api_clear(ctx);
  *got = 0;
  if (!f || !f->r) return api_fail(ctx, PXL_EARG, "not a stream being read");
  if (!planes) return api_fail(ctx, PXL_EARG, "no images to read the frame into");
  Err e = {0};
  return frames_read_into(f->r, planes, got, &e) ? api_fail_err(ctx, &e) : PXL_OK;
}

int pxl_frames_write(pxl_context *ctx, pxl_frames *f, int64_t number, pxl_image *const *planes, int n) {
  api_clear(ctx);
  if (!f || !f->w) return api_fail(ctx, PXL_EARG, "not a stream being written");
  if (n < 1 || n > FRAMES_MAX_PLANES || !planes) return api_fail(ctx, PXL_EARG, "a frame has 1 to 3 planes, not %d", n);
  for (int i = 0; i < n; i++)
    if (planes[i] && planes[i]->device)
      return api_fail(ctx, PXL_EARG, "plane %d is in device memory (copy it with pxl_image_to_host)", i);
  Err e = {0};
  return frames_write(f->w, number, (const struct pxl_image *const *)planes, n, &e) ? api_fail_err(ctx, &e) : PXL_OK;
}

int pxl_frames_finish(pxl_context *ctx, pxl_frames *f) {
  api_clear(ctx);
  if (!f || !f->w) return PXL_OK;
  Err e = {0};
  int rc = frames_commit(f->w, &e);
  f->w = NULL;
  return rc ? api_fail_err(ctx, &e) : PXL_OK;
}

void pxl_frames_free(pxl_frames *f) {
  if (!f) return;
  frames_close(f->r);
  frames_abort(f->w);
  PXL_FREE(f);
}
