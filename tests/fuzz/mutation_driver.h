/*
 * mutation_driver.h - the shared part of the built-in mutation drivers of fuzz_image.c and
 * fuzz_mtx.c (not fuzz_parse.c, whose driver differs): the input size limit, the input
 * buffer (Buf), a xorshift64* generator seeded by the includer's main (rnd, below), a
 * monotonic clock (now), crash reporting (save_input writes the input being tried,
 * cur_data/cur_size, to FUZZ_NAME-crash-TAG-PID.bin in the current directory; on_signal
 * does so for a signal and re-raises it) and seed loading (add_seeds: a file, or every
 * file of a directory, into seeds/nseeds), and the loop of mutated inputs
 * (mutation_loop: the includer's next_input, LLVMFuzzerTestOneInput and `violation`).
 *
 * Included by those two files inside their #ifndef PXL_LIBFUZZER block, after they
 * define FUZZ_NAME (the program name their messages and crash files carry, e.g.
 * #define FUZZ_NAME "fuzz_mtx"); each keeps its own SLOW_SECONDS, mutations,
 * next_input and main.
 */
#ifndef PXL_TESTS_FUZZ_MUTATION_DRIVER_H
#define PXL_TESTS_FUZZ_MUTATION_DRIVER_H

#ifndef FUZZ_NAME
#error "define FUZZ_NAME (the program name) before including mutation_driver.h"
#endif

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define INPUT_LIMIT (1 << 20) /* mutated inputs never grow past this */

typedef struct {
  uint8_t *data;
  size_t n;
} Buf;

static uint64_t rng_state;

static uint64_t rnd(void) { /* xorshift64* */
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 0x2545F4914F6CDD1Dull;
}

static size_t below(size_t n) { return n ? (size_t)(rnd() % n) : 0; }

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---- crash reporting ---- */

static const uint8_t *cur_data; /* the input being tried, for the signal handler */
static size_t cur_size;

static void save_input(const char *tag) {
  char path[128];
  snprintf(path, sizeof path, FUZZ_NAME "-crash-%s-%ld.bin", tag, (long)getpid());
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0) {
    for (size_t off = 0; off < cur_size;) {
      ssize_t w = write(fd, cur_data + off, cur_size - off);
      if (w <= 0) break;
      off += (size_t)w;
    }
    close(fd);
  }
  static const char msg[] = FUZZ_NAME ": crash; input saved as " FUZZ_NAME "-crash-*.bin\n";
  ssize_t ignored = write(2, msg, sizeof msg - 1);
  (void)ignored;
}

static void on_signal(int sig) {
  save_input("signal");
  signal(sig, SIG_DFL);
  raise(sig);
}

/* ---- seeds ---- */

static Buf *seeds;
static size_t nseeds, capseeds;

static void add_seed(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, FUZZ_NAME ": cannot open %s\n", path);
    exit(2);
  }
  Buf b = {malloc(INPUT_LIMIT), 0};
  if (!b.data) exit(2);
  b.n = fread(b.data, 1, INPUT_LIMIT, f);
  fclose(f);
  if (nseeds == capseeds) {
    capseeds = capseeds ? capseeds * 2 : 16;
    seeds = realloc(seeds, capseeds * sizeof *seeds);
    if (!seeds) exit(2);
  }
  seeds[nseeds++] = b;
}

static void add_seeds(const char *path) {
  struct stat st;
  if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
    DIR *d = opendir(path);
    if (!d) return;
    for (struct dirent *e; (e = readdir(d));) {
      if (e->d_name[0] == '.') continue;
      char sub[4096];
      snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
      add_seed(sub);
    }
    closedir(d);
  } else {
    add_seed(path);
  }
}

/* ---- the mutation loop ---- */

static void next_input(Buf *b); /* the includer's: the next mutated input into b */

/* Runs mutated inputs through LLVMFuzzerTestOneInput until `seconds` have passed since
 * start, one in 20 with an allocation failure injected; counts them, the contract
 * violations (the includer's `violation`, reset before each input) and the inputs slower
 * than SLOW_SECONDS, saving each such input. */
static void mutation_loop(Buf *b, double start, double seconds, unsigned long *inputs, unsigned long *crashes,
                          unsigned long *slow) {
  while (now() - start < seconds) {
    next_input(b);
    cur_data = b->data, cur_size = b->n;
    violation = NULL;
    int inject = below(20) == 0;
    if (inject) pxl_test_fail_alloc_after((long)below(12));
    double t0 = now();
    LLVMFuzzerTestOneInput(b->data, b->n);
    double dt = now() - t0;
    if (inject) pxl_test_fail_alloc_after(-1);
    (*inputs)++;
    if (violation) {
      (*crashes)++;
      fprintf(stderr, FUZZ_NAME ": %s\n", violation);
      save_input("contract");
    }
    if (dt > SLOW_SECONDS) {
      (*slow)++;
      fprintf(stderr, FUZZ_NAME ": slow input (%.1f s)\n", dt);
      save_input("slow");
    }
  }
}

#endif
