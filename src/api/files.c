/*
 * files.c - the public face of util/file.h: pxl_write_file for the files a program
 * writes beside images (the CLI's CSV results), and pxl_remove_partial_files for its
 * signal handlers. Programs outside the library cannot include src/ headers, and one
 * atomic writer should serve them too rather than a second one in each program.
 */
#include <stdio.h>

#include "api/handles.h"
#include "util/file.h"

int pxl_write_file(pxl_context *ctx, const char *path, const void *data, size_t n) {
  api_clear(ctx);
  if (!path || (!data && n)) return api_fail(ctx, PXL_EARG, "no file name or data to write");
  Err e = {0};
  return file_write_atomic(path, data, n, FILE_SHARED, &e) ? api_fail_err(ctx, &e) : PXL_OK;
}

void pxl_remove_partial_files(void) { file_remove_partial(); }
