/*
 * read_file.h - for test programs: a whole file as a NUL-terminated heap string.
 */
#ifndef PXL_TESTS_READ_FILE_H
#define PXL_TESTS_READ_FILE_H

#include <stdio.h>
#include <stdlib.h>

/* The contents of path (free with free()), or NULL if it cannot be read. */
static char *read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
    free(s);
    s = NULL;
  }
  if (s) s[n] = 0;
  fclose(f);
  return s;
}

#endif
