/*
 * frames.c - streams of frames: YUV4MPEG2 files and numbered image files (see frames.h).
 *
 * YUV4MPEG2, as ffmpeg and the mjpegtools define it: a header line "YUV4MPEG2" followed
 * by parameters, each a space and a letter and a value (W width, H height, C colour
 * space, F frame rate, I interlacing, A pixel aspect, X extensions); then per frame a
 * line "FRAME" (with optional parameters) and the planes, Y then Cb then Cr, rows
 * packed. Only 8-bit colour spaces are read: 420jpeg (the default), 420paldv, 420mpeg2
 * and 420 (the same samples with other chroma siting), 422, 444 and mono; 10-bit and
 * alpha variants are refused by name. A writer copies the reader's C, F, I, A and X
 * parameters, so a processed stream keeps its rate and siting.
 *
 * Numbered files go through io_load and io_save one frame at a time; the pattern is
 * parsed here and the names are made from its parts, never by handing the user's text
 * to printf.
 */
#include "io/frames.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "io/formats.h"
#include "io/imageio.h"
#include "util/alloc.h"
#include "util/file.h"

#define Y4M_MAGIC "YUV4MPEG2"

void frames_chroma_size(Chroma c, int w, int h, int *cw, int *ch) {
  *cw = c == CH_444 ? w : (w + 1) / 2;
  *ch = c == CH_420 ? (h + 1) / 2 : h;
  if (c == CH_MONO) *cw = *ch = 0;
}

/* The planes' sizes of a w x h frame in colour space c; returns the plane count. */
static int plane_sizes(Chroma c, int w, int h, int pw[3], int ph[3]) {
  pw[0] = w, ph[0] = h;
  if (c == CH_MONO) return 1;
  frames_chroma_size(c, w, h, &pw[1], &ph[1]);
  pw[2] = pw[1], ph[2] = ph[1];
  return 3;
}

/* ---- numbered file patterns ---- */

typedef struct {
  char pre[4096], post[4096]; /* the text around the number, '%%' already made '%' */
  int width;                  /* %0Nd: N; %d: 0 */
} Pattern;

/* Parses pattern text; PXL_OK with *is 0 when it has no '%'. */
static int parse_pattern(const char *path, Pattern *p, int *is, Err *err) {
  *is = 0;
  if (!strchr(path, '%')) return PXL_OK;
  size_t n = 0;
  int convs = 0;
  char *dst = p->pre;
  p->width = 0;
  for (const char *s = path; *s; s++) {
    if (*s == '%' && s[1] == '%') {
      s++;
    } else if (*s == '%') {
      const char *q = s + 1;
      int width = 0;
      if (*q == '0' && q[1] >= '1' && q[1] <= '9') width = q[1] - '0', q += 2;
      if (*q != 'd')
        return io_err(err, PXL_EARG, path,
                      "bad frame file pattern: use one %%d or %%0Nd (N from 1 to 9) for the frame number, %%%% for a '%%'");
      if (++convs > 1) return io_err(err, PXL_EARG, path, "bad frame file pattern: more than one %%d");
      p->width = width;
      dst[n] = 0;
      dst = p->post, n = 0;
      s = q;
      continue;
    }
    if (n + 1 >= sizeof p->pre) return io_err(err, PXL_EARG, path, "frame file pattern too long");
    dst[n++] = *s;
  }
  dst[n] = 0;
  if (!convs) return io_err(err, PXL_EARG, path, "bad frame file pattern: no %%d for the frame number");
  *is = 1;
  return PXL_OK;
}

int frames_pattern(const char *path, int *is, Err *err) {
  Pattern *p = PXL_MALLOC(sizeof *p);
  if (!p) return err_set(err, PXL_ENOMEM, "out of memory");
  int rc = parse_pattern(path, p, is, err);
  PXL_FREE(p);
  return rc;
}

static int pattern_name(const Pattern *p, int64_t number, char *buf, size_t size, Err *err) {
  int len = snprintf(buf, size, "%s%0*lld%s", p->pre, p->width, (long long)number, p->post);
  if (len < 0 || (size_t)len >= size) return err_set(err, PXL_EARG, "frame file name too long");
  return PXL_OK;
}

int frames_name(const char *pattern, int64_t number, char *buf, size_t size, Err *err) {
  Pattern *p = PXL_MALLOC(sizeof *p);
  if (!p) return err_set(err, PXL_ENOMEM, "out of memory");
  int is = 0, rc = parse_pattern(pattern, p, &is, err);
  if (rc == PXL_OK && !is) rc = io_err(err, PXL_EARG, pattern, "not a frame file pattern");
  if (rc == PXL_OK) rc = pattern_name(p, number, buf, size, err);
  PXL_FREE(p);
  return rc;
}

static int exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

int frames_is_stream(const char *path) {
  int is = 0;
  if (strcmp(path, "-") == 0) return 1; /* standard input: a y4m stream (nothing else is read there) */
  if (frames_pattern(path, &is, NULL) == PXL_OK && is) return 2;
  struct stat st; /* regular files only: sniffing a pipe would eat the bytes its reader needs */
  if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) return 0;
  FILE *f = fopen(path, "rb");
  if (!f) return 0;
  char b[sizeof Y4M_MAGIC] = {0};
  size_t n = fread(b, 1, sizeof b, f);
  fclose(f);
  return n == sizeof b && memcmp(b, Y4M_MAGIC " ", sizeof b) == 0;
}

/* A y4m stream to write: a name ending in .y4m (any case), or "-" (standard output). */
static int y4m_output(const char *path) {
  size_t n = strlen(path);
  return strcmp(path, "-") == 0 || (n >= 4 && strcasecmp(path + n - 4, ".y4m") == 0);
}

int frames_is_output(const char *path) {
  int is = 0;
  if (strcmp(path, "-") == 0) return 1;
  if (frames_pattern(path, &is, NULL) == PXL_OK && is) return 2;
  return y4m_output(path);
}

/* ---- reading ---- */

struct FrameReader {
  FrameInfo info;
  char name[4096];   /* the stream's name for messages: the path or the pattern */
  FILE *f;           /* y4m */
  Pattern pat;       /* numbered files */
  int64_t next;      /* number of the next frame */
  int64_t last;      /* numbered files: the last number that exists */
  int64_t number;    /* the frame last read */
  int64_t size;      /* y4m: the bytes of the file or memory, -1 when unknown (a pipe) */
  uint64_t frame_bytes; /* y4m: the planes' bytes of a frame */
  struct pxl_image *first; /* numbered files: the first frame, loaded by the open for its
                            * size and handed out by the first read */
  int ended;
};

/* The frame count of a y4m stream of known size whose frames, from byte `from` on, all
 * have a header of `header` bytes; -1 when the bytes left are not a whole number of them. */
static int64_t y4m_count(const FrameReader *r, int64_t from, uint64_t header) {
  if (r->size < 0 || from < 0 || r->size < from) return -1;
  uint64_t fb = header + r->frame_bytes, rest = (uint64_t)(r->size - from);
  return rest % fb == 0 ? (int64_t)(rest / fb) : -1;
}

/* Reads a line of at most FRAMES_HEADER_MAX bytes into buf (without its '\n'): 1, or 0
 * at the end of the file before any byte, or -1 for a line that is too long, has a NUL
 * or ends without '\n' (*len: the bytes read). */
static int read_line(FILE *f, char *buf, size_t *len) {
  size_t n = 0;
  int c;
  while ((c = getc(f)) != EOF && c != '\n') {
    if (c == 0 || n + 1 >= FRAMES_HEADER_MAX) return *len = n, -1;
    buf[n++] = (char)c;
  }
  buf[n] = 0;
  *len = n;
  if (c == EOF) return n == 0 ? 0 : -1;
  return 1;
}

/* A positive decimal integer of at most 9 digits. */
static int parse_dim(const char *s, int *out) {
  int v = 0, n = 0;
  for (; *s >= '0' && *s <= '9' && n < 9; s++, n++) v = v * 10 + (*s - '0');
  if (*s || n == 0 || v == 0) return -1; /* a tenth digit stays in *s */
  *out = v;
  return 0;
}

/* The colour space named by a C parameter. */
static int parse_cspace(const char *c, Chroma *out) {
  static const struct {
    const char *name;
    Chroma chroma;
  } known[] = {{"420jpeg", CH_420}, {"420paldv", CH_420}, {"420mpeg2", CH_420}, {"420", CH_420},
               {"422", CH_422},     {"444", CH_444},      {"mono", CH_MONO}};
  for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
    if (strcmp(c, known[i].name) == 0) return *out = known[i].chroma, 0;
  return -1;
}

static int y4m_header(FrameReader *r, Err *err) {
  FrameInfo *in = &r->info;
  char line[FRAMES_HEADER_MAX];
  size_t len;
  int got = read_line(r->f, line, &len);
  if (got <= 0) return io_err(err, PXL_EFORMAT, r->name, "truncated or overlong YUV4MPEG2 header");
  if (strncmp(line, Y4M_MAGIC " ", sizeof Y4M_MAGIC) != 0)
    return io_err(err, PXL_EFORMAT, r->name, "not a YUV4MPEG2 file");
  in->chroma = CH_420;
  size_t xn = 0;
  for (char *tok = strtok(line + sizeof Y4M_MAGIC, " "); tok; tok = strtok(NULL, " ")) {
    switch (tok[0]) {
    case 'W':
      if (parse_dim(tok + 1, &in->width)) return io_err(err, PXL_EFORMAT, r->name, "bad width '%s'", tok);
      break;
    case 'H':
      if (parse_dim(tok + 1, &in->height)) return io_err(err, PXL_EFORMAT, r->name, "bad height '%s'", tok);
      break;
    case 'C':
      if (parse_cspace(tok + 1, &in->chroma))
        return io_err(err, PXL_EFORMAT, r->name,
                      "colour space C%.40s is not supported (8-bit 420jpeg, 420paldv, 420mpeg2, 420, 422, 444 and mono are)",
                      tok + 1);
      snprintf(in->cspace, sizeof in->cspace, "%s", tok + 1);
      break;
    default: { /* F, I, A, X and any other: kept for a writer */
      size_t tl = strlen(tok);
      if (xn + tl + 2 > sizeof in->extra) return io_err(err, PXL_EFORMAT, r->name, "header too long");
      in->extra[xn++] = ' ';
      memcpy(in->extra + xn, tok, tl + 1);
      xn += tl;
    }
    }
  }
  if (!in->width || !in->height) return io_err(err, PXL_EFORMAT, r->name, "header has no %s", in->width ? "H (height)" : "W (width)");
  int rc = io_check_dims(r->name, in->width, in->height, PXL_U8, 1, err);
  if (rc) return rc;
  int pw[3], ph[3];
  in->planes = plane_sizes(in->chroma, in->width, in->height, pw, ph);
  for (int i = 0; i < in->planes; i++) r->frame_bytes += (uint64_t)pw[i] * (uint64_t)ph[i];
  struct stat st;
  if (r->size < 0 && fileno(r->f) >= 0 && fstat(fileno(r->f), &st) == 0 && S_ISREG(st.st_mode)) r->size = st.st_size;
  in->count = y4m_count(r, ftell(r->f), 6); /* every frame with a bare "FRAME\n" header */
  return PXL_OK;
}

static int seq_open(FrameReader *r, const char *path, Err *err) {
  char name[8300];
  int64_t first = -1;
  for (int64_t k = 0; k <= 4 && first < 0; k++) {
    if (pattern_name(&r->pat, k, name, sizeof name, err)) return io_err(err, PXL_EARG, path, "frame file name too long");
    if (exists(name)) first = k;
  }
  if (first < 0) return io_err(err, PXL_EIO, path, "no frame file (tried the numbers 0 to 4)");
  int64_t last = first;
  for (;;) { /* the run of consecutive numbers: the count, for progress */
    if (pattern_name(&r->pat, last + 1, name, sizeof name, err) || !exists(name)) break;
    last++;
  }
  r->next = first;
  r->last = last;
  r->info.count = last - first + 1;
  r->info.planes = 1;
  r->info.kind = FR_SEQ;
  /* the size of the first frame, from its file, which the first read hands out */
  pattern_name(&r->pat, first, name, sizeof name, err);
  int rc = io_load(name, &r->first, err);
  if (rc) return rc;
  r->info.width = r->first->width;
  r->info.height = r->first->height;
  return PXL_OK;
}

/* Opens path, or (mem) a YUV4MPEG2 stream of n bytes at mem named path. */
static int open_reader(const char *path, const void *mem, size_t n, FrameReader **out, Err *err) {
  *out = NULL;
  FrameReader *r = PXL_CALLOC(1, sizeof *r);
  if (!r) return io_err(err, PXL_ENOMEM, path, "out of memory");
  snprintf(r->name, sizeof r->name, "%s", path);
  r->size = mem ? (int64_t)n : -1;
  int is = 0, rc = mem ? PXL_OK : parse_pattern(path, &r->pat, &is, err);
  if (rc == PXL_OK && is) {
    rc = seq_open(r, path, err);
  } else if (rc == PXL_OK) {
    r->info.kind = FR_Y4M;
    r->next = 1;
    r->f = mem ? fmemopen((void *)mem, n, "rb") : strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (r->f == stdin) snprintf(r->name, sizeof r->name, "standard input");
    if (!r->f) rc = io_err(err, errno == ENOMEM ? PXL_ENOMEM : PXL_EIO, path, "%s", strerror(errno));
    else rc = y4m_header(r, err);
  }
  if (rc) {
    frames_close(r);
    return rc;
  }
  *out = r;
  return PXL_OK;
}

int frames_open(const char *path, FrameReader **out, Err *err) { return open_reader(path, NULL, 0, out, err); }

int frames_open_memory(const void *buf, size_t n, const char *name, FrameReader **out, Err *err) {
  if (n == 0) {
    *out = NULL;
    return io_err(err, PXL_EFORMAT, name, "empty stream");
  }
  return open_reader(name, buf, n, out, err);
}

const FrameInfo *frames_info(const FrameReader *r) { return &r->info; }
int64_t frames_number(const FrameReader *r) { return r->number; }

/* Whether the caller's image img can take a plane of w x h one-byte pixels (else err). */
static int fits_plane(const FrameReader *r, int64_t k, int i, const struct pxl_image *img, int w, int h, Err *err) {
  if (img && !img->device && img->width == w && img->height == h && img->type == PXL_U8 && img->channels == 1)
    return PXL_OK;
  return err_set(err, PXL_EARG, "%s: frame %lld: plane %d is %dx%d u8, one channel; the image given for it is %s", r->name,
                 (long long)k, i, w, h, !img ? "missing" : img->device ? "in device memory" : "of another size or type");
}

static int y4m_read(FrameReader *r, struct pxl_image **planes, bool given, int *got, Err *err) {
  char line[FRAMES_HEADER_MAX];
  size_t len;
  int64_t k = r->next;
  long start = ftell(r->f); /* the frame's first byte, for the count below */
  int h = read_line(r->f, line, &len);
  if (h == 0) { /* the end, between frames */
    if (ferror(r->f)) return io_err(err, PXL_EIO, r->name, "frame %lld: read failed: %s", (long long)k, strerror(errno));
    r->ended = 1;
    return PXL_OK;
  }
  if (h < 0 || strncmp(line, "FRAME", 5) != 0 || (line[5] && line[5] != ' '))
    return io_err(err, PXL_EFORMAT, r->name, "frame %lld: %s", (long long)k,
                  h < 0 && len < 5 ? "truncated frame header" : "expected a FRAME header line");
  int pw[3], ph[3], n = plane_sizes(r->info.chroma, r->info.width, r->info.height, pw, ph);
  uint64_t total = r->frame_bytes, done = 0;
  long pos = ftell(r->f); /* a short file is found before the planes are allocated */
  if (k == 1 && r->info.count < 0 && start >= 0 && pos > start) /* frame headers with parameters */
    r->info.count = y4m_count(r, start, (uint64_t)(pos - start));
  if (r->size >= 0 && pos >= 0 && (uint64_t)(r->size - pos) < total)
    return io_err(err, PXL_EFORMAT, r->name, "frame %lld: truncated: %llu of %llu bytes", (long long)k,
                  (unsigned long long)(r->size - pos), (unsigned long long)total);
  for (int i = 0; i < n; i++) {
    int rc = given ? fits_plane(r, k, i, planes[i], pw[i], ph[i], err)
                   : io_image_new(r->name, pw[i], ph[i], PXL_U8, 1, &planes[i], err);
    if (rc) return rc;
    for (int y = 0; y < ph[i]; y++) {
      size_t m = fread(image_row(planes[i], y), 1, (size_t)pw[i], r->f);
      done += m;
      if (m < (size_t)pw[i]) {
        if (ferror(r->f))
          return io_err(err, PXL_EIO, r->name, "frame %lld: read failed: %s", (long long)k, strerror(errno));
        return io_err(err, PXL_EFORMAT, r->name, "frame %lld: truncated: %llu of %llu bytes", (long long)k,
                      (unsigned long long)done, (unsigned long long)total);
      }
    }
  }
  *got = 1;
  return PXL_OK;
}

/* A numbered frame loaded (img) copied into the caller's image: the same size, type
 * and channels; img freed. */
static int copy_into(const FrameReader *r, struct pxl_image *img, struct pxl_image *dst, Err *err) {
  int rc = PXL_OK;
  if (!dst || dst->device || !image_same_layout(dst, img))
    rc = err_set(err, PXL_EARG, "%s: frame %lld: %dx%d %s, %d channel%s; the image given for it is %s", r->name,
                 (long long)r->next, img->width, img->height, pxl_type_name(img->type), img->channels,
                 img->channels == 1 ? "" : "s", !dst ? "missing" : dst->device ? "in device memory" : "another");
  if (!rc) image_copy_host(dst, img);
  image_free(img);
  return rc;
}

static int read_frame(FrameReader *r, struct pxl_image **planes, bool given, int *got, Err *err) {
  *got = 0;
  if (!given)
    for (int i = 0; i < FRAMES_MAX_PLANES; i++) planes[i] = NULL;
  if (r->ended) return PXL_OK;
  int rc;
  if (r->info.kind == FR_Y4M) {
    rc = y4m_read(r, planes, given, got, err);
  } else if (r->next > r->last) {
    r->ended = 1;
    rc = PXL_OK;
  } else {
    struct pxl_image *img = r->first;
    r->first = NULL;
    char name[8300];
    rc = img ? PXL_OK : pattern_name(&r->pat, r->next, name, sizeof name, err);
    if (!rc && !img) rc = io_load(name, &img, err);
    if (!rc && given) rc = copy_into(r, img, planes[0], err);
    else if (!rc) planes[0] = img;
    if (!rc) *got = 1;
  }
  if (rc) {
    for (int i = 0; i < FRAMES_MAX_PLANES && !given; i++) image_free(planes[i]), planes[i] = NULL;
    *got = 0;
    return rc;
  }
  if (*got) r->number = r->next++;
  return PXL_OK;
}

int frames_read(FrameReader *r, struct pxl_image **planes, int *got, Err *err) {
  return read_frame(r, planes, false, got, err);
}

int frames_read_into(FrameReader *r, struct pxl_image *const *planes, int *got, Err *err) {
  return read_frame(r, (struct pxl_image **)planes, true, got, err);
}

void frames_close(FrameReader *r) {
  if (!r) return;
  if (r->f && r->f != stdin) fclose(r->f);
  image_free(r->first);
  PXL_FREE(r);
}

typedef struct {
  dev_t dev;
  ino_t ino;
} FileId;

static int id_cmp(const void *a, const void *b) {
  const FileId *x = a, *y = b;
  if (x->dev != y->dev) return x->dev < y->dev ? -1 : 1;
  return x->ino < y->ino ? -1 : x->ino > y->ino;
}

int frames_overlap(const FrameReader *r, const char *out, Err *err) {
  if (r->info.kind != FR_SEQ) return PXL_OK;
  Pattern *op = PXL_MALLOC(sizeof *op);
  int64_t n = r->last - r->next + 1;
  FileId *ids = n > 0 ? PXL_MALLOC(sizeof *ids * (size_t)n) : NULL;
  int is = 0, rc = op ? parse_pattern(out, op, &is, err) : err_set(err, PXL_ENOMEM, "out of memory");
  if (!rc && n > 0 && !ids) rc = err_set(err, PXL_ENOMEM, "out of memory");
  char name[8300];
  struct stat st;
  size_t m = 0;
  for (int64_t k = r->next; !rc && is && k <= r->last; k++) /* the input files, by device and inode */
    if (!pattern_name(&r->pat, k, name, sizeof name, NULL) && stat(name, &st) == 0)
      ids[m++] = (FileId){st.st_dev, st.st_ino};
  if (!rc && is) qsort(ids, m, sizeof *ids, id_cmp);
  for (int64_t k = r->next; !rc && is && m && k <= r->last; k++) {
    if (pattern_name(op, k, name, sizeof name, NULL) || stat(name, &st) != 0) continue;
    FileId key = {st.st_dev, st.st_ino};
    if (bsearch(&key, ids, m, sizeof *ids, id_cmp))
      rc = io_err(err, PXL_EARG, out, "frame %lld would be written over '%s', a frame file of '%s'; refusing to overwrite an input",
                  (long long)k, name, r->name);
  }
  PXL_FREE(ids);
  PXL_FREE(op);
  return rc;
}

/* ---- writing ---- */

struct FrameWriter {
  FrameKind kind;
  char name[4096];
  Pattern pat;
  AtomicFile af;       /* y4m, once open (af.f is stdout for "-": no temporary file) */
  int open;
  int to_stdout;
  FrameInfo like;      /* y4m: the colour space and parameters to write */
  int width, height;   /* y4m: fixed by the first frame */
  int64_t frames;
};

int frames_check_output(const char *path, pxl_type type, int channels, Err *err) {
  int is = 0, rc = frames_pattern(path, &is, err);
  if (rc) return rc;
  if (is) {
    char name[8300];
    if ((rc = frames_name(path, 1, name, sizeof name, err))) return rc;
    return io_check_save(name, type, channels, err);
  }
  if (!y4m_output(path)) return io_err(err, PXL_EARG, path, "not a frame stream (a .y4m file or a %%d pattern)");
  if (type != PXL_U8 || channels != 1)
    return io_err(err, PXL_EARG, path, "YUV4MPEG2 stores u8 planes of one channel, not %s with %d channel%s",
                  pxl_type_name(type), channels, channels == 1 ? "" : "s");
  return PXL_OK;
}

int frames_create(const char *path, const FrameInfo *like, FrameWriter **out, Err *err) {
  *out = NULL;
  FrameWriter *w = PXL_CALLOC(1, sizeof *w);
  if (!w) return err_set(err, PXL_ENOMEM, "out of memory");
  snprintf(w->name, sizeof w->name, "%s", path);
  int is = 0, rc = parse_pattern(path, &w->pat, &is, err);
  if (rc == PXL_OK && !is && !y4m_output(path))
    rc = io_err(err, PXL_EARG, path, "not a frame stream (a .y4m file or a %%d pattern)");
  if (rc) {
    PXL_FREE(w);
    return rc;
  }
  w->kind = is ? FR_SEQ : FR_Y4M;
  w->to_stdout = strcmp(path, "-") == 0;
  if (w->to_stdout) snprintf(w->name, sizeof w->name, "standard output");
  if (like && like->kind == FR_Y4M) w->like = *like;
  else w->like.chroma = CH_420;
  *out = w;
  return PXL_OK;
}

/* The y4m header for a w x h stream of n planes per frame. */
static int y4m_start(FrameWriter *w, int width, int height, int n, Err *err) {
  Chroma c = n == 1 ? CH_MONO : w->like.chroma == CH_MONO ? CH_420 : w->like.chroma;
  const char *cs = n == 1 ? "mono" : w->like.chroma != CH_MONO && w->like.cspace[0] ? w->like.cspace : NULL;
  w->like.chroma = c;
  w->width = width, w->height = height;
  int rc = PXL_OK;
  if (w->to_stdout) w->af.f = stdout;
  else rc = file_atomic_open(&w->af, w->name, FILE_SHARED, err);
  if (rc) return rc;
  w->open = 1;
  /* a frame rate, which readers such as ffmpeg expect, where the source gave none */
  const char *rate = strstr(w->like.extra, " F") ? "" : " F25:1";
  fprintf(w->af.f, Y4M_MAGIC " W%d H%d%s%s", width, height, rate, w->like.extra);
  if (cs) fprintf(w->af.f, " C%s", cs);
  fputc('\n', w->af.f);
  return PXL_OK;
}

static int y4m_write(FrameWriter *w, const struct pxl_image *const *planes, int n, Err *err) {
  int64_t k = w->frames + 1;
  if (n != 1 && n != 3) return io_err(err, PXL_EARG, w->name, "frame %lld: %d planes (YUV4MPEG2 takes 1 or 3)", (long long)k, n);
  for (int i = 0; i < n; i++)
    if (!planes[i] || planes[i]->type != PXL_U8 || planes[i]->channels != 1)
      return io_err(err, PXL_EARG, w->name, "frame %lld: plane %d is not a u8 image of one channel", (long long)k, i);
  if (!w->open) {
    int rc = y4m_start(w, planes[0]->width, planes[0]->height, n, err);
    if (rc) return rc;
  }
  int pw[3], ph[3], m = plane_sizes(w->like.chroma, w->width, w->height, pw, ph);
  if (m != n)
    return io_err(err, PXL_EARG, w->name, "frame %lld: %d planes, the stream's first frame had %d", (long long)k, n, m);
  for (int i = 0; i < n; i++)
    if (planes[i]->width != pw[i] || planes[i]->height != ph[i])
      return io_err(err, PXL_EARG, w->name, "frame %lld: plane %d is %dx%d; a %dx%d stream's is %dx%d", (long long)k, i,
                    planes[i]->width, planes[i]->height, w->width, w->height, pw[i], ph[i]);
  if (fputs("FRAME\n", w->af.f) == EOF) return io_write_error(err, w->name, errno);
  for (int i = 0; i < n; i++)
    for (int y = 0; y < ph[i]; y++)
      if (fwrite(image_row(planes[i], y), 1, (size_t)pw[i], w->af.f) != (size_t)pw[i])
        return io_write_error(err, w->name, errno);
  return PXL_OK;
}

int frames_write(FrameWriter *w, int64_t number, const struct pxl_image *const *planes, int n, Err *err) {
  int rc;
  if (w->kind == FR_Y4M) {
    rc = y4m_write(w, planes, n, err);
  } else if (n != 1 || !planes[0]) {
    rc = io_err(err, PXL_EARG, w->name, "frame %lld: numbered files take one image per frame", (long long)number);
  } else {
    char name[8300];
    rc = pattern_name(&w->pat, number, name, sizeof name, err);
    if (!rc) rc = io_save(name, planes[0], err);
  }
  if (!rc) w->frames++;
  return rc;
}

int frames_commit(FrameWriter *w, Err *err) {
  int rc = PXL_OK;
  if (w->kind == FR_Y4M) {
    if (!w->open) rc = io_err(err, PXL_EARG, w->name, "no frame to write");
    else if (w->to_stdout) rc = fflush(stdout) || ferror(stdout) ? io_write_error(err, w->name, errno) : PXL_OK;
    else rc = file_atomic_commit(&w->af, err);
    w->open = 0;
  }
  PXL_FREE(w);
  return rc;
}

void frames_abort(FrameWriter *w) {
  if (!w) return;
  if (w->open && !w->to_stdout) file_atomic_abort(&w->af);
  if (w->open && w->to_stdout) fflush(stdout);
  PXL_FREE(w);
}
