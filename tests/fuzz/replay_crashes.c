/*
 * replay_crashes.c - replays the fuzzers' crash corpus (tests/fuzz/crashes/): every
 * input that once crashed or hung the parser or an image decoder must now end cleanly
 * with the status its line in DIR/expected.txt gives.
 *
 *     replay_crashes DIR
 *
 * expected.txt has one line per file of DIR ("#" starts a comment):
 *     NAME STATUS [alloc-fail N,N-M,...]
 * NAME.pxl is compiled by front_compile (and, when it compiles, explained, as the
 * fuzzer does); NAME.png/.jpg/.jpeg/.pgm/.ppm is loaded by pxl_image_load. STATUS is
 * the status it must give ("PXL_ESOURCE", "PXL_EFORMAT", ...; PXL_ESOURCE with at least
 * one diagnostic). With alloc-fail, the input is compiled again with every allocation
 * after the first N failing (pxl_test_fail_alloc_after(N)), for each N, and must give
 * PXL_ENOMEM or PXL_ESOURCE without hanging. Each replay runs in a child process killed after 20 s,
 * so a crash or a hang fails that file only. A file of DIR without a line, or a line
 * without its file, fails too: no crash input goes unreplayed.
 *
 * Prints "ok NAME" or "FAIL NAME: why" per replay, then "N passed, M failed".
 */
#define _GNU_SOURCE
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
#include "util/alloc.h"

enum { MAX_FILES = 256, MAX_FAILS = 256, TIME_LIMIT = 20 };

typedef struct {
  char name[256];
  int status;              /* PXL_* it must give */
  long fails[MAX_FAILS];   /* alloc-fail points (N-M: each of N..M) */
  int nfails;
  bool seen;               /* the file exists */
} Expect;

static int passes, failures;

/* PXL_ESOURCE... -> its value, -1 if unknown. */
static int status_value(const char *name) {
#define X(n, value, text) \
  if (!strcmp(name, #n)) return value;
  PXL_STATUSES(X)
#undef X
  return -1;
}

static bool has_suffix(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && !strcmp(s + n - k, suffix);
}

static bool is_image(const char *name) {
  return has_suffix(name, ".png") || has_suffix(name, ".jpg") || has_suffix(name, ".jpeg") ||
         has_suffix(name, ".pgm") || has_suffix(name, ".ppm");
}

/* In the child: replays path (with allocations failing after `fail` more when >= 0); exits 0 when it gave
 * `want` (or, under alloc-fail, PXL_ENOMEM or PXL_ESOURCE), else prints why and exits 3. */
static void replay(const char *path, const char *name, int want, long fail) {
  int rc;
  char detail[256] = "";
  if (is_image(name)) {
    pxl_context *ctx = pxl_context_new();
    pxl_image *img = NULL;
    rc = ctx ? pxl_image_load(ctx, path, &img) : PXL_ENOMEM;
    if (rc && ctx && !*pxl_errmsg(ctx)) snprintf(detail, sizeof detail, " without a message");
    pxl_image_free(img);
    pxl_context_free(ctx);
  } else {
    FILE *f = fopen(path, "rb");
    char *src = NULL;
    size_t n = 0;
    if (f) {
      fseek(f, 0, SEEK_END);
      long len = ftell(f);
      fseek(f, 0, SEEK_SET);
      src = len >= 0 ? malloc((size_t)len + 1) : NULL;
      n = src ? fread(src, 1, (size_t)len, f) : 0;
      fclose(f);
    }
    if (!src) {
      printf("FAIL %s: cannot read %s\n", name, path);
      _exit(3);
    }
    src[n] = 0;
    Diag d;
    diag_init(&d, name, src);
    Program *p = NULL;
    if (fail >= 0) pxl_test_fail_alloc_after(fail);
    rc = front_compile(name, src, &p, &d);
    if (rc == PXL_OK && p && !explain_program(p)) snprintf(detail, sizeof detail, ": explain_program failed");
    if (fail >= 0) pxl_test_fail_alloc_after(-1);
    if (rc == PXL_ESOURCE && !d.oom && (!d.text || !strstr(d.text, ": error: ")))
      snprintf(detail, sizeof detail, " without a diagnostic");
    if (rc != PXL_OK && p) snprintf(detail, sizeof detail, " with a program");
    program_free(p);
    diag_free(&d);
    free(src);
  }
  bool ok = fail >= 0 ? rc == PXL_ENOMEM || rc == PXL_ESOURCE : rc == want;
  if (ok && !*detail) _exit(0);
  printf("FAIL %s", name);
  if (fail >= 0) printf(" (allocations failing after %ld)", fail);
  printf(": gave %s%s, want %s\n", pxl_status_name(rc), detail,
         fail >= 0 ? "PXL_ENOMEM or PXL_ESOURCE" : pxl_status_name(want));
  fflush(stdout);
  _exit(3);
}

/* Runs one replay in a child process and counts it. */
static void run_replay(const char *dir, const Expect *e, long fail) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, e->name);
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) {
    printf("FAIL %s: fork failed\n", e->name);
    failures++;
    return;
  }
  if (pid == 0) {
    alarm(TIME_LIMIT);
    replay(path, e->name, e->status, fail);
  }
  int st = 0;
  while (waitpid(pid, &st, 0) < 0) {
  }
  char what[64] = "";
  if (fail >= 0) snprintf(what, sizeof what, " (allocations failing after %ld)", fail);
  if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
    printf("ok %s%s\n", e->name, what);
    passes++;
    return;
  }
  failures++;
  if (WIFSIGNALED(st))
    printf("FAIL %s%s: %s\n", e->name, what,
           WTERMSIG(st) == SIGALRM ? "still running after 20 s (a hang)" : strsignal(WTERMSIG(st)));
  else if (WEXITSTATUS(st) != 3)
    printf("FAIL %s%s: crashed (exit status %d)\n", e->name, what, WEXITSTATUS(st));
}

/* Reads DIR/expected.txt into e; the count, or -1 after printing why. */
static int read_expected(const char *dir, Expect *e) {
  char path[4096], line[1024];
  snprintf(path, sizeof path, "%s/expected.txt", dir);
  FILE *f = fopen(path, "r");
  if (!f) {
    printf("FAIL: cannot read %s\n", path);
    return -1;
  }
  int n = 0, lineno = 0;
  while (fgets(line, sizeof line, f)) {
    lineno++;
    char *hash = strchr(line, '#');
    if (hash) *hash = 0;
    char name[256], status[64], key[64], list[512];
    int k = sscanf(line, "%255s %63s %63s %511s", name, status, key, list);
    if (k <= 0) continue;
    if (n == MAX_FILES || k == 1 || k == 3 || status_value(status) < 0 || (k == 4 && strcmp(key, "alloc-fail"))) {
      printf("FAIL: %s:%d: want NAME STATUS [alloc-fail N,N-M,...]\n", path, lineno);
      fclose(f);
      return -1;
    }
    memset(&e[n], 0, sizeof e[n]);
    snprintf(e[n].name, sizeof e[n].name, "%s", name);
    e[n].status = status_value(status);
    for (char *p = k == 4 ? list : NULL; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
      char *end;
      long a = strtol(p, &end, 10), b = *end == '-' ? strtol(end + 1, NULL, 10) : a;
      for (long v = a; v <= b && e[n].nfails < MAX_FAILS; v++) e[n].fails[e[n].nfails++] = v;
    }
    n++;
  }
  fclose(f);
  return n;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: replay_crashes DIR\n");
    return 2;
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  const char *dir = argv[1];
  static Expect e[MAX_FILES];
  int n = read_expected(dir, e);
  if (n < 0) return 1;
  DIR *dp = opendir(dir);
  if (!dp) {
    printf("FAIL: cannot open %s\n", dir);
    return 1;
  }
  struct dirent *de;
  while ((de = readdir(dp))) { /* every input of the corpus has its line */
    const char *name = de->d_name;
    if (name[0] == '.' || has_suffix(name, ".md") || !strcmp(name, "expected.txt")) continue;
    int i = 0;
    while (i < n && strcmp(e[i].name, name)) i++;
    if (i < n) {
      e[i].seen = true;
    } else {
      printf("FAIL %s: no line in expected.txt (what must it give?)\n", name);
      failures++;
    }
  }
  closedir(dp);
  for (int i = 0; i < n; i++) {
    if (!e[i].seen) {
      printf("FAIL %s: in expected.txt but not in %s\n", e[i].name, dir);
      failures++;
      continue;
    }
    run_replay(dir, &e[i], -1);
    for (int k = 0; k < e[i].nfails; k++) run_replay(dir, &e[i], e[i].fails[k]);
  }
  if (!passes && !failures) {
    printf("FAIL: nothing to replay in %s\n", dir);
    failures++;
  }
  printf("%d passed, %d failed\n", passes, failures);
  return failures ? 1 : 0;
}
