/*
 * jpeg.c - JPEG decoding and encoding with libjpeg(-turbo) (see formats.h).
 *
 * libjpeg reports fatal errors through error_exit, which by default prints and calls
 * exit(); ours formats libjpeg's message and longjmps back, so corrupt data becomes
 * PXL_EFORMAT with that message. Gray JPEGs load as 1 channel, YCbCr/RGB as 3;
 * CMYK/YCCK are refused. Saving writes quality 95 baseline JPEG through a destination
 * manager of ours that keeps errno, so a failed write is PXL_EIO with its reason.
 *
 * Running out of data: libjpeg then supplies an EOI marker itself, warns "Premature end
 * of JPEG file" and pads missing entropy-coded data with zeros (warning "premature end
 * of data segment"). Missing data is fatal here, but a file that lacks only its final
 * EOI (or trailing bytes after the last scan) loads, as with libjpeg-turbo's tools and
 * OpenCV, when nothing the image needs is gone: no entropy-coded bits were padded, and
 * for multi-scan files every coefficient of every component was delivered by the scans
 * seen (tracked per scan in the progress monitor; a progressive file cut between two
 * scans fails there). Arithmetic-coded data is padded silently by design, so there a
 * missing EOI stays fatal.
 *
 * libjpeg allocates with its own malloc, outside the PXL_* seam; its working memory is
 * capped (max_memory_to_use) and files with more than MAX_SCANS scans are refused: each
 * scan costs a pass over the whole coefficient buffer, so a small hostile progressive
 * file with a thousand scans costs seconds per megapixel. libjpeg-turbo's answer for
 * untrusted files is the same guard in a progress monitor (TurboJPEG's
 * TJFLAG_LIMITSCANS, djpeg -maxscans); encoders write far fewer scans
 * (jpeg_simple_progression 6 for gray, 10 for colour).
 */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <jerror.h>
#include <jpeglib.h>

#include "io/formats.h"

#define MAX_SCANS 100 /* scans accepted before a file is called hostile */
#define MEM_LIMIT ((uint64_t)PXL_MAX_BYTES * 2) /* libjpeg working memory (coefficients) */
#define OUT_BUF 16384 /* bytes the encoder collects per write */

typedef struct {
  struct jpeg_error_mgr pub; /* must be first: libjpeg sees only this */
  jmp_buf jump;              /* where error_exit returns to */
  char msg[JMSG_LENGTH_MAX]; /* libjpeg's message for the failure */
  int hit_end;               /* the data ended before EOI; libjpeg supplied one */
} JpegErr;

/* Fatal error: keep the message, unwind to the setjmp in the caller. */
static void on_error_exit(j_common_ptr c) {
  JpegErr *e = (JpegErr *)c->err;
  c->err->format_message(c, e->msg);
  longjmp(e->jump, 1);
}

/* Warnings are ignored (the library never prints), except missing data: entropy-coded
 * data that ran out is fatal; the end of the file is noted for the caller to judge. */
static void on_emit_message(j_common_ptr c, int level) {
  if (level >= 0) return;
  if (c->err->msg_code == JWRN_JPEG_EOF)
    ((JpegErr *)c->err)->hit_end = 1;
  else if (c->err->msg_code == JWRN_HIT_MARKER)
    on_error_exit(c);
}

static void on_output_message(j_common_ptr c) { (void)c; }

static void init_err(JpegErr *e) {
  jpeg_std_error(&e->pub);
  e->pub.error_exit = on_error_exit;
  e->pub.emit_message = on_emit_message;
  e->pub.output_message = on_output_message;
  e->msg[0] = '\0';
  e->hit_end = 0;
}

/* The decoder's progress monitor: counts scans and records what each delivered. */
typedef struct {
  struct jpeg_progress_mgr pub; /* must be first */
  int scan;                     /* input_scan_number last recorded */
  signed char al[MAX_COMPONENTS][DCTSIZE2]; /* per coefficient: lowest successive-
                                               approximation bit delivered, -1 none yet */
} Progress;

/* Refuses files with more than MAX_SCANS scans; records each new scan's coefficients. */
static void on_progress(j_common_ptr c) {
  if (!c->is_decompressor) return;
  j_decompress_ptr d = (j_decompress_ptr)c;
  Progress *p = (Progress *)d->progress;
  if (d->input_scan_number > MAX_SCANS) {
    JpegErr *e = (JpegErr *)c->err;
    snprintf(e->msg, sizeof e->msg, "more than %d scans (the limit for a JPEG file)", MAX_SCANS);
    c->err->msg_code = 0;
    longjmp(e->jump, 1);
  }
  if (d->input_scan_number == p->scan || d->input_scan_number < 1) return;
  p->scan = d->input_scan_number;
  int ss = d->progressive_mode ? d->Ss : 0, se = d->progressive_mode ? d->Se : DCTSIZE2 - 1;
  int al = d->progressive_mode ? d->Al : 0;
  if (ss < 0 || se >= DCTSIZE2) return; /* libjpeg rejects such a scan itself */
  for (int i = 0; i < d->comps_in_scan && i < MAX_COMPS_IN_SCAN; i++) {
    int ci = d->cur_comp_info[i]->component_index;
    if (ci < 0 || ci >= MAX_COMPONENTS) continue;
    for (int k = ss; k <= se; k++)
      if (p->al[ci][k] < 0 || al < p->al[ci][k]) p->al[ci][k] = (signed char)al;
  }
}

/* Whether the scans recorded delivered every coefficient of every component in full. */
static int scans_complete(j_decompress_ptr d, const Progress *p) {
  for (int ci = 0; ci < d->num_components && ci < MAX_COMPONENTS; ci++)
    for (int k = 0; k < DCTSIZE2; k++)
      if (p->al[ci][k] != 0) return 0;
  return 1;
}

static const char *color_space_name(J_COLOR_SPACE cs) {
  switch (cs) {
  case JCS_CMYK: return "CMYK";
  case JCS_YCCK: return "YCCK";
  default: return "unknown";
  }
}

int io_jpeg_load(const uint8_t *buf, size_t n, const char *name, struct pxl_image **out,
                 Err *err) {
  *out = NULL;
  struct jpeg_decompress_struct cinfo;
  Progress progress;
  JpegErr jerr;
  struct pxl_image *volatile img = NULL; /* read after longjmp */
  int rc;

  memset(&cinfo, 0, sizeof cinfo);
  memset(&progress, 0, sizeof progress);
  memset(progress.al, -1, sizeof progress.al);
  progress.pub.progress_monitor = on_progress;
  init_err(&jerr);
  cinfo.err = &jerr.pub;
  if (setjmp(jerr.jump)) {
    rc = jerr.pub.msg_code == JERR_OUT_OF_MEMORY
             ? io_err(err, PXL_ENOMEM, name, "out of memory decoding JPEG")
             : io_err(err, PXL_EFORMAT, name, "invalid JPEG: %s", jerr.msg);
    goto done;
  }
  jpeg_create_decompress(&cinfo);
  cinfo.mem->max_memory_to_use = MEM_LIMIT > LONG_MAX ? LONG_MAX : (long)MEM_LIMIT;
  cinfo.progress = &progress.pub;
  jpeg_mem_src(&cinfo, buf, (unsigned long)n);
  jpeg_read_header(&cinfo, TRUE);

  int channels;
  switch (cinfo.jpeg_color_space) {
  case JCS_GRAYSCALE:
    cinfo.out_color_space = JCS_GRAYSCALE;
    channels = 1;
    break;
  case JCS_YCbCr:
  case JCS_RGB:
    cinfo.out_color_space = JCS_RGB;
    channels = 3;
    break;
  default:
    rc = io_err(err, PXL_EFORMAT, name,
                "unsupported JPEG color space (%s); only grayscale and RGB are supported",
                color_space_name(cinfo.jpeg_color_space));
    goto done;
  }
  rc = io_check_dims(name, (int)cinfo.image_width, (int)cinfo.image_height, PXL_U8, channels, err);
  if (rc != PXL_OK) goto done;
  struct pxl_image *tmp;
  rc = io_image_new(name, (int)cinfo.image_width, (int)cinfo.image_height, PXL_U8, channels,
                    &tmp, err);
  if (rc != PXL_OK) goto done;
  img = tmp;

  int multi = jpeg_has_multiple_scans(&cinfo);
  jpeg_start_decompress(&cinfo); /* a multi-scan file is read to its end here */
  if ((int)cinfo.output_width != img->width || (int)cinfo.output_height != img->height ||
      cinfo.output_components != channels) {
    rc = io_err(err, PXL_EFORMAT, name, "unsupported JPEG layout");
    goto done;
  }
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = image_row(img, (int)cinfo.output_scanline);
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_decompress(&cinfo);
  if (jerr.hit_end && (cinfo.arith_code || (multi && !scans_complete(&cinfo, &progress)))) {
    rc = io_err(err, PXL_EFORMAT, name, "truncated JPEG data");
    goto done;
  }
  *out = img;
  img = NULL;
  rc = PXL_OK;

done:
  jpeg_destroy_decompress(&cinfo);
  image_free(img);
  return rc;
}

/* The encoder's destination: the stream, a buffer, and errno of a failed write. */
typedef struct {
  struct jpeg_destination_mgr pub; /* must be first */
  FILE *f;
  int err; /* errno of the write that failed, 0 while all succeeded */
  JOCTET buf[OUT_BUF];
} Dest;

/* Writes n bytes of the buffer; on failure keeps errno and raises JERR_FILE_WRITE. */
static void dest_write(j_compress_ptr c, size_t n) {
  Dest *d = (Dest *)c->dest;
  errno = 0;
  if (n && fwrite(d->buf, 1, n, d->f) != n) {
    d->err = errno ? errno : EIO;
    ERREXIT(c, JERR_FILE_WRITE);
  }
  d->pub.next_output_byte = d->buf;
  d->pub.free_in_buffer = OUT_BUF;
}

static void dest_init(j_compress_ptr c) {
  Dest *d = (Dest *)c->dest;
  d->pub.next_output_byte = d->buf;
  d->pub.free_in_buffer = OUT_BUF;
}

static boolean dest_empty(j_compress_ptr c) {
  dest_write(c, OUT_BUF); /* libjpeg calls this only with the buffer full */
  return TRUE;
}

static void dest_term(j_compress_ptr c) { dest_write(c, OUT_BUF - c->dest->free_in_buffer); }

int io_jpeg_save(FILE *f, const struct pxl_image *img, const char *name, Err *err) {
  struct jpeg_compress_struct cinfo;
  JpegErr jerr;
  static _Thread_local Dest dest; /* 16 KiB: off the stack */

  memset(&cinfo, 0, sizeof cinfo);
  dest = (Dest){.pub = {.init_destination = dest_init,
                        .empty_output_buffer = dest_empty,
                        .term_destination = dest_term},
                .f = f};
  init_err(&jerr);
  cinfo.err = &jerr.pub;
  if (setjmp(jerr.jump)) {
    int rc;
    if (dest.err)
      rc = io_write_error(err, name, dest.err);
    else if (jerr.pub.msg_code == JERR_OUT_OF_MEMORY)
      rc = io_err(err, PXL_ENOMEM, name, "out of memory encoding JPEG");
    else
      rc = io_err(err, PXL_ERROR, name, "JPEG encoding failed: %s", jerr.msg);
    jpeg_destroy_compress(&cinfo);
    return rc;
  }
  jpeg_create_compress(&cinfo);
  cinfo.dest = &dest.pub;
  cinfo.image_width = (JDIMENSION)img->width;
  cinfo.image_height = (JDIMENSION)img->height;
  cinfo.input_components = img->channels;
  cinfo.in_color_space = img->channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, 95, TRUE);
  jpeg_start_compress(&cinfo, TRUE);
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = image_row(img, (int)cinfo.next_scanline);
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  return PXL_OK;
}
