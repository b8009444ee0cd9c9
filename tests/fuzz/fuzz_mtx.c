/*
 * fuzz_mtx.c - fuzz target for the Matrix Market reader (sparse_read_mtx) and, on what
 * it accepts, the writer (sparse_write_mtx), with a small self-contained mutation driver.
 *
 * Built with -DPXL_LIBFUZZER it is a plain libFuzzer target (clang -fsanitize=fuzzer).
 * Otherwise main() is a driver: `fuzz_mtx SECONDS SEEDS...` (files or directories)
 * mutates the seeds - bit flips, byte writes, truncation, insertion, deletion and
 * duplication of bytes and of whole lines, splices of two seeds, Matrix Market words and
 * numbers (limits, signs, nan, inf, exponents) written over a word or put between two -
 * mixed with random text and injected out-of-memory failures, for SECONDS seconds, and
 * prints "fuzz_mtx: N inputs, K crashes". Set PXL_FUZZ_SEED for another random sequence.
 * The seeds (tests/fuzz/seeds_mtx) hold every banner the reader takes, comments, blank
 * lines, CRLF line ends, duplicates, and numbers strtod reads.
 *
 * The reader needs a path: each input is written to a file in a temporary directory
 * (under /dev/shm where there is one, so that no disk is touched), read as f64 (or as f32
 * when its length is odd), and what is read is written and read back.
 *
 * A crash is a signal (segfault, sanitizer abort) or a broken contract: a success with a
 * CSR matrix that is not one (row pointers not rising from 0 to nnz, columns not
 * strictly rising inside the matrix), a round trip that changes a bit (a NaN's sign
 * included), a failure other than PXL_EFORMAT or PXL_ENOMEM, a PXL_EFORMAT whose message
 * does not name the file and a line, or a failure that returns a matrix. The input is
 * written to fuzz_mtx-crash-*.bin in the current directory.
 *
 * Inputs in which a line starts with a number above 2^20 are not read: CSR holds a row
 * pointer per row, so a 50-byte file declaring 2^31 - 1 rows is rightly 16 GiB of them
 * (and the product of any reader of it), which is not what the fuzzer is looking for.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sparse/sparse.h"
#include "util/alloc.h"

#define MAX_ROWS ((long long)1 << 20) /* inputs naming more (see above) are skipped */
#define ROUND_TRIP_MAX 200000         /* entries of a matrix written and read back */

static unsigned long by_status[16]; /* inputs per sparse_read_mtx status */
static unsigned long skipped, round_trips;

#ifdef PXL_LIBFUZZER
static void broken(const char *why) {
  fprintf(stderr, "fuzz_mtx: %s\n", why);
  abort();
}
#else
static const char *violation; /* contract broken by the last input, or NULL */

static void broken(const char *why) { violation = why; }
#endif

/* ---- the files ---- */

static char dir[4096], in_path[4200], out_path[4200];

static void remove_files(void) {
  unlink(in_path);
  unlink(out_path);
  rmdir(dir);
}

/* The temporary directory, made on first use. */
static void make_dir(void) {
  if (dir[0]) return;
  const char *tmp = getenv("TMPDIR");
  struct stat st;
  bool shm = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) && access("/dev/shm", W_OK) == 0;
  const char *base = shm ? "/dev/shm" : tmp && *tmp ? tmp : "/tmp";
  snprintf(dir, sizeof dir, "%s/pxl_fuzz_mtx_XXXXXX", base);
  if (!mkdtemp(dir)) {
    fprintf(stderr, "fuzz_mtx: cannot make a temporary directory %s\n", dir);
    exit(2);
  }
  snprintf(in_path, sizeof in_path, "%s/input.mtx", dir);
  snprintf(out_path, sizeof out_path, "%s/written.mtx", dir);
  atexit(remove_files);
}

static void write_input(const uint8_t *data, size_t size) {
  int fd = open(in_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  for (size_t off = 0; fd >= 0 && off < size;) {
    ssize_t w = write(fd, data + off, size - off);
    if (w <= 0) break;
    off += (size_t)w;
  }
  if (fd < 0 || close(fd) != 0) {
    fprintf(stderr, "fuzz_mtx: cannot write %s\n", in_path);
    exit(2);
  }
}

/* Whether some line starts (after the reader's blanks) with a number above MAX_ROWS, in
 * strtoll's grammar: the size line's rows are among these. */
static int names_many_rows(const uint8_t *data, size_t size) {
  for (size_t at = 0; at < size;) {
    while (at < size && memchr(" \t\r\v\f", data[at], 5)) at++;
    if (at < size && data[at] == '+') at++;
    while (at < size && data[at] == '0') at++;
    long long v = 0;
    int digits = 0;
    for (; at < size && data[at] >= '0' && data[at] <= '9'; at++, digits++)
      if (digits < 8) v = v * 10 + (data[at] - '0');
    if (digits >= 8 || v > MAX_ROWS) return 1; /* 8 digits without leading zeros: over 2^20 */
    const uint8_t *nl = memchr(data + at, '\n', size - at);
    at = nl ? (size_t)(nl - data) + 1 : size;
  }
  return 0;
}

/* ---- the contract ---- */

/* Whether A is a well-formed CSR matrix of type t (its first and last values touched, for
 * ASan to check). */
static int valid_csr(const SpMat *A, pxl_type t) {
  if (A->format != SP_CSR || A->type != t || A->rows < 0 || A->cols < 0 || A->rows > SP_MAX_DIM ||
      A->cols > SP_MAX_DIM || A->nnz < 0 || !A->ptr || A->ptr[0] != 0 || A->ptr[A->rows] != A->nnz)
    return 0;
  for (int64_t r = 0; r < A->rows; r++) {
    if (A->ptr[r + 1] < A->ptr[r]) return 0;
    for (int64_t e = A->ptr[r]; e < A->ptr[r + 1]; e++)
      if (A->col[e] < 0 || A->col[e] >= A->cols || (e > A->ptr[r] && A->col[e] <= A->col[e - 1])) return 0;
  }
  if (A->nnz) {
    size_t es = t == PXL_F32 ? 4 : 8;
    volatile uint8_t sink = ((const uint8_t *)A->val)[0];
    sink = ((const uint8_t *)A->val)[(size_t)A->nnz * es - 1];
    (void)sink;
  }
  return 1;
}

static int same_values(const SpMat *A, const SpMat *B) {
  for (int64_t e = 0; e < A->nnz; e++) {
    double a = A->type == PXL_F32 ? ((const float *)A->val)[e] : ((const double *)A->val)[e];
    double b = B->type == PXL_F32 ? ((const float *)B->val)[e] : ((const double *)B->val)[e];
    if (isnan(a) ? !isnan(b) || !signbit(a) != !signbit(b) : memcmp(&a, &b, sizeof a) != 0) return 0;
  }
  return 1;
}

/* Writes A and reads it back: the same matrix, bit for bit. Out of memory (an injected
 * failure still armed) may stop either step. */
static void round_trip(const SpMat *A) {
  Err err = {0};
  int rc = sparse_write_mtx(A, out_path, &err);
  if (rc != PXL_OK) {
    if (rc != PXL_ENOMEM) broken("writing what was read failed");
    return;
  }
  SpMat *B = NULL;
  rc = sparse_read_mtx(out_path, A->type, &B, &err);
  if (rc != PXL_OK) {
    if (rc != PXL_ENOMEM) broken("reading back what was written failed");
    return;
  }
  round_trips++;
  if (B->rows != A->rows || B->cols != A->cols || B->nnz != A->nnz ||
      memcmp(B->ptr, A->ptr, sizeof *A->ptr * (size_t)(A->rows + 1)) ||
      memcmp(B->col, A->col, sizeof *A->col * (size_t)A->nnz) || !same_values(A, B))
    broken("a round trip changed the matrix");
  sparse_free(B);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  make_dir();
  if (names_many_rows(data, size)) {
    skipped++;
    return 0;
  }
  write_input(data, size);
  pxl_type t = size % 2 ? PXL_F32 : PXL_F64;
  SpMat *A = (SpMat *)&A; /* not NULL: a failure must clear it */
  Err err = {0};
  int rc = sparse_read_mtx(in_path, t, &A, &err);
  by_status[rc >= 0 && rc < 16 ? rc : 15]++;
  if (rc == PXL_OK) {
    if (!A || A == (SpMat *)&A) {
      broken("success without a matrix");
      return 0;
    }
    if (!valid_csr(A, t))
      broken("success with an invalid matrix");
    else if (A->nnz <= ROUND_TRIP_MAX)
      round_trip(A);
    sparse_free(A);
    return 0;
  }
  if (A) broken("failure that returned a matrix");
  if (rc != PXL_EFORMAT && rc != PXL_ENOMEM) broken("unexpected status");
  size_t n = strlen(in_path);
  if (err.code != rc || strncmp(err.msg, in_path, n) != 0 || strncmp(err.msg + n, ": ", 2) != 0)
    broken("message does not name the input");
  else if (rc == PXL_EFORMAT && strncmp(err.msg + n, ": line ", 7) != 0)
    broken("message does not name the line");
  return 0;
}

#ifndef PXL_LIBFUZZER

#define FUZZ_NAME "fuzz_mtx" /* in the driver's messages and crash file names */
#define SLOW_SECONDS 2.0     /* an input taking longer than this is reported */
#include "mutation_driver.h"

/* ---- mutations ---- */

static void insert(Buf *b, size_t at, const uint8_t *src, size_t k) {
  if (b->n + k > INPUT_LIMIT) k = INPUT_LIMIT - b->n;
  memmove(b->data + at + k, b->data + at, b->n - at);
  memcpy(b->data + at, src, k);
  b->n += k;
}

static void erase(Buf *b, size_t at, size_t k) {
  memmove(b->data + at, b->data + at + k, b->n - at - k);
  b->n -= k;
}

/* The start of the line holding byte `at`, and the end of it (past its newline). */
static size_t line_start(const Buf *b, size_t at) {
  while (at > 0 && b->data[at - 1] != '\n') at--;
  return at;
}

static size_t line_end(const Buf *b, size_t at) {
  while (at < b->n && b->data[at] != '\n') at++;
  return at < b->n ? at + 1 : at;
}

/* Words a Matrix Market file is made of, and numbers at the reader's edges. */
static const char *const words[] = {"%%MatrixMarket",
                                    "matrix",
                                    "coordinate",
                                    "array",
                                    "real",
                                    "integer",
                                    "pattern",
                                    "complex",
                                    "general",
                                    "symmetric",
                                    "skew-symmetric",
                                    "hermitian",
                                    "REAL",
                                    "Symmetric",
                                    "%",
                                    "%%",
                                    "0",
                                    "1",
                                    "2",
                                    "-1",
                                    "+1",
                                    "3",
                                    "65535",
                                    "2147483647",
                                    "2147483648",
                                    "-2147483648",
                                    "1048576",
                                    "1099511627776",
                                    "9223372036854775807",
                                    "9223372036854775808",
                                    "99999999999999999999",
                                    "nan",
                                    "-nan",
                                    "inf",
                                    "-inf",
                                    "infinity",
                                    "NaN(123)",
                                    "1e308",
                                    "1e309",
                                    "-1e-400",
                                    "4.9e-324",
                                    "0x1p-1074",
                                    "1.5",
                                    "-0",
                                    "1e",
                                    ".",
                                    "1,5",
                                    "1.0D+00",
                                    " ",
                                    "\t",
                                    "\r",
                                    "\n",
                                    "\n%\n",
                                    "\n\n",
                                    "\r\n",
                                    "\0"};

static void put_word(Buf *b, size_t at, int replace) {
  const char *w = words[below(sizeof words / sizeof words[0])];
  size_t k = w[0] ? strlen(w) : 1; /* "\0": one NUL byte */
  if (replace) {                   /* over the word at `at` */
    size_t s = at, e = at;
    while (s > 0 && b->data[s - 1] > ' ') s--;
    while (e < b->n && b->data[e] > ' ') e++;
    erase(b, s, e - s);
    at = s;
  }
  insert(b, at, (const uint8_t *)w, k);
}

static void mutate_once(Buf *b) {
  uint8_t tmp[256];
  switch (below(13)) {
  case 0: /* flip a bit */
    if (b->n) b->data[below(b->n)] ^= (uint8_t)(1u << below(8));
    break;
  case 1: /* random byte, mostly printable */
    if (b->n) b->data[below(b->n)] = below(4) ? (uint8_t)(' ' + below(95)) : (uint8_t)rnd();
    break;
  case 2: /* truncate */
    b->n = below(b->n + 1);
    break;
  case 3: { /* insert random bytes */
    size_t k = 1 + below(16);
    for (size_t i = 0; i < k; i++)
      tmp[i] = below(4) ? (uint8_t) "0123456789 .-+e\n%"[below(17)] : (uint8_t)rnd();
    insert(b, below(b->n + 1), tmp, k);
    break;
  }
  case 4: /* delete a range */
    if (b->n) {
      size_t at = below(b->n);
      erase(b, at, 1 + below(b->n - at < 64 ? b->n - at : 64));
    }
    break;
  case 5: { /* duplicate a range */
    if (!b->n) break;
    size_t at = below(b->n), k = 1 + below(b->n - at < 64 ? b->n - at : 64);
    memcpy(tmp, b->data + at, k);
    insert(b, below(b->n + 1), tmp, k);
    break;
  }
  case 6: { /* splice: our prefix, another seed's suffix */
    const Buf *o = &seeds[below(nseeds)];
    size_t cut = below(b->n + 1), from = below(o->n + 1), k = o->n - from;
    if (cut + k > INPUT_LIMIT) k = INPUT_LIMIT - cut;
    memcpy(b->data + cut, o->data + from, k);
    b->n = cut + k;
    break;
  }
  case 7: /* a word over a word */
    if (b->n) put_word(b, below(b->n), 1);
    break;
  case 8: /* a word between two */
    put_word(b, below(b->n + 1), 0);
    break;
  case 9: { /* duplicate a line (an entry too many) */
    if (!b->n) break;
    size_t s = line_start(b, below(b->n)), e = line_end(b, s);
    if (e - s <= sizeof tmp) {
      memcpy(tmp, b->data + s, e - s);
      insert(b, e, tmp, e - s);
    }
    break;
  }
  case 10: /* delete a line (an entry too few, a missing size line) */
    if (b->n) {
      size_t s = line_start(b, below(b->n));
      erase(b, s, line_end(b, s) - s);
    }
    break;
  case 11: { /* a long run of one byte (long lines, many blank lines) */
    size_t k = 1 + below(below(8) ? 64 : 70000), at = below(b->n + 1);
    if (b->n + k > INPUT_LIMIT) k = INPUT_LIMIT - b->n;
    memmove(b->data + at + k, b->data + at, b->n - at);
    memset(b->data + at, "  \n%x0"[below(6)], k);
    b->n += k;
    break;
  }
  default: /* swap two bytes */
    if (b->n > 1) {
      size_t i = below(b->n), j = below(b->n);
      uint8_t t = b->data[i];
      b->data[i] = b->data[j];
      b->data[j] = t;
    }
    break;
  }
}

/* Fills b with the next input: a mutated seed, or random text after a banner. */
static void next_input(Buf *b) {
  size_t r = below(100);
  if (nseeds && r < 90) {
    const Buf *s = &seeds[below(nseeds)];
    memcpy(b->data, s->data, s->n);
    b->n = s->n;
    for (size_t k = 1 + below(6); k > 0; k--) mutate_once(b);
    return;
  }
  static const char banner[] = "%%MatrixMarket matrix coordinate real general\n";
  b->n = 0;
  if (r < 97) {
    b->n = sizeof banner - 1;
    memcpy(b->data, banner, b->n);
  }
  for (size_t k = below(300); k > 0; k--)
    b->data[b->n++] = below(8) ? (uint8_t) "0123456789 \n.-e%"[below(16)] : (uint8_t)rnd();
}

int main(int argc, char **argv) {
  if (argc < 2 || atof(argv[1]) <= 0) {
    fprintf(stderr, "usage: fuzz_mtx SECONDS [SEED_FILE_OR_DIR...]\n");
    return 2;
  }
  double seconds = atof(argv[1]);
  const char *env = getenv("PXL_FUZZ_SEED");
  rng_state = env ? strtoull(env, NULL, 0) : 0x9e3779b97f4a7c15ull;
  if (!rng_state) rng_state = 1;
  for (int i = 2; i < argc; i++) add_seeds(argv[i]);
  static const int sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
  for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) signal(sigs[i], on_signal);
  make_dir();

  Buf b = {malloc(INPUT_LIMIT + 512), 0};
  if (!b.data) return 2;
  unsigned long inputs = 0, crashes = 0, slow = 0;
  double start = now();
  for (size_t i = 0; i < nseeds; i++) { /* the seeds themselves first: each must read */
    cur_data = seeds[i].data, cur_size = seeds[i].n;
    violation = NULL;
    unsigned long ok = by_status[PXL_OK];
    LLVMFuzzerTestOneInput(seeds[i].data, seeds[i].n);
    inputs++;
    if (!violation && by_status[PXL_OK] == ok) violation = "a seed was refused";
    if (violation) {
      crashes++;
      fprintf(stderr, "fuzz_mtx: seed %zu: %s\n", i, violation);
      save_input("seed");
    }
  }
  mutation_loop(&b, start, seconds, &inputs, &crashes, &slow);
  printf("fuzz_mtx: %lu inputs, %lu crashes\n", inputs, crashes);
  printf("fuzz_mtx: %lu read (%lu written and read back), %lu bad format, %lu out of memory, %lu skipped "
         "(over 2^20 rows)\n",
         by_status[PXL_OK], round_trips, by_status[PXL_EFORMAT], by_status[PXL_ENOMEM], skipped);
  if (slow) printf("fuzz_mtx: %lu slow inputs\n", slow);
  for (size_t i = 0; i < nseeds; i++) free(seeds[i].data);
  free(seeds);
  free(b.data);
  return crashes ? 1 : 0;
}

#endif
