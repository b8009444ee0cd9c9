/*
 * files.c - the public face of util/file.h: pxl_write_file for the files a program
 * writes beside images (the CLI's CSV results), and pxl_remove_partial_files for its
 * signal handlers. Programs outside the library cannot include src/ headers, and one
 * atomic writer should serve them too rather than a second one in each program.
 */
#include <stdio.h>

#include "pxl/pxl.h"
#include "util/file.h"

int pxl_write_file(const char *path, const void *data, size_t n, char *msg, size_t msgcap) {
  Err e = {0};
  int st = file_write_atomic(path, data, n, FILE_SHARED, &e);
  if (msg && msgcap) snprintf(msg, msgcap, "%s", st ? e.msg : "");
  return st;
}

void pxl_remove_partial_files(void) { file_remove_partial(); }
