/*
 * fuzz_parse.c - fuzz target for the front end: front_compile (lexer, parser, checker,
 * analysis) and explain_program on arbitrary source text, with a self-contained driver.
 *
 * Built with -DPXL_LIBFUZZER it is a plain libFuzzer target (clang -fsanitize=fuzzer):
 *     fuzz_parse_libfuzzer -max_total_time=600 -timeout=10 corpus/ examples/
 * Otherwise main() is a driver: `fuzz_parse SECONDS FILES...` runs for SECONDS seconds
 * on a mix of
 *   - random byte strings (mostly printable),
 *   - token soup: random sequences of the language's keywords, types, built-ins,
 *     punctuators, identifiers, numbers and border modes,
 *   - mutations of the seed FILES (the examples) at token level (delete, duplicate,
 *     swap, insert, replace tokens) and byte level (flip, insert, delete, duplicate
 *     bytes), and splices of two seeds,
 *   - deeply nested or very long constructs (parentheses, blocks, operator chains,
 *     pipeline calls), which a recursive parser must refuse without overflowing,
 * with out-of-memory failures injected into some inputs, and prints
 * "fuzz_parse: N inputs, K crashes". Set PXL_FUZZ_SEED for another random sequence.
 *
 * A crash is a signal (segfault, stack overflow, sanitizer abort), an input that takes
 * more than 10 seconds (a hang), or a broken contract: front_compile must return PXL_OK
 * with a program and no diagnostics, PXL_ESOURCE with diagnostics and no program, or
 * PXL_ENOMEM. The input is written to fuzz_parse-crash-TAG-PID.pxl in the directory
 * $PXL_FUZZ_CRASH_DIR (default: the current directory).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "analysis/analysis.h"
#include "front/front.h"
#include "pxl/pxl.h"
#include "util/alloc.h"

#define NAME "fuzz.pxl"      /* file name the diagnostics show */
#define INPUT_LIMIT (1 << 20) /* largest generated input */

static unsigned long by_status[16]; /* inputs per front_compile status */

#ifdef PXL_LIBFUZZER
static void broken(const char *why) {
  fprintf(stderr, "fuzz_parse: %s\n", why);
  abort();
}
#else
static const char *violation; /* contract broken by the last input, or NULL */

static void broken(const char *why) { violation = why; }
#endif

/* Compiles one input and checks the front_compile contract. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *src = malloc(size + 1); /* the front end reads a NUL-terminated string */
  if (!src) return 0;
  memcpy(src, data, size);
  src[size] = 0;
  Diag d;
  diag_init(&d, NAME, src);
  Program *p = NULL;
  int rc = front_compile(NAME, src, &p, &d);
  by_status[rc >= 0 && rc < 16 ? rc : 15]++;
  switch (rc) {
  case PXL_OK:
    if (!p) broken("PXL_OK without a program");
    else if (d.nerrors) broken("PXL_OK with diagnostics");
    else if (!explain_program(p)) broken("explain_program returned NULL");
    break;
  case PXL_ESOURCE:
    if (p) broken("PXL_ESOURCE with a program");
    else if (!d.nerrors) broken("PXL_ESOURCE without an error counted");
    else if (!d.oom && (!d.text || !strstr(d.text, ": error: "))) broken("PXL_ESOURCE without a diagnostic");
    break;
  case PXL_ENOMEM:
    if (p) broken("PXL_ENOMEM with a program");
    break;
  default:
    broken("front_compile returned a status it must not");
    break;
  }
  program_free(p);
  diag_free(&d);
  free(src);
  return 0;
}

#ifndef PXL_LIBFUZZER

#define HANG_SECONDS 10

typedef struct {
  char *data;
  size_t n;
} Buf;

/* ---- random numbers (xorshift64*, reproducible with PXL_FUZZ_SEED) ---- */

static uint64_t rng_state;

static uint64_t rnd(void) {
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

static const char *cur_data; /* the input being compiled, for the handlers */
static size_t cur_size;

static void save_input(const char *tag) {
  char path[4096];
  const char *dir = getenv("PXL_FUZZ_CRASH_DIR");
  snprintf(path, sizeof path, "%s/fuzz_parse-crash-%s-%ld.pxl", dir && *dir ? dir : ".", tag, (long)getpid());
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0) {
    for (size_t off = 0; off < cur_size;) {
      ssize_t w = write(fd, cur_data + off, cur_size - off);
      if (w <= 0) break;
      off += (size_t)w;
    }
    close(fd);
  }
  static const char msg[] = "fuzz_parse: crash; input saved as fuzz_parse-crash-";
  ssize_t ignored = write(2, msg, sizeof msg - 1);
  ignored = write(2, tag, strlen(tag));
  ignored = write(2, "-*.pxl\n", 7);
  (void)ignored;
}

static void on_signal(int sig) {
  save_input(sig == SIGALRM ? "hang" : "signal");
  signal(SIGABRT, SIG_DFL);
  signal(sig, SIG_DFL);
  raise(sig == SIGALRM ? SIGABRT : sig);
}

/* Called by AddressSanitizer/UndefinedBehaviorSanitizer before they end the process. */
extern void __sanitizer_set_death_callback(void (*callback)(void)) __attribute__((weak));
static void on_sanitizer_death(void) { save_input("sanitizer"); }

static void install_handlers(void) {
  /* an alternate stack, so that a stack overflow can still be reported */
  static char altstack[1 << 16];
  stack_t ss = {.ss_sp = altstack, .ss_size = sizeof altstack};
  sigaltstack(&ss, NULL);
  static const int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGALRM};
  for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_ONSTACK;
    sigaction(sigs[i], &sa, NULL);
  }
  if (__sanitizer_set_death_callback) __sanitizer_set_death_callback(on_sanitizer_death);
}

/* ---- vocabulary of the language, for token soup ---- */

static const char *const vocab[] = {
    /* declarations and statements */
    "kernel", "reduce", "histogram", "pipeline", "image", "if", "else", "for", "return", "size", "bin",
    "while", "break", "const", "scan", "along", "loop", "until", "unchanged",
    /* types */
    "u8", "i16", "u16", "i32", "u32", "i64", "u64", "f32", "f64", "int", "uint", "float", "double", "u8x3",
    "u8x4", "f32x3", "f32x4", "i32x3", "u16x4", "f64x3",
    /* built-ins, reductions, borders */
    "min", "max", "abs", "clamp", "sqrt", "exp", "log", "pow", "sin", "cos", "atan2", "floor", "ceil",
    "round", "sum", "argmin", "argmax", "combine", "mirror", "mirror101", "wrap", "constant", "none",
    /* names */
    "x", "y", "width", "height", "in", "at", "a", "b", "t", "k", "p", "s", "v", "r", "g", "w", "z",
    /* numbers */
    "0", "1", "2", "-1", "255", "256", "65535", "0x10", "0xffffffff", "4294967296", "18446744073709551615",
    "99999999999999999999", "1.5", ".5", "1e3", "2.5f", "7u", "1e400", "0.1", "007", "0x",
    /* punctuators */
    "<<=", ">>=", "->", "==", "!=", "<=", ">=", "&&", "||", "<<", ">>", "+=", "-=", "*=", "/=", "%=", "&=",
    "|=", "^=", "++", "--", "+", "-", "*", "/", "%", "&", "|", "^", "~", "!", "<", ">", "=", "?", ":", ";",
    ",", ".", "(", ")", "{", "}", "[", "]",
    /* odd characters */
    "$", "@", "\"", "'", "#", "\\", "/*", "*/", "//", "\t", "\xc3\xa9", "\x01",
};
#define NVOCAB (sizeof vocab / sizeof *vocab)

/* Snippets that make token soup more likely to get deep into a declaration. */
static const char *const openers[] = {
    "kernel u8 k(image u8 in) { return ", "kernel u8x3 k(image u8x3 in, f32 t) { ",
    "reduce u64 k(image u8 in) = sum(", "reduce i32 k(image u8 in) = combine(a + b, 0)(",
    "histogram[16] h(image u8 in) { bin(", "scan i32 s(image u8 in) = sum(",
    ("kernel u8 a(image u8 in) { return in(0, 0); }\n"
     "pipeline p(image u8 in, u8 t) -> image u8 { return a("),
    "kernel f32 k(image f32 in : constant(-1.5)) size(in.width, in.height) { f32 s = ",
};

/* ---- inputs ---- */

static void put(Buf *b, const char *s, size_t n) {
  if (b->n >= INPUT_LIMIT) return;
  if (n > INPUT_LIMIT - b->n) n = INPUT_LIMIT - b->n;
  memcpy(b->data + b->n, s, n);
  b->n += n;
}

static void puts_(Buf *b, const char *s) { put(b, s, strlen(s)); }

static void put_rep(Buf *b, const char *s, size_t times) {
  for (size_t i = 0; i < times && b->n < INPUT_LIMIT; i++) puts_(b, s);
}

static void put_sep(Buf *b) {
  static const char *const seps[] = {" ", " ", " ", "\n", "", "  ", "\t"};
  puts_(b, seps[below(sizeof seps / sizeof *seps)]);
}

/* A seed: its bytes and its tokens (as [start, end) offsets, from the real lexer). */
typedef struct {
  Buf text;
  size_t *start, *end;
  size_t ntok;
} Seed;

static Seed *seeds;
static size_t nseeds, capseeds;

static void add_seed(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "fuzz_parse: cannot read %s\n", path);
    return;
  }
  Buf b = {malloc(INPUT_LIMIT + 1), 0};
  b.n = fread(b.data, 1, INPUT_LIMIT, f);
  b.data[b.n] = 0;
  fclose(f);
  if (nseeds == capseeds) {
    capseeds = capseeds ? capseeds * 2 : 16;
    seeds = realloc(seeds, sizeof *seeds * capseeds);
  }
  Seed *s = &seeds[nseeds++];
  memset(s, 0, sizeof *s);
  s->text = b;
  /* token boundaries from the lexer itself (locations -> offsets) */
  Arena *a = arena_new();
  Diag d;
  diag_init(&d, path, b.data);
  int n = 0;
  Token *t = a ? lex(a, &d, b.data, &n) : NULL;
  if (t) {
    s->start = malloc(sizeof *s->start * (size_t)n);
    s->end = malloc(sizeof *s->end * (size_t)n);
    /* offset of each line start */
    size_t line = 1, off = 0;
    for (int i = 0; i < n - 1; i++) { /* skip EOF */
      while (line < (size_t)t[i].loc.line && off < b.n) {
        if (b.data[off++] == '\n') line++;
      }
      size_t lstart = off;
      while (lstart > 0 && b.data[lstart - 1] != '\n') lstart--;
      size_t st = lstart + (size_t)t[i].loc.col - 1;
      if (st + (size_t)t[i].len > b.n) break;
      s->start[s->ntok] = st;
      s->end[s->ntok] = st + (size_t)t[i].len;
      s->ntok++;
    }
    PXL_FREE(t);
  }
  diag_free(&d);
  arena_free(a);
}

static void gen_random_bytes(Buf *b) {
  size_t n = below(400);
  for (size_t i = 0; i < n; i++) {
    unsigned r = (unsigned)below(100);
    char c = r < 85 ? (char)(0x20 + below(95)) : r < 95 ? "\n\t "[below(3)] : (char)below(256);
    if (c == 0) c = ' ';
    put(b, &c, 1);
  }
}

static void gen_token_soup(Buf *b) {
  if (below(2)) puts_(b, openers[below(sizeof openers / sizeof *openers)]);
  size_t n = 1 + below(120);
  for (size_t i = 0; i < n; i++) {
    puts_(b, vocab[below(NVOCAB)]);
    put_sep(b);
  }
  if (below(2)) puts_(b, "; }");
}

/* Deep or long constructs. */
static void gen_deep(Buf *b) {
  size_t n = 1 + below(below(2) ? 1200 : 20000);
  switch (below(9)) {
  case 0:
    puts_(b, "kernel u8 k(image u8 in) { return ");
    put_rep(b, "(", n);
    puts_(b, "in(0, 0)");
    put_rep(b, ")", below(2) ? n : below(n + 1));
    puts_(b, "; }\n");
    break;
  case 1:
    puts_(b, "kernel u8 k(image u8 in) { ");
    put_rep(b, "{", n);
    put_rep(b, "}", below(2) ? n : below(n + 1));
    puts_(b, " return 0; }\n");
    break;
  case 2:
    puts_(b, "kernel u8 k(image u8 in) { return 0");
    put_rep(b, below(2) ? " + in(1, 1)" : " * 2 - 1", n);
    puts_(b, "; }\n");
    break;
  case 3:
    puts_(b, "kernel u8 k(image u8 in) { u8x3 v; return v");
    put_rep(b, ".x", n);
    puts_(b, "; }\n");
    break;
  case 4:
    puts_(b, "kernel u8 a(image u8 in) { return in(0, 0); }\npipeline p(image u8 in) -> image u8 { return ");
    put_rep(b, "a(", n);
    puts_(b, "in");
    put_rep(b, below(2) ? ") " : " : mirror)", below(2) ? n : below(n + 1));
    puts_(b, "; }\n");
    break;
  case 5:
    puts_(b, "kernel u8 k(image u8 in) { ");
    put_rep(b, below(2) ? "if (1) " : "for (int i = 0; i < 2; i++) ", n);
    puts_(b, "return 1; return 0; }\n");
    break;
  case 6:
    puts_(b, "kernel u8 k(image u8 in) { return ");
    put_rep(b, below(2) ? "- " : "min(1, ", n);
    puts_(b, "1");
    put_rep(b, ")", below(n + 1));
    puts_(b, "; }\n");
    break;
  case 7:
    puts_(b, "kernel u8 k(image u8 in) { return ");
    put_rep(b, "1 ? 1 : ", n);
    puts_(b, "0; }\n");
    break;
  default: /* many declarations or statements */
    puts_(b, "kernel u8 k(image u8 in) { int s = 0; ");
    put_rep(b, below(2) ? "s += in(1, 0); " : "s = $; ", n);
    puts_(b, "return s; }\n");
    break;
  }
}

static const Seed *pick_seed(void) { return nseeds ? &seeds[below(nseeds)] : NULL; }

/* A random token: from a seed, or from the vocabulary. */
static void put_random_token(Buf *b) {
  const Seed *s = pick_seed();
  if (s && s->ntok && below(2)) {
    size_t i = below(s->ntok);
    put(b, s->text.data + s->start[i], s->end[i] - s->start[i]);
  } else {
    puts_(b, vocab[below(NVOCAB)]);
  }
}

/* Mutates a seed at token level: the seed's tokens copied with edits, separators kept. */
static void gen_token_mutation(Buf *b) {
  const Seed *s = pick_seed();
  if (!s || !s->ntok) {
    gen_token_soup(b);
    return;
  }
  size_t edits = 1 + below(below(4) ? 3 : 20);
  size_t *pos = malloc(sizeof *pos * edits);
  int *kind = malloc(sizeof *kind * edits);
  for (size_t e = 0; e < edits; e++) {
    pos[e] = below(s->ntok);
    kind[e] = (int)below(5);
  }
  size_t swap_with = below(s->ntok);
  for (size_t i = 0; i < s->ntok; i++) {
    /* the separator before token i, as in the seed */
    size_t sep0 = i ? s->end[i - 1] : 0;
    put(b, s->text.data + sep0, s->start[i] - sep0);
    int k = -1;
    for (size_t e = 0; e < edits; e++)
      if (pos[e] == i) k = kind[e];
    const char *tok = s->text.data + s->start[i];
    size_t len = s->end[i] - s->start[i];
    switch (k) {
    case 0: /* delete */
      break;
    case 1: /* duplicate */
      put(b, tok, len);
      puts_(b, " ");
      put(b, tok, len);
      break;
    case 2: /* insert before */
      put_random_token(b);
      puts_(b, " ");
      put(b, tok, len);
      break;
    case 3: /* replace */
      put_random_token(b);
      break;
    case 4: /* swap with another token of the seed */
      put(b, s->text.data + s->start[swap_with], s->end[swap_with] - s->start[swap_with]);
      break;
    default:
      put(b, tok, len);
      break;
    }
  }
  put(b, s->text.data + s->end[s->ntok - 1], s->text.n - s->end[s->ntok - 1]);
  free(pos);
  free(kind);
}

/* Mutates a seed (or a splice of two) at byte level. */
static void gen_byte_mutation(Buf *b) {
  const Seed *s = pick_seed();
  if (!s) {
    gen_random_bytes(b);
    return;
  }
  if (below(5) == 0 && nseeds > 1) { /* splice: a prefix of one, a suffix of another */
    const Seed *t = pick_seed();
    size_t i = below(s->text.n + 1), j = below(t->text.n + 1);
    put(b, s->text.data, i);
    put(b, t->text.data + j, t->text.n - j);
  } else {
    put(b, s->text.data, s->text.n);
  }
  size_t edits = 1 + below(8);
  for (size_t e = 0; e < edits && b->n; e++) {
    size_t at = below(b->n);
    switch (below(5)) {
    case 0: /* flip a bit */
      b->data[at] ^= (char)(1u << below(8));
      if (!b->data[at]) b->data[at] = ' ';
      break;
    case 1: { /* insert a byte */
      if (b->n >= INPUT_LIMIT) break;
      memmove(b->data + at + 1, b->data + at, b->n - at);
      char c = "(){};,.:=+-*/<>?!~x0$\"\n"[below(23)];
      b->data[at] = c;
      b->n++;
      break;
    }
    case 2: { /* delete a range */
      size_t len = 1 + below(below(2) ? 4 : 64);
      if (at + len > b->n) len = b->n - at;
      memmove(b->data + at, b->data + at + len, b->n - at - len);
      b->n -= len;
      break;
    }
    case 3: { /* duplicate a range */
      size_t len = 1 + below(32);
      if (at + len > b->n) len = b->n - at;
      if (b->n + len > INPUT_LIMIT) break;
      memmove(b->data + at + len, b->data + at, b->n - at);
      b->n += len;
      break;
    }
    default: /* truncate */
      b->n = at;
      break;
    }
  }
}

static void next_input(Buf *b) {
  b->n = 0;
  size_t r = below(100);
  if (r < 10)
    gen_random_bytes(b);
  else if (r < 30)
    gen_token_soup(b);
  else if (r < 65)
    gen_token_mutation(b);
  else if (r < 95)
    gen_byte_mutation(b);
  else
    gen_deep(b);
  /* the front end reads up to the first NUL: keep the rest meaningful */
  for (size_t i = 0; i < b->n; i++)
    if (!b->data[i]) b->data[i] = ' ';
}

int main(int argc, char **argv) {
  if (argc < 2 || atof(argv[1]) <= 0) {
    fprintf(stderr, "usage: fuzz_parse SECONDS [SEED_FILE...]\n");
    return 2;
  }
  double seconds = atof(argv[1]);
  const char *env = getenv("PXL_FUZZ_SEED");
  rng_state = env ? strtoull(env, NULL, 0) : 0x9e3779b97f4a7c15ull;
  if (!rng_state) rng_state = 1;
  for (int i = 2; i < argc; i++) add_seed(argv[i]);
  install_handlers();

  Buf b = {malloc(INPUT_LIMIT + 1), 0};
  if (!b.data) return 2;
  unsigned long inputs = 0, crashes = 0, injected = 0;
  double start = now();
  for (size_t i = 0; i < nseeds; i++) { /* the seeds themselves first: they must compile */
    cur_data = seeds[i].text.data, cur_size = seeds[i].text.n;
    violation = NULL;
    unsigned long ok_before = by_status[PXL_OK];
    LLVMFuzzerTestOneInput((const uint8_t *)seeds[i].text.data, seeds[i].text.n);
    inputs++;
    if (violation || by_status[PXL_OK] == ok_before) {
      crashes++;
      fprintf(stderr, "fuzz_parse: seed %s does not compile%s%s\n", argv[2 + i], violation ? ": " : "",
              violation ? violation : "");
    }
  }
  while (now() - start < seconds) {
    next_input(&b);
    cur_data = b.data, cur_size = b.n;
    violation = NULL;
    int inject = below(25) == 0;
    if (inject) {
      pxl_test_fail_alloc_after((long)below(below(2) ? 10 : 300));
      injected++;
    }
    alarm(HANG_SECONDS);
    LLVMFuzzerTestOneInput((const uint8_t *)b.data, b.n);
    alarm(0);
    if (inject) pxl_test_fail_alloc_after(-1);
    inputs++;
    if (violation) {
      crashes++;
      fprintf(stderr, "fuzz_parse: %s\n", violation);
      save_input("contract");
    }
  }
  printf("fuzz_parse: %lu inputs, %lu crashes\n", inputs, crashes);
  printf("fuzz_parse: %lu compiled, %lu with source errors, %lu out of memory (%lu with injected failures)\n",
         by_status[PXL_OK], by_status[PXL_ESOURCE], by_status[PXL_ENOMEM], injected);
  for (size_t i = 0; i < nseeds; i++) {
    free(seeds[i].text.data);
    free(seeds[i].start);
    free(seeds[i].end);
  }
  free(seeds);
  free(b.data);
  return crashes ? 1 : 0;
}

#endif
