/*
 * mksamples.c - synthesises the sample images under samples/ and the fuzz seeds under
 * tests/fuzz/seeds/, deterministically (same bytes on every run and machine).
 *
 *   mksamples [SAMPLES_DIR [SEEDS_DIR]]     (defaults: samples, tests/fuzz/seeds)
 *
 * samples/shapes.png   640x480 gray u8: gradient background, filled circles, rectangles
 *                      and a ring of different intensities, thin lines, mild noise - for
 *                      edge detection, blur and threshold demos.
 * samples/scene.png    the same scene in colour (RGB u8).
 * samples/scene.jpg    scene.png as JPEG (quality 95).
 * samples/depth16.png  320x240 gray u16 depth map in millimetres: a receding floor, two
 *                      spheres and a box.
 * samples/clip.y4m     a YUV4MPEG2 video: 8 frames of 160x120, 4:2:0 (420jpeg, BT.601
 *                      full range), a window panning across scene.png - for `pxl run`
 *                      over a stream of frames.
 * The seeds are tiny PNG/JPEG/PGM/PPM files of every layout the decoders accept, and
 * TIFF and .npy files of every pixel type.
 *
 * Shapes are supersampled 4x4 so their edges are anti-aliased; the noise comes from an
 * integer hash of the pixel position, never from rand().
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "image/image.h"
#include "io/frames.h"
#include "io/imageio.h"

#define W 640
#define H 480
#define SS 4 /* supersampling per axis */

typedef struct {
  float r, g, b;
} Rgb;

typedef enum { SH_RECT, SH_CIRCLE, SH_RING, SH_LINE } ShapeKind;

typedef struct {
  ShapeKind kind;
  float a, b, c, d, e; /* rect x0 y0 x1 y1 | circle cx cy r | ring cx cy r0 r1 |
                          line x0 y0 x1 y1 half-width */
  float gray;          /* intensity in shapes.png */
  Rgb color;           /* colour in scene.png */
} Shape;

/* Painted in order, later shapes on top. */
static const Shape shapes[] = {
    {SH_RECT, 380, 60, 580, 200, 0, 85, {40, 90, 200}},
    {SH_RECT, 60, 300, 220, 440, 0, 245, {240, 220, 60}},
    {SH_RECT, 270, 50, 330, 230, 0, 70, {120, 60, 30}},
    {SH_CIRCLE, 170, 140, 80, 0, 0, 220, {220, 50, 40}},
    {SH_CIRCLE, 470, 330, 95, 0, 0, 30, {30, 140, 70}},
    {SH_CIRCLE, 300, 380, 45, 0, 0, 170, {230, 120, 200}},
    {SH_RING, 470, 330, 40, 55, 0, 200, {250, 250, 250}},
    {SH_LINE, 20, 460, 620, 20, 0.6f, 255, {255, 255, 255}},
    {SH_LINE, 0, 250, 640, 250, 0.5f, 10, {0, 0, 0}},
    {SH_LINE, 600, 100, 600, 470, 0.5f, 0, {20, 20, 90}},
    {SH_LINE, 30, 30, 250, 20, 0.7f, 200, {255, 240, 0}},
};

#define NSHAPES (sizeof shapes / sizeof shapes[0])

static int inside(const Shape *s, float x, float y) {
  switch (s->kind) {
  case SH_RECT:
    return x >= s->a && x < s->c && y >= s->b && y < s->d;
  case SH_CIRCLE:
    return (x - s->a) * (x - s->a) + (y - s->b) * (y - s->b) < s->c * s->c;
  case SH_RING: {
    float d2 = (x - s->a) * (x - s->a) + (y - s->b) * (y - s->b);
    return d2 >= s->c * s->c && d2 < s->d * s->d;
  }
  case SH_LINE: { /* distance to the segment */
    float dx = s->c - s->a, dy = s->d - s->b;
    float t = ((x - s->a) * dx + (y - s->b) * dy) / (dx * dx + dy * dy);
    t = t < 0 ? 0 : t > 1 ? 1 : t;
    float px = s->a + t * dx - x, py = s->b + t * dy - y;
    return px * px + py * py < s->e * s->e;
  }
  }
  return 0;
}

/* Integer hash of (x, y, salt) -> uniform in [-1, 1]. */
static float noise(int x, int y, int salt) {
  uint32_t h = (uint32_t)x * 374761393u + (uint32_t)y * 668265263u + (uint32_t)salt * 2246822519u;
  h = (h ^ (h >> 13)) * 1274126177u;
  h ^= h >> 16;
  return (float)(h & 0xffff) / 32767.5f - 1.0f;
}

static uint8_t clamp8(float v) { return v < 0 ? 0 : v > 255 ? 255 : (uint8_t)lrintf(v); }

static Rgb background(float x, float y) {
  float u = x / W, v = y / H;
  return (Rgb){70 + 180 * v + 20 * u, 130 + 50 * v - 30 * u, 200 - 80 * v + 30 * u};
}

/* Renders the scene at (x, y): gray value and colour of the topmost shape. */
static void scene_at(float x, float y, float *gray, Rgb *rgb) {
  *gray = 50 + 90 * x / W + 40 * y / H;
  *rgb = background(x, y);
  for (size_t i = 0; i < NSHAPES; i++)
    if (inside(&shapes[i], x, y)) {
      *gray = shapes[i].gray;
      *rgb = shapes[i].color;
    }
}

static void render_scene(struct pxl_image *gray, struct pxl_image *rgb) {
  for (int y = 0; y < H; y++) {
    uint8_t *g = image_row(gray, y), *c = image_row(rgb, y);
    for (int x = 0; x < W; x++) {
      float gs = 0;
      Rgb cs = {0, 0, 0};
      for (int sy = 0; sy < SS; sy++)
        for (int sx = 0; sx < SS; sx++) {
          float gv;
          Rgb cv;
          scene_at(x + (sx + 0.5f) / SS, y + (sy + 0.5f) / SS, &gv, &cv);
          gs += gv;
          cs.r += cv.r, cs.g += cv.g, cs.b += cv.b;
        }
      float k = 1.0f / (SS * SS);
      g[x] = clamp8(gs * k + 3 * noise(x, y, 0));
      c[3 * x + 0] = clamp8(cs.r * k + 3 * noise(x, y, 1));
      c[3 * x + 1] = clamp8(cs.g * k + 3 * noise(x, y, 2));
      c[3 * x + 2] = clamp8(cs.b * k + 3 * noise(x, y, 3));
    }
  }
}

/* Depth in millimetres: a floor receding to the top, two spheres, a box. */
static void render_depth(struct pxl_image *img) {
  int w = img->width, h = img->height;
  for (int y = 0; y < h; y++) {
    uint16_t *row = image_row(img, y);
    for (int x = 0; x < w; x++) {
      float d = 12000.0f - 10500.0f * (float)y / (float)(h - 1); /* floor: 12 m .. 1.5 m */
      if (x >= 190 && x < 290 && y >= 40 && y < 110) d = 5200.0f + 6.0f * (float)(x - 190);
      static const float spheres[][4] = {{95, 120, 60, 3500}, {225, 160, 42, 2200}};
      for (int i = 0; i < 2; i++) {
        float dx = x - spheres[i][0], dy = y - spheres[i][1], r = spheres[i][2];
        float q = r * r - dx * dx - dy * dy;
        if (q > 0) {
          float s = spheres[i][3] - 12.0f * sqrtf(q);
          if (s < d) d = s;
        }
      }
      d += 2.0f * noise(x, y, 7);
      row[x] = (uint16_t)lrintf(d < 0 ? 0 : d > 65535 ? 65535 : d);
    }
  }
}

static int save(const char *dir, const char *name, const struct pxl_image *img) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  Err err = {0};
  if (io_save(path, img, &err) != PXL_OK) {
    fprintf(stderr, "mksamples: %s\n", err.msg);
    return 1;
  }
  printf("wrote %s\n", path);
  return 0;
}

/* The top-left w x h corner of src, as a new image (NULL on failure). */
static struct pxl_image *crop(const struct pxl_image *src, int x0, int y0, int w, int h) {
  struct pxl_image *img;
  Err err = {0};
  if (image_new(w, h, src->type, src->channels, &img, &err) != PXL_OK) return NULL;
  size_t px = (size_t)src->channels * (size_t)pxl_type_size(src->type);
  for (int y = 0; y < h; y++)
    memcpy(image_row(img, y), (const char *)image_row(src, y0 + y) + (size_t)x0 * px, (size_t)w * px);
  return img;
}

static int write_text(const char *dir, const char *name, const char *text) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
    fprintf(stderr, "mksamples: cannot write %s\n", path);
    return 1;
  }
  printf("wrote %s\n", path);
  return 0;
}

/* Writes the YUV4MPEG2 file dir/name of n frames of w x h in like's colour space, frame k
 * (from 0) filled by fill(planes, k, ctx) into planes sized as the colour space says. */
typedef void FillFrame(struct pxl_image *const *planes, int k, const void *ctx);
static int write_y4m(const char *dir, const char *name, const FrameInfo *like, int w, int h, int n, FillFrame *fill,
                     const void *ctx) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FrameWriter *fw = NULL;
  struct pxl_image *p[3] = {NULL, NULL, NULL};
  Err err = {0};
  int cw, ch, np = like->chroma == CH_MONO ? 1 : 3, rc = frames_create(path, like, &fw, &err);
  frames_chroma_size(like->chroma, w, h, &cw, &ch);
  for (int i = 0; i < np && !rc; i++) rc = image_new(i ? cw : w, i ? ch : h, PXL_U8, 1, &p[i], &err);
  for (int k = 0; k < n && !rc; k++) {
    fill(p, k, ctx);
    rc = frames_write(fw, k + 1, (const struct pxl_image *const *)p, np, &err);
  }
  if (!rc) rc = frames_commit(fw, &err);
  else frames_abort(fw);
  for (int i = 0; i < 3; i++) image_free(p[i]);
  if (rc) fprintf(stderr, "mksamples: %s\n", err.msg);
  else printf("wrote %s\n", path);
  return rc != 0;
}

/* A seed's frame, the same every time: plane i is src's top-left corner from column i. */
static void fill_seed(struct pxl_image *const *p, int k, const void *ctx) {
  const struct pxl_image *src = ctx;
  (void)k;
  for (int i = 0; i < 3 && p[i]; i++)
    for (int y = 0; y < p[i]->height; y++)
      memcpy(image_row(p[i], y), (const uint8_t *)image_row(src, y) + i, (size_t)p[i]->width);
}

/* A tiny YUV4MPEG2 seed: n frames of w x h in colour space cs, samples from src. */
static int write_y4m_seed(const char *dir, const char *name, const char *cs, Chroma c, int w, int h, int n,
                          const struct pxl_image *src) {
  FrameInfo like = {.kind = FR_Y4M, .chroma = c, .extra = " F25:1"};
  snprintf(like.cspace, sizeof like.cspace, "%s", cs);
  return write_y4m(dir, name, &like, w, h, n, fill_seed, src);
}

static int write_seeds(const char *dir, struct pxl_image *gray, struct pxl_image *rgb,
                       struct pxl_image *depth) {
  int bad = 0;
  struct pxl_image *g = crop(gray, 140, 50, 9, 7), *c = crop(rgb, 150, 60, 8, 6);
  struct pxl_image *cj = crop(rgb, 440, 280, 16, 16), *gj = crop(gray, 440, 280, 8, 8);
  struct pxl_image *d = crop(depth, 90, 110, 5, 4), *c16, *rgba;
  Err err = {0};
  if (!g || !c || !cj || !gj || !d || image_new(4, 3, PXL_U16, 3, &c16, &err) ||
      image_new(4, 4, PXL_U8, 4, &rgba, &err))
    return 1;
  for (int y = 0; y < 3; y++)
    for (int x = 0; x < 12; x++) ((uint16_t *)image_row(c16, y))[x] = (uint16_t)(x * 5000 + y * 700);
  for (int y = 0; y < 4; y++)
    for (int x = 0; x < 16; x++) ((uint8_t *)image_row(rgba, y))[x] = (uint8_t)(x * 16 + y * 60);
  bad |= save(dir, "tiny_gray.png", g);
  bad |= save(dir, "tiny_rgb.png", c);
  bad |= save(dir, "tiny_rgba.png", rgba);
  bad |= save(dir, "tiny_gray16.png", d);
  bad |= save(dir, "tiny_rgb.jpg", cj);
  bad |= save(dir, "tiny_gray.jpg", gj);
  bad |= save(dir, "tiny.pgm", g);
  bad |= save(dir, "tiny.ppm", c);
  bad |= save(dir, "tiny16.ppm", c16);
  /* TIFF and .npy: every type has a row in one of them (i16 and f64 .npy, the others TIFF) */
  static const struct {
    const char *name;
    pxl_type type;
    int ch;
  } typed[] = {{"tiny_u16.tif", PXL_U16, 1}, {"tiny_i32.tif", PXL_I32, 3}, {"tiny_u32.tif", PXL_U32, 1},
               {"tiny_f32.tif", PXL_F32, 4}, {"tiny_u8.tif", PXL_U8, 3},   {"tiny_i16.npy", PXL_I16, 1},
               {"tiny_f64.npy", PXL_F64, 3}, {"tiny_u8.npy", PXL_U8, 4}};
  for (size_t k = 0; k < sizeof typed / sizeof *typed; k++) {
    struct pxl_image *t;
    if (image_new(5, 3, typed[k].type, typed[k].ch, &t, &err)) return 1;
    int es = pxl_type_size(typed[k].type);
    for (int y = 0; y < 3; y++)
      for (int i = 0; i < 5 * typed[k].ch; i++) {
        uint8_t *px = (uint8_t *)image_row(t, y) + (size_t)i * (size_t)es;
        double v = (i * 37 + y * 11) % 200 - (typed[k].type == PXL_I16 || typed[k].type == PXL_I32 ? 100 : 0);
        switch (typed[k].type) {
        case PXL_U8: *px = (uint8_t)v; break;
        case PXL_U16: *(uint16_t *)px = (uint16_t)(v * 300); break;
        case PXL_I16: *(int16_t *)px = (int16_t)(v * 300); break;
        case PXL_I32: *(int32_t *)px = (int32_t)(v * 1e6); break;
        case PXL_U32: *(uint32_t *)px = (uint32_t)(v * 2e7); break;
        case PXL_F32: *(float *)px = (float)(v / 7); break;
        case PXL_F64: *(double *)px = v / 7; break;
        }
      }
    bad |= save(dir, typed[k].name, t);
    image_free(t);
  }
  bad |= write_y4m_seed(dir, "tiny420.y4m", "420jpeg", CH_420, 5, 3, 2, g);
  bad |= write_y4m_seed(dir, "tiny422.y4m", "422", CH_422, 4, 3, 1, g);
  bad |= write_y4m_seed(dir, "tinymono.y4m", "mono", CH_MONO, 3, 2, 2, g);
  bad |= write_text(dir, "ascii.pgm", "P2\n# plain PGM\n4 3\n15\n0 1 2 3\n4 5 6 7\n8 9 14 15\n");
  bad |= write_text(dir, "ascii.ppm", "P3 2 2 1000\n0 0 0  1000 0 0\n0 1000 0  500 500 1000\n");
  image_free(g), image_free(c), image_free(cj), image_free(gj), image_free(d);
  image_free(c16), image_free(rgba);
  return bad;
}

/* samples/clip.y4m: frame k is the 160x120 window of rgb at (40 + 48k, 60 + 24k) in
 * Y'CbCr (BT.601, full range), Cb and Cr averaged over 2x2 blocks. */
enum { CLIP_W = 160, CLIP_H = 120 };
static void fill_clip(struct pxl_image *const *p, int k, const void *ctx) {
  const struct pxl_image *rgb = ctx;
  int x0 = 40 + 48 * k, y0 = 60 + 24 * k;
  static float cb[CLIP_H][CLIP_W], cr[CLIP_H][CLIP_W];
  for (int y = 0; y < CLIP_H; y++) {
    const uint8_t *s = (const uint8_t *)image_row(rgb, y0 + y) + 3 * x0;
    uint8_t *yr = image_row(p[0], y);
    for (int x = 0; x < CLIP_W; x++) {
      float r = s[3 * x], g = s[3 * x + 1], b = s[3 * x + 2];
      yr[x] = clamp8(0.299f * r + 0.587f * g + 0.114f * b);
      cb[y][x] = 128 - 0.168736f * r - 0.331264f * g + 0.5f * b;
      cr[y][x] = 128 + 0.5f * r - 0.418688f * g - 0.081312f * b;
    }
  }
  for (int y = 0; y < CLIP_H / 2; y++)
    for (int x = 0; x < CLIP_W / 2; x++) {
      ((uint8_t *)image_row(p[1], y))[x] =
          clamp8((cb[2 * y][2 * x] + cb[2 * y][2 * x + 1] + cb[2 * y + 1][2 * x] + cb[2 * y + 1][2 * x + 1]) / 4);
      ((uint8_t *)image_row(p[2], y))[x] =
          clamp8((cr[2 * y][2 * x] + cr[2 * y][2 * x + 1] + cr[2 * y + 1][2 * x] + cr[2 * y + 1][2 * x + 1]) / 4);
    }
}

static int write_clip(const char *dir, const struct pxl_image *rgb) {
  FrameInfo like = {.kind = FR_Y4M, .chroma = CH_420, .cspace = "420jpeg", .extra = " F12:1 Ip A1:1"};
  return write_y4m(dir, "clip.y4m", &like, CLIP_W, CLIP_H, 8, fill_clip, rgb);
}

int main(int argc, char **argv) {
  const char *out = argc > 1 ? argv[1] : "samples";
  const char *seeds = argc > 2 ? argv[2] : "tests/fuzz/seeds";
  struct pxl_image *gray, *rgb, *depth;
  Err err = {0};
  if (image_new(W, H, PXL_U8, 1, &gray, &err) || image_new(W, H, PXL_U8, 3, &rgb, &err) ||
      image_new(320, 240, PXL_U16, 1, &depth, &err)) {
    fprintf(stderr, "mksamples: %s\n", err.msg);
    return 1;
  }
  render_scene(gray, rgb);
  render_depth(depth);
  int bad = save(out, "shapes.png", gray) | save(out, "scene.png", rgb) |
            save(out, "scene.jpg", rgb) | save(out, "depth16.png", depth) | write_clip(out, rgb);
  bad |= write_seeds(seeds, gray, rgb, depth);
  image_free(gray);
  image_free(rgb);
  image_free(depth);
  return bad ? 1 : 0;
}
