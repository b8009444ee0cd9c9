/*
 * run_golden.c - golden tests of the front end: diagnostics and --explain reports.
 *
 *     run_golden [--update] DIR...
 *
 * For every DIR/NAME.pxl (sorted by name), compiles the file with front_compile, naming
 * it NAME.pxl in the diagnostics, and compares the result with a file next to it:
 *
 *   err_*.pxl  must fail with PXL_ESOURCE; the diagnostics text must equal err_*.err;
 *   other      must compile, and the `pxl check --explain` report (explain_program)
 *              must equal NAME.explain, which must exist: a file without its expected
 *              report would check nothing but that it compiles.
 *
 * Then it runs the generated cases (generated_cases below): inputs too large or too deep
 * to keep as files - 1000 nested parentheses, long operator chains - that must be refused
 * with one diagnostic, without crashing.
 *
 * Prints "ok NAME" or "FAIL NAME" and a line diff (-expected +actual) per case, and exits
 * 1 if any case failed. --update rewrites the expected files from the actual output
 * instead (review the change with git diff before committing it).
 */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "analysis/analysis.h"
#include "front/front.h"
#include "pxl/pxl.h"

static int failures, passes;

/* Runs fn(a, b, c) in a child process, so that a crash or a hang (the parser looping)
 * fails this case and the others still run. The child prints its "ok"/"FAIL" line and
 * exits 0, or 3 after a failure it reported; it is killed after 20 s. Any other end is a
 * crash (AddressSanitizer exits 1). */
static void run_case(const char *name, void (*fn)(const char *, const char *, const char *), const char *a,
                     const char *b, const char *c) {
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) { /* no process: run it here */
    fn(a, b, c);
    return;
  }
  if (pid == 0) {
    alarm(20);
    failures = 0;
    fn(a, b, c);
    fflush(stdout);
    _exit(failures ? 3 : 0);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    passes++;
  } else {
    failures++;
    if (WIFSIGNALED(status))
      printf("FAIL %s: %s\n", name, WTERMSIG(status) == SIGALRM ? "timed out after 20 s (a hang)" : strsignal(WTERMSIG(status)));
    else if (WEXITSTATUS(status) != 3)
      printf("FAIL %s: crashed (exit status %d)\n", name, WEXITSTATUS(status));
  }
}

/* "PXL_ESOURCE" ... (local, so that the runner needs only the front end) */
static const char *status_name(int rc) {
#define X(name, value, text) \
  if (rc == name) return #name;
  PXL_STATUSES(X)
#undef X
  return "PXL_?";
}
static int update;

/* ---- small helpers ---- */

static char *read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 4096, len = 0;
  char *buf = malloc(cap);
  for (;;) {
    if (len + 1 >= cap) {
      cap *= 2;
      buf = realloc(buf, cap);
    }
    size_t n = fread(buf + len, 1, cap - len - 1, f);
    if (n == 0) break;
    len += n;
  }
  fclose(f);
  buf[len] = 0;
  return buf;
}

static int write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  fputs(text, f);
  return fclose(f);
}

/* Splits text into lines (pointers into a copy; the copy is lines[0]'s storage). */
static char **split_lines(const char *text, int *n) {
  char *copy = strdup(text);
  int cap = 16, cnt = 0;
  char **lines = malloc(sizeof *lines * (size_t)cap);
  char *p = copy;
  while (*p) {
    if (cnt == cap) {
      cap *= 2;
      lines = realloc(lines, sizeof *lines * (size_t)cap);
    }
    lines[cnt++] = p;
    char *e = strchr(p, '\n');
    if (!e) break;
    *e = 0;
    p = e + 1;
  }
  if (cnt == 0) free(copy);
  *n = cnt;
  return lines;
}

static void free_lines(char **lines, int n) {
  if (n) free(lines[0]);
  free(lines);
}

/* Prints a line diff of expected vs actual: ' ' common, '-' only expected, '+' only
 * actual (longest common subsequence; the files are small). */
static void print_diff(const char *expected, const char *actual) {
  int n, m;
  char **a = split_lines(expected, &n), **b = split_lines(actual, &m);
  if ((long)n * m > 4000000L) { /* too big to align: show both */
    printf("  --- expected (%d lines), +++ actual (%d lines): too long to diff\n", n, m);
  } else {
    int *L = calloc((size_t)(n + 1) * (size_t)(m + 1), sizeof *L);
#define AT(i, j) L[(size_t)(i) * (size_t)(m + 1) + (size_t)(j)]
    for (int i = n - 1; i >= 0; i--)
      for (int j = m - 1; j >= 0; j--)
        AT(i, j) = !strcmp(a[i], b[j]) ? AT(i + 1, j + 1) + 1 : AT(i + 1, j) > AT(i, j + 1) ? AT(i + 1, j) : AT(i, j + 1);
    int i = 0, j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && !strcmp(a[i], b[j])) {
        printf("   %s\n", a[i]);
        i++, j++;
      } else if (j < m && (i == n || AT(i, j + 1) >= AT(i + 1, j))) {
        printf("  +%s\n", b[j++]);
      } else {
        printf("  -%s\n", a[i++]);
      }
    }
#undef AT
    free(L);
  }
  free_lines(a, n);
  free_lines(b, m);
}

/* Compares actual with the file at expected_path (or writes it under --update). */
static void compare(const char *name, const char *expected_path, const char *actual) {
  if (update) {
    if (write_file(expected_path, actual)) {
      printf("FAIL %s: cannot write %s\n", name, expected_path);
      failures++;
    } else {
      printf("updated %s\n", expected_path);
      passes++;
    }
    return;
  }
  char *expected = read_file(expected_path);
  if (!expected) {
    printf("FAIL %s: missing %s; actual output:\n%s", name, expected_path, actual);
    failures++;
    return;
  }
  if (strcmp(expected, actual)) {
    printf("FAIL %s (-expected +actual)\n", name);
    print_diff(expected, actual);
    failures++;
  } else {
    printf("ok %s\n", name);
    passes++;
  }
  free(expected);
}

static int ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && !strcmp(s + n - k, suffix);
}

/* ---- one file ---- */

static void run_file(const char *dir, const char *name, const char *unused) {
  (void)unused;
  char path[4096], expected[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  char *src = read_file(path);
  if (!src) {
    printf("FAIL %s: cannot read %s\n", name, path);
    failures++;
    return;
  }
  size_t base = strlen(name) - strlen(".pxl");
  bool want_errors = !strncmp(name, "err_", 4);
  Diag d;
  diag_init(&d, name, src);
  Program *p = NULL;
  int rc = front_compile(name, src, &p, &d);
  if (want_errors) {
    snprintf(expected, sizeof expected, "%s/%.*s.err", dir, (int)base, name);
    if (rc != PXL_ESOURCE) {
      printf("FAIL %s: expected PXL_ESOURCE, got %s\n", name, status_name(rc));
      failures++;
    } else {
      compare(name, expected, d.text ? d.text : "");
    }
  } else {
    snprintf(expected, sizeof expected, "%s/%.*s.explain", dir, (int)base, name);
    if (rc != PXL_OK) {
      printf("FAIL %s: expected it to compile, got %s:\n%s", name, status_name(rc), d.text ? d.text : "");
      failures++;
    } else {
      compare(name, expected, explain_program(p)); /* a missing .explain fails */
    }
  }
  program_free(p);
  diag_free(&d);
  free(src);
}

static int cmp_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void run_dir(const char *dir) {
  DIR *dp = opendir(dir);
  if (!dp) {
    printf("FAIL %s: cannot open the directory\n", dir);
    failures++;
    return;
  }
  char **names = NULL;
  int n = 0, cap = 0;
  struct dirent *e;
  while ((e = readdir(dp))) {
    if (!ends_with(e->d_name, ".pxl") || e->d_name[0] == '.') continue;
    if (n == cap) {
      cap = cap ? cap * 2 : 64;
      names = realloc(names, sizeof *names * (size_t)cap);
    }
    names[n++] = strdup(e->d_name);
  }
  closedir(dp);
  qsort(names, (size_t)n, sizeof *names, cmp_names);
  for (int i = 0; i < n; i++) {
    run_case(names[i], run_file, dir, names[i], NULL);
    free(names[i]);
  }
  free(names);
}

/* ---- generated cases: too deep or too long for a file ---- */

typedef struct {
  char *s;
  size_t len, cap;
} Str;

static void add(Str *b, const char *s) {
  size_t n = strlen(s);
  if (b->len + n + 1 > b->cap) {
    b->cap = (b->len + n + 1) * 2;
    b->s = realloc(b->s, b->cap);
  }
  memcpy(b->s + b->len, s, n + 1);
  b->len += n;
}

static void add_rep(Str *b, const char *s, int times) {
  for (int i = 0; i < times; i++) add(b, s);
}

static int count(const char *text, const char *needle) {
  int n = 0;
  for (const char *p = text; (p = strstr(p, needle)); p++) n++;
  return n;
}

/* Compiles src; with `message` it must fail with exactly one error containing it,
 * without it it must compile. */
static void generated_case(const char *name, const char *src, const char *message) {
  Diag d;
  diag_init(&d, name, src);
  Program *p = NULL;
  int rc = front_compile(name, src, &p, &d);
  const char *text = d.text ? d.text : "";
  if (message) {
    if (rc == PXL_ESOURCE && count(text, ": error: ") == 1 && strstr(text, message)) {
      printf("ok %s\n", name);
      passes++;
    } else {
      printf("FAIL %s: expected PXL_ESOURCE with one error '%s', got %s:\n%.2000s\n", name, message,
             status_name(rc), text);
      failures++;
    }
  } else if (rc == PXL_OK) {
    printf("ok %s\n", name);
    passes++;
  } else {
    printf("FAIL %s: expected it to compile, got %s:\n%.2000s\n", name, status_name(rc), text);
    failures++;
  }
  program_free(p);
  diag_free(&d);
}

static void run_generated(const char *name, const char *src, const char *message) {
  run_case(name, generated_case, name, src, message);
}

static void generated_cases(void) {
  static const char head[] = "kernel u8 k(image u8 in) {\n  u8x3 v = u8x3(1, 2, 3);\n  return ";
  Str b = {0};

  /* 1000 nested parentheses: refused. */
  add(&b, head);
  add_rep(&b, "(", 1000);
  add(&b, "in(0, 0)");
  add_rep(&b, ")", 1000);
  add(&b, ";\n}\n");
  run_generated("<parentheses 1000>", b.s, "nested too deeply");

  /* 20 nested parentheses and calls (40 levels): fine. */
  b.len = 0;
  add(&b, head);
  add_rep(&b, "(min(1, ", 20);
  add(&b, "in(0, 0)");
  add_rep(&b, "))", 20);
  add(&b, ";\n}\n");
  run_generated("<parentheses 20>", b.s, NULL);

  /* 100000 nested unary minus signs (as "- " so that they do not lex as "--"). */
  b.len = 0;
  add(&b, head);
  add_rep(&b, "- ", 100000);
  add(&b, "1;\n}\n");
  run_generated("<unary minus 100000>", b.s, "nested too deeply");

  /* A chain of 100000 additions: a left-deep tree, refused before it overflows the
   * recursion of the checker. */
  b.len = 0;
  add(&b, head);
  add(&b, "0");
  add_rep(&b, " + 1", 100000);
  add(&b, ";\n}\n");
  run_generated("<chain of 100000 additions>", b.s, "nested too deeply");

  /* A chain of 60 additions is an ordinary unrolled sum (a 7x7 window has 49): fine. */
  b.len = 0;
  add(&b, head);
  add(&b, "0");
  add_rep(&b, " + in(1, 1)", 60);
  add(&b, ";\n}\n");
  run_generated("<chain of 60 additions>", b.s, NULL);

  /* One of 500 is refused: each addition nests a level in generated code, and clang
   * (PXL_CC=clang, PoCL) refuses brackets nested deeper than 256. */
  b.len = 0;
  add(&b, head);
  add(&b, "0");
  add_rep(&b, " + in(1, 1)", 500);
  add(&b, ";\n}\n");
  run_generated("<chain of 500 additions>", b.s, "nested too deeply");

  /* 100000 component selections v.x.x.x... */
  b.len = 0;
  add(&b, head);
  add(&b, "v");
  add_rep(&b, ".x", 100000);
  add(&b, ";\n}\n");
  run_generated("<components 100000>", b.s, "nested too deeply");

  /* 100000 nested blocks. */
  b.len = 0;
  add(&b, "kernel u8 k(image u8 in) {\n");
  add_rep(&b, "{", 100000);
  add_rep(&b, "}", 100000);
  add(&b, "\n  return 0;\n}\n");
  run_generated("<blocks 100000>", b.s, "nested too deeply");

  /* 100000 nested ifs. */
  b.len = 0;
  add(&b, "kernel u8 k(image u8 in) {\n");
  add_rep(&b, "if (1) ", 100000);
  add(&b, "return 1;\n  return 0;\n}\n");
  run_generated("<ifs 100000>", b.s, "nested too deeply");

  /* 100000 nested conditionals 1 ? 1 : 1 ? ... */
  b.len = 0;
  add(&b, head);
  add_rep(&b, "1 ? 1 : ", 100000);
  add(&b, "0;\n}\n");
  run_generated("<conditionals 100000>", b.s, "nested too deeply");

  /* 100000 nested kernel calls in a pipeline. */
  b.len = 0;
  add(&b, "kernel u8 k(image u8 in) { return in(0, 0); }\npipeline p(image u8 in) -> image u8 {\n  return ");
  add_rep(&b, "k(", 100000);
  add(&b, "in");
  add_rep(&b, ")", 100000);
  add(&b, ";\n}\n");
  run_generated("<pipeline calls 100000>", b.s, "nested too deeply");

  /* 100 nested kernel calls in a pipeline: fine. */
  b.len = 0;
  add(&b, "kernel u8 k(image u8 in) { return in(0, 0); }\npipeline p(image u8 in) -> image u8 {\n  return ");
  add_rep(&b, "k(", 100);
  add(&b, "in");
  add_rep(&b, ")", 100);
  add(&b, ";\n}\n");
  run_generated("<pipeline calls 100>", b.s, NULL);

  free(b.s);
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0); /* progress is visible even if a case crashes */
  int ndirs = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--update")) {
      update = 1;
      continue;
    }
    run_dir(argv[i]);
    ndirs++;
  }
  if (!ndirs) {
    fprintf(stderr, "usage: run_golden [--update] DIR...\n");
    return 2;
  }
  if (!update) generated_cases();
  printf("%d passed, %d failed\n", passes, failures);
  return failures ? 1 : 0;
}
