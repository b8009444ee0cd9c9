/*
 * test_front.c - unit tests of the front end (cmocka): the lexer's tokens, the type rules
 * as the checker applies them (read from the checked nodes), the invariants of checked
 * IR that docs/IR.md promises, and out-of-memory injection during compilation.
 *
 *     test_front [SOURCE_DIR]     (SOURCE_DIR holds examples/; default PXL_SOURCE_DIR)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "analysis/specialise.h"
#include "analysis/analysis.h"
#include "front/front.h"
#include "pxl/pxl.h"
#include "util/alloc.h"
#include "util/arena.h"

#ifndef PXL_SOURCE_DIR
#define PXL_SOURCE_DIR "."
#endif

static const char *source_dir = PXL_SOURCE_DIR;

static char *read_text(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  size_t got = fread(s, 1, (size_t)n, f);
  s[got] = 0;
  fclose(f);
  return s;
}

static char *read_example(const char *name) {
  char path[4096];
  snprintf(path, sizeof path, "%s/examples/%s", source_dir, name);
  char *s = read_text(path);
  if (!s) fail_msg("cannot read %s", path);
  return s;
}

/* ---- lexer ---- */

typedef struct {
  TokenKind kind;
  const char *text;
  int line, col;
} Want;

static void check_tokens(const char *src, const Want *want, int nwant) {
  Arena *a = arena_new();
  Diag d;
  diag_init(&d, "t.pxl", src);
  int n = 0;
  Token *t = lex(a, &d, src, &n);
  assert_non_null(t);
  assert_int_equal(d.nerrors, 0);
  assert_int_equal(n, nwant);
  for (int i = 0; i < n; i++) {
    if (t[i].kind != want[i].kind || strcmp(t[i].text, want[i].text) || t[i].loc.line != want[i].line ||
        t[i].loc.col != want[i].col)
      fail_msg("token %d: got kind %d '%s' at %d:%d, want kind %d '%s' at %d:%d", i, t[i].kind, t[i].text,
               t[i].loc.line, t[i].loc.col, want[i].kind, want[i].text, want[i].line, want[i].col);
  }
  PXL_FREE(t);
  diag_free(&d);
  arena_free(a);
}

static void test_lex_tokens(void **state) {
  (void)state;
  const char *src = "kernel u8 k(image u8 in) size(sum, 2) {\n"
                    "  // comment\n"
                    "  x <<= 0x1F; /* block\n comment */ return in(-1, 0) >= .5 ? 2.5f : 1e3;\n"
                    "}";
  static const Want want[] = {
      {TK_KEYWORD, "kernel", 1, 1}, {TK_IDENT, "u8", 1, 8},      {TK_IDENT, "k", 1, 11},
      {TK_PUNCT, "(", 1, 12},       {TK_KEYWORD, "image", 1, 13}, {TK_IDENT, "u8", 1, 19},
      {TK_IDENT, "in", 1, 22},      {TK_PUNCT, ")", 1, 24},      {TK_KEYWORD, "size", 1, 26},
      {TK_PUNCT, "(", 1, 30},       {TK_IDENT, "sum", 1, 31},    {TK_PUNCT, ",", 1, 34},
      {TK_INT, "2", 1, 36},         {TK_PUNCT, ")", 1, 37},      {TK_PUNCT, "{", 1, 39},
      {TK_IDENT, "x", 3, 3},        {TK_PUNCT, "<<=", 3, 5},     {TK_INT, "0x1F", 3, 9},
      {TK_PUNCT, ";", 3, 13},       {TK_KEYWORD, "return", 4, 13}, {TK_IDENT, "in", 4, 20},
      {TK_PUNCT, "(", 4, 22},       {TK_PUNCT, "-", 4, 23},      {TK_INT, "1", 4, 24},
      {TK_PUNCT, ",", 4, 25},       {TK_INT, "0", 4, 27},        {TK_PUNCT, ")", 4, 28},
      {TK_PUNCT, ">=", 4, 30},      {TK_FLOAT, ".5", 4, 33},     {TK_PUNCT, "?", 4, 36},
      {TK_FLOAT, "2.5f", 4, 38},    {TK_PUNCT, ":", 4, 43},      {TK_FLOAT, "1e3", 4, 45},
      {TK_PUNCT, ";", 4, 48},       {TK_PUNCT, "}", 5, 1},       {TK_EOF, "", 5, 2},
  };
  check_tokens(src, want, (int)(sizeof want / sizeof *want));
}

static void test_lex_values(void **state) {
  (void)state;
  const char *src = "0 42 0xff 18446744073709551615 7u 1.5 .25 2e-3 3.f";
  Arena *a = arena_new();
  Diag d;
  diag_init(&d, "t.pxl", src);
  int n = 0;
  Token *t = lex(a, &d, src, &n);
  assert_non_null(t);
  assert_int_equal(d.nerrors, 0);
  assert_int_equal(n, 10);
  assert_int_equal(t[0].ival, 0);
  assert_int_equal(t[1].ival, 42);
  assert_int_equal(t[2].ival, 255);
  assert_true(t[3].ival == UINT64_MAX);
  assert_int_equal(t[4].kind, TK_INT);
  assert_int_equal(t[4].ival, 7);
  assert_string_equal(t[4].text, "7u");
  assert_int_equal(t[5].kind, TK_FLOAT);
  assert_true(t[5].fval == 1.5);
  assert_true(t[6].fval == 0.25);
  assert_true(t[7].fval == 2e-3);
  assert_true(t[8].fval == 3.0);
  assert_string_equal(t[8].text, "3.f");
  assert_int_equal(t[9].kind, TK_EOF);
  PXL_FREE(t);
  diag_free(&d);
  arena_free(a);
}

static void test_lex_errors(void **state) {
  (void)state;
  const char *src = "a $ b\n  \"c\"";
  Arena *a = arena_new();
  Diag d;
  diag_init(&d, "t.pxl", src);
  int n = 0;
  Token *t = lex(a, &d, src, &n);
  assert_non_null(t);
  assert_int_equal(d.nerrors, 3); /* '$' and the two '"' */
  assert_int_equal(n, 4);         /* a b c EOF: bad characters are skipped */
  assert_non_null(strstr(d.text, "t.pxl:1:3: error: unexpected character '$'\n  a $ b\n    ^\n"));
  PXL_FREE(t);
  diag_free(&d);
  arena_free(a);
}

/* ---- type rules, read from the checked IR ---- */

typedef struct {
  Program *p;
  Diag d;
} Compiled;

static Compiled *compile_ok(const char *src) {
  Compiled *c = calloc(1, sizeof *c);
  diag_init(&c->d, "t.pxl", src);
  int rc = front_compile("t.pxl", src, &c->p, &c->d);
  if (rc != PXL_OK) fail_msg("does not compile (%d):\n%s\n%s", rc, src, c->d.text ? c->d.text : "");
  return c;
}

static void compiled_free(Compiled *c) {
  program_free(c->p);
  diag_free(&c->d);
  free(c);
}

/* Finds the declaration of variable `name` in a statement list (nested too). */
static Node *find_decl(Node *s, const char *name) {
  for (; s; s = s->next) {
    if (s->kind == ND_DECL && s->var && !strcmp(s->var->name, name)) return s;
    Node *kids[] = {s->body, s->init, s->b, s->c};
    for (size_t i = 0; i < sizeof kids / sizeof *kids; i++) {
      Node *r = kids[i] ? find_decl(kids[i], name) : NULL;
      if (r) return r;
    }
  }
  return NULL;
}

static const char *PARAMS = "image u8 in, u8 a, u8 b, i16 s, u16 us, i32 i, u32 u, i64 l, u64 ul, f32 f, f64 d";

/* Compiles `T r = EXPR;` in a kernel with the parameters above (and v, a u8x3 local) and
 * returns the initialiser of r as checked. The caller frees *c. */
static Node *init_of(const char *decl, Compiled **c) {
  static char src[2048];
  snprintf(src, sizeof src, "kernel u8 k(%s) {\n  u8x3 v = in(0, 0);\n  %s\n  return 0;\n}\n", PARAMS, decl);
  *c = compile_ok(src);
  Decl *D = program_find((*c)->p, "k");
  assert_non_null(D);
  Node *s = find_decl(D->body->body, "r");
  assert_non_null(s);
  assert_non_null(s->a);
  return s->a;
}

static void assert_type(Type t, Scalar s, int lanes) {
  char b1[16], b2[16];
  if (t.s != s || t.lanes != lanes)
    fail_msg("type %s, want %s", type_str(t, b1), type_str((Type){s, lanes}, b2));
}

/* `T r = EXPR;` where EXPR must already have type T: no conversion at the declaration.
 * Returns the node (kind checked by the caller). */
static Node *expr_of_type(const char *decl, Scalar s, int lanes, NodeKind kind, Compiled **c) {
  Node *n = init_of(decl, c);
  if (n->kind != kind) fail_msg("%s: node %s, want %s", decl, node_name(n->kind), node_name(kind));
  assert_type(n->type, s, lanes);
  return n;
}

static void test_arithmetic_conversions(void **state) {
  (void)state;
  Compiled *c;
  Node *n;

  n = expr_of_type("i32 r = a + b;", T_I32, 1, ND_ADD, &c); /* u8 + u8 is i32 */
  assert_int_equal(n->a->kind, ND_CAST);
  assert_type(n->a->a->type, T_U8, 1);
  assert_type(n->b->type, T_I32, 1);
  compiled_free(c);

  n = expr_of_type("i32 r = a * s;", T_I32, 1, ND_MUL, &c); /* u8 * i16 is i32 */
  compiled_free(c);
  n = expr_of_type("i32 r = us - us;", T_I32, 1, ND_SUB, &c); /* u16 promotes to i32 */
  compiled_free(c);

  /* integers meet in the first of i32 u32 i64 u64 that holds both */
  n = expr_of_type("i64 r = u + i;", T_I64, 1, ND_ADD, &c); /* not u32 as in C */
  assert_int_equal(n->a->kind, ND_CAST);
  assert_type(n->a->a->type, T_U32, 1);
  assert_int_equal(n->b->kind, ND_CAST);
  assert_type(n->b->a->type, T_I32, 1);
  compiled_free(c);
  n = expr_of_type("i64 r = i - u;", T_I64, 1, ND_SUB, &c);
  compiled_free(c);
  n = expr_of_type("i64 r = s * u;", T_I64, 1, ND_MUL, &c); /* i16 with u32 */
  compiled_free(c);
  n = expr_of_type("u32 r = u + a;", T_U32, 1, ND_ADD, &c); /* u32 holds every u8 */
  compiled_free(c);
  n = expr_of_type("u32 r = us * u;", T_U32, 1, ND_MUL, &c);
  compiled_free(c);
  n = expr_of_type("i64 r = u + 1;", T_I64, 1, ND_ADD, &c); /* a literal is an i32 like any */
  compiled_free(c);
  n = expr_of_type("i64 r = l + u;", T_I64, 1, ND_ADD, &c); /* wider signed holds u32 */
  compiled_free(c);
  n = expr_of_type("u64 r = ul + u;", T_U64, 1, ND_ADD, &c);
  compiled_free(c);
  n = expr_of_type("u64 r = ul + us;", T_U64, 1, ND_ADD, &c); /* u16 is unsigned, promoted or not */
  compiled_free(c);
  /* u64 with a signed type: only a non-negative literal adapts (u64 with a variable: err_mixed_u64.pxl) */
  n = expr_of_type("u64 r = ul + 1;", T_U64, 1, ND_ADD, &c);
  assert_int_equal(n->b->kind, ND_NUM);
  assert_type(n->b->type, T_U64, 1);
  compiled_free(c);
  n = expr_of_type("i32 r = ul > 0;", T_I32, 1, ND_GT, &c);
  assert_type(n->b->type, T_U64, 1);
  compiled_free(c);
  n = expr_of_type("u64 r = 9223372036854775807 - ul;", T_U64, 1, ND_SUB, &c); /* an i64 literal */
  compiled_free(c);
  n = expr_of_type("u64 r = ul * (i64)3;", T_U64, 1, ND_MUL, &c); /* a cast literal is folded */
  compiled_free(c);
  n = expr_of_type("f32 r = f + l;", T_F32, 1, ND_ADD, &c); /* any float wins */
  compiled_free(c);
  n = expr_of_type("f64 r = f * d;", T_F64, 1, ND_MUL, &c);
  compiled_free(c);
  n = expr_of_type("u32 r = 7u * u;", T_U32, 1, ND_MUL, &c); /* the suffix u makes u32 */
  compiled_free(c);
  n = expr_of_type("u32 r = 0xffffffff & u;", T_U32, 1, ND_BITAND, &c); /* hex: u32 */
  compiled_free(c);
  n = expr_of_type("i64 r = 0xffffffff & i;", T_I64, 1, ND_BITAND, &c); /* u32 with i32 */
  compiled_free(c);
  n = expr_of_type("i64 r = 4294967295 + i;", T_I64, 1, ND_ADD, &c); /* decimal: i64 */
  compiled_free(c);

  /* shifts: the type of the promoted left operand */
  n = expr_of_type("i32 r = a << l;", T_I32, 1, ND_SHL, &c);
  compiled_free(c);
  n = expr_of_type("u64 r = ul >> i;", T_U64, 1, ND_SHR, &c);
  compiled_free(c);

  /* comparisons and logic give i32 0/1; the operands meet in their common type */
  n = expr_of_type("i32 r = a < f;", T_I32, 1, ND_LT, &c);
  assert_type(n->a->type, T_F32, 1);
  assert_type(n->b->type, T_F32, 1);
  compiled_free(c);
  n = expr_of_type("i32 r = d != 0 && !f;", T_I32, 1, ND_LOGAND, &c);
  compiled_free(c);
}

static void test_float_literals(void **state) {
  (void)state;
  Compiled *c;
  Node *n;

  n = expr_of_type("f32 r = f * 0.5;", T_F32, 1, ND_MUL, &c); /* untyped float: f32 */
  assert_int_equal(n->b->kind, ND_NUM);
  assert_type(n->b->type, T_F32, 1);
  assert_true(n->b->fval == 0.5);
  compiled_free(c);

  n = expr_of_type("f64 r = d * 0.1;", T_F64, 1, ND_MUL, &c); /* next to f64: f64 */
  assert_int_equal(n->b->kind, ND_NUM);
  assert_type(n->b->type, T_F64, 1);
  assert_true(n->b->fval == 0.1); /* the double nearest 0.1, not the float */
  compiled_free(c);

  n = expr_of_type("f32 r = i * 0.1;", T_F32, 1, ND_MUL, &c); /* next to an integer: f32 */
  assert_true(n->b->fval == (double)0.1f); /* an f32 literal holds an f32 value */
  compiled_free(c);

  n = expr_of_type("f64 r = -0.1 * d;", T_F64, 1, ND_MUL, &c); /* -literal stays a literal */
  assert_int_equal(n->a->kind, ND_NUM);
  assert_true(n->a->fval == -0.1);
  compiled_free(c);

  n = expr_of_type("f32 r = 1.5f * 2;", T_F32, 1, ND_MUL, &c);
  compiled_free(c);

  n = expr_of_type("f64 r = d * 0.1f;", T_F64, 1, ND_MUL, &c); /* the suffix f makes it f32 */
  assert_int_equal(n->b->kind, ND_NUM);
  assert_type(n->b->type, T_F64, 1);
  assert_true(n->b->fval == (double)0.1f); /* the f32 value, converted */
  compiled_free(c);

  n = expr_of_type("f64 r = f + d * 0.5;", T_F64, 1, ND_ADD, &c);
  compiled_free(c);
}

/* Literals are converted at compile time with the run-time rules. */
static void check_literal(const char *decl, Scalar s, int64_t ival, double fval) {
  Compiled *c;
  Node *n = init_of(decl, &c);
  if (n->kind != ND_NUM) fail_msg("%s: node %s, want ND_NUM", decl, node_name(n->kind));
  assert_type(n->type, s, 1);
  if (scalar_is_float(s)) {
    if (n->fval != fval) fail_msg("%s: %.17g, want %.17g", decl, n->fval, fval);
  } else if (n->ival != ival) {
    fail_msg("%s: %lld, want %lld", decl, (long long)n->ival, (long long)ival);
  }
  compiled_free(c);
}

static void test_literal_conversions(void **state) {
  (void)state;
  check_literal("u8 r = 300;", T_U8, 255, 0); /* saturates */
  check_literal("u8 r = -5;", T_U8, 0, 0);
  check_literal("i16 r = -40000;", T_I16, -32768, 0);
  check_literal("u16 r = 70000;", T_U16, 65535, 0);
  check_literal("i32 r = 4000000000;", T_I32, INT32_MAX, 0);
  check_literal("u32 r = -1;", T_U32, 0, 0);
  check_literal("u64 r = -1;", T_U64, 0, 0);
  check_literal("i64 r = 18446744073709551615;", T_I64, INT64_MAX, 0);
  check_literal("i32 r = -2147483648;", T_I32, INT32_MIN, 0);
  check_literal("i32 r = 2.5;", T_I32, 2, 0); /* rounds to nearest, ties to even */
  check_literal("i32 r = 3.5;", T_I32, 4, 0);
  check_literal("i32 r = -2.5;", T_I32, -2, 0);
  check_literal("i32 r = -2.6;", T_I32, -3, 0);
  check_literal("u8 r = 255.5;", T_U8, 255, 0);
  check_literal("u8 r = -0.7;", T_U8, 0, 0);
  check_literal("i32 r = 1e30;", T_I32, INT32_MAX, 0);
  check_literal("f32 r = 16777217;", T_F32, 0, 16777216.0); /* nearest f32 */
  check_literal("f64 r = 16777217;", T_F64, 0, 16777217.0);
  check_literal("f32 r = 0.1;", T_F32, 0, (double)0.1f);
  check_literal("f64 r = 0.1;", T_F64, 0, 0.1);
  check_literal("int r = 0x7fffffff;", T_I32, INT32_MAX, 0);
}

static void test_vectors_and_calls(void **state) {
  (void)state;
  Compiled *c;
  Node *n;

  n = expr_of_type("i32x3 r = v + 1;", T_I32, 3, ND_ADD, &c); /* u8x3 promotes to i32x3 */
  assert_int_equal(n->b->kind, ND_CAST);                        /* the 1 broadcasts explicitly */
  assert_type(n->b->type, T_I32, 3);
  compiled_free(c);
  n = expr_of_type("f32x3 r = v * f;", T_F32, 3, ND_MUL, &c);
  compiled_free(c);
  n = expr_of_type("u8 r = v.g;", T_U8, 1, ND_LANE, &c);
  assert_int_equal(n->ival, 1);
  compiled_free(c);
  n = expr_of_type("f32x3 r = f32x3(v);", T_F32, 3, ND_CAST, &c);
  compiled_free(c);
  n = expr_of_type("u16x4 r = u16x4(1, a, 300000, f);", T_U16, 4, ND_VEC, &c);
  assert_int_equal(n->nargs, 4);
  assert_int_equal(n->args[2]->kind, ND_NUM);
  assert_int_equal(n->args[2]->ival, 65535);
  assert_type(n->args[3]->type, T_U16, 1);
  compiled_free(c);

  n = expr_of_type("i32 r = min(a, b);", T_I32, 1, ND_CALL, &c); /* promoted like + */
  compiled_free(c);
  n = expr_of_type("i64 r = max(u, i);", T_I64, 1, ND_CALL, &c); /* the common type of + */
  compiled_free(c);
  n = expr_of_type("u64 r = clamp(ul, 0, 255);", T_U64, 1, ND_CALL, &c);
  compiled_free(c);
  n = expr_of_type("i64 r = clamp(i, 0, u);", T_I64, 1, ND_CALL, &c);
  compiled_free(c);
  n = expr_of_type("u32 r = abs(u);", T_U32, 1, ND_CALL, &c);
  compiled_free(c);
  n = expr_of_type("f32 r = pow(ul, -1);", T_F32, 1, ND_CALL, &c); /* float functions need no integer type */
  compiled_free(c);
  n = expr_of_type("i64 r = a > 1 ? u : -1;", T_I64, 1, ND_COND, &c);
  compiled_free(c);
  n = expr_of_type("u32x3 r = v - u;", T_U32, 3, ND_SUB, &c); /* lane by lane: u8 with u32 */
  compiled_free(c);
  n = expr_of_type("i64x3 r = i32x3(v) - u;", T_I64, 3, ND_SUB, &c); /* i32 with u32 */
  compiled_free(c);
  n = expr_of_type("f32 r = sqrt(a);", T_F32, 1, ND_CALL, &c); /* float functions: f32 ... */
  compiled_free(c);
  n = expr_of_type("f64 r = sqrt(d);", T_F64, 1, ND_CALL, &c); /* ... or f64 */
  compiled_free(c);
  n = expr_of_type("f64 r = pow(d, 2);", T_F64, 1, ND_CALL, &c);
  compiled_free(c);
  n = expr_of_type("i32 r = abs(s);", T_I32, 1, ND_CALL, &c);
  compiled_free(c);
  n = expr_of_type("f32 r = clamp(f, 0, 1);", T_F32, 1, ND_CALL, &c);
  compiled_free(c);
  n = expr_of_type("i32x3 r = max(v, 10);", T_I32, 3, ND_CALL, &c);
  compiled_free(c);
  n = expr_of_type("f32 r = a > 1 ? f : 2;", T_F32, 1, ND_COND, &c);
  compiled_free(c);
}

static void test_histogram_bins(void **state) {
  (void)state;
  Compiled *c = compile_ok("histogram[8] h(image f32 in) { bin(in(0, 0)); }\n"
                           "histogram[8] w(image f32 in) { bin(1, in(0, 0)); }\n"
                           "histogram[8] iw(image u8 in) { bin(in(0, 0), in(1, 0)); }\n");
  Decl *h = program_find(c->p, "h"), *w = program_find(c->p, "w"), *iw = program_find(c->p, "iw");
  Node *s = h->body->body;
  assert_int_equal(s->kind, ND_BIN);
  assert_type(s->a->type, T_I32, 1); /* float index: floored, then converted */
  assert_int_equal(s->a->kind, ND_CAST);
  assert_int_equal(s->a->a->kind, ND_CALL);
  assert_int_equal(s->a->a->builtin, BI_FLOOR);
  assert_type(h->type, T_I64, 1); /* counts */
  assert_false(h->weighted_float);
  assert_type(w->type, T_F64, 1); /* a floating-point weight makes f64 bins */
  assert_true(w->weighted_float);
  assert_type(w->body->body->b->type, T_F64, 1);
  assert_type(iw->type, T_I64, 1);
  assert_type(iw->body->body->b->type, T_I64, 1);
  compiled_free(c);
}

/* ---- invariants of checked IR (docs/IR.md) ---- */

static int lanes_of(Type t) { return t.lanes; }

static void check_expr_inv(const Node *n, const char *where);

static void same_type(const Node *n, const Node *k, const char *where) {
  char b1[16], b2[16];
  if (!type_eq(n->type, k->type))
    fail_msg("%s: %s operand %s of %s node at %d:%d", where, node_name(k->kind), type_str(k->type, b1),
             type_str(n->type, b2), n->loc.line, n->loc.col);
}

static void scalar_operand(const Node *k, const char *where) {
  if (lanes_of(k->type) != 1) fail_msg("%s: vector condition at %d:%d", where, k->loc.line, k->loc.col);
}

static void check_expr_inv(const Node *n, const char *where) {
  assert_non_null(n);
  if (n->type.s == T_VOID || n->type.lanes < 1 || n->type.lanes > 4 || n->type.lanes == 2)
    fail_msg("%s: untyped %s at %d:%d", where, node_name(n->kind), n->loc.line, n->loc.col);
  if (n->flags & NF_ERROR) fail_msg("%s: error node at %d:%d", where, n->loc.line, n->loc.col);
  switch (n->kind) {
  case ND_NUM: case ND_VAR: case ND_COORD: case ND_IMGDIM:
    break;
  case ND_READ: case ND_AT:
    check_expr_inv(n->a, where);
    check_expr_inv(n->b, where);
    assert_type(n->a->type, T_I32, 1);
    assert_type(n->b->type, T_I32, 1);
    assert_true(type_eq(n->type, n->param->type));
    break;
  case ND_LANE:
    check_expr_inv(n->a, where);
    assert_true(n->a->type.lanes > 1 && n->ival < n->a->type.lanes && n->type.lanes == 1);
    assert_int_equal(n->type.s, n->a->type.s);
    break;
  case ND_VEC:
    for (int i = 0; i < n->nargs; i++) {
      check_expr_inv(n->args[i], where);
      assert_type(n->args[i]->type, n->type.s, 1);
    }
    assert_int_equal(n->nargs, n->type.lanes);
    break;
  case ND_CAST:
    check_expr_inv(n->a, where);
    assert_true(!type_eq(n->type, n->a->type) || (n->a->flags & NF_UNTYPED_FLOAT));
    assert_true(n->a->type.lanes == 1 || n->a->type.lanes == n->type.lanes);
    break;
  case ND_NEG: case ND_BITNOT:
    check_expr_inv(n->a, where);
    same_type(n, n->a, where);
    break;
  case ND_NOT:
    check_expr_inv(n->a, where);
    scalar_operand(n->a, where);
    assert_type(n->type, T_I32, 1);
    break;
  case ND_EQ: case ND_NE: case ND_LT: case ND_LE: case ND_GT: case ND_GE:
    check_expr_inv(n->a, where);
    check_expr_inv(n->b, where);
    assert_true(type_eq(n->a->type, n->b->type));
    scalar_operand(n->a, where);
    assert_type(n->type, T_I32, 1);
    break;
  case ND_LOGAND: case ND_LOGOR:
    check_expr_inv(n->a, where);
    check_expr_inv(n->b, where);
    scalar_operand(n->a, where);
    scalar_operand(n->b, where);
    assert_type(n->type, T_I32, 1);
    break;
  case ND_COND:
    check_expr_inv(n->a, where);
    check_expr_inv(n->b, where);
    check_expr_inv(n->c, where);
    scalar_operand(n->a, where);
    same_type(n, n->b, where);
    same_type(n, n->c, where);
    break;
  case ND_CALL:
    for (int i = 0; i < n->nargs; i++) {
      check_expr_inv(n->args[i], where);
      same_type(n, n->args[i], where);
    }
    assert_int_equal(n->nargs, builtin_arity(n->builtin));
    break;
  default: /* binary arithmetic: both operands in the result's type */
    if (n->kind < ND_ADD || n->kind > ND_BITXOR) fail_msg("%s: %s in an expression", where, node_name(n->kind));
    check_expr_inv(n->a, where);
    check_expr_inv(n->b, where);
    same_type(n, n->a, where);
    same_type(n, n->b, where);
    {
      Scalar s = n->type.s;
      if (s == T_U8 || s == T_I16 || s == T_U16) fail_msg("%s: arithmetic in unpromoted %s", where, scalar_name(s));
    }
    break;
  }
}

static void check_stmt_inv(const Decl *D, const Node *s, const char *where) {
  for (; s; s = s->next) {
    switch (s->kind) {
    case ND_BLOCK: check_stmt_inv(D, s->body, where); break;
    case ND_DECL: case ND_ASSIGN:
      if (s->a) {
        check_expr_inv(s->a, where);
        assert_true(type_eq(s->a->type, s->var->type));
      }
      break;
    case ND_LANESET:
      check_expr_inv(s->a, where);
      assert_type(s->a->type, s->var->type.s, 1);
      break;
    case ND_IF:
      check_expr_inv(s->a, where);
      scalar_operand(s->a, where);
      check_stmt_inv(D, s->b, where);
      check_stmt_inv(D, s->c, where);
      break;
    case ND_FOR:
      check_stmt_inv(D, s->init, where);
      check_expr_inv(s->a, where);
      scalar_operand(s->a, where);
      check_stmt_inv(D, s->step, where);
      check_stmt_inv(D, s->b, where);
      break;
    case ND_RETURN:
      check_expr_inv(s->a, where);
      assert_true(type_eq(s->a->type, D->type));
      break;
    case ND_BIN:
      check_expr_inv(s->a, where);
      assert_type(s->a->type, T_I32, 1);
      if (s->b) {
        check_expr_inv(s->b, where);
        assert_type(s->b->type, D->weighted_float ? T_F64 : T_I64, 1);
      }
      break;
    default:
      fail_msg("%s: %s as a statement", where, node_name(s->kind));
    }
  }
}

static void check_program_inv(const Program *p, const char *where) {
  for (int i = 0; i < p->ndecls; i++) {
    const Decl *D = p->decls[i];
    assert_false(D->bad);
    switch (D->kind) {
    case D_KERNEL:
    case D_HISTOGRAM:
      check_stmt_inv(D, D->body->body, where);
      if (D->size_w) {
        check_expr_inv(D->size_w, where);
        check_expr_inv(D->size_h, where);
        assert_type(D->size_w->type, T_I32, 1);
        assert_type(D->size_h->type, T_I32, 1);
      }
      break;
    case D_REDUCE:
      check_expr_inv(D->body, where);
      assert_true(type_eq(D->body->type, D->type));
      if (D->redop == R_COMBINE) {
        check_expr_inv(D->combine, where);
        check_expr_inv(D->identity, where);
        assert_true(type_eq(D->combine->type, D->type));
        assert_true(type_eq(D->identity->type, D->type));
      }
      break;
    case D_FUNC:
      break;
    case D_PIPELINE:
      assert_true(D->result >= 0 && D->result < D->nvalues);
      for (int v = 0; v < D->nvalues; v++) {
        const PipeValue *pv = &D->values[v];
        if (!pv->callee) {
          assert_true(pv->carried >= 0 ? !pv->param && pv->carried < D->nloops : pv->param != NULL);
          continue;
        }
        assert_int_equal(pv->callee->kind, D_KERNEL);
        assert_int_equal(pv->nargs, pv->callee->nparams);
        for (int a = 0; a < pv->nargs; a++) {
          const Param *pa = pv->callee->params[a];
          if (pa->is_image) {
            assert_true(pv->args[a].source >= 0 && pv->args[a].source < v);
            assert_true(type_eq(D->values[pv->args[a].source].type, pa->type));
          } else {
            check_expr_inv(pv->args[a].expr, where);
            assert_true(type_eq(pv->args[a].expr->type, pa->type));
          }
        }
      }
      for (int l = 0; l < D->nloops; l++) { /* loops: IR.md, Pipelines */
        const PipeLoop *L = &D->loops[l];
        assert_true(L->ncarry > 0 && L->phi + L->ncarry == L->first && L->first <= L->end && L->end <= D->nvalues);
        assert_true(L->parent < l);
        if (L->parent >= 0)
          assert_true(L->phi >= D->loops[L->parent].first && L->end <= D->loops[L->parent].end);
        check_expr_inv(L->count, where);
        assert_true(type_eq(L->count->type, type_scalar(T_I64)));
        for (int k = 0; k < L->ncarry; k++) {
          assert_int_equal(D->values[L->phi + k].carried, l);
          assert_int_equal(D->values[L->phi + k].loop, L->parent);
          assert_true(L->init[k] < L->phi && L->next[k] >= L->first && L->next[k] < L->end);
          assert_true(type_eq(D->values[L->init[k]].type, D->values[L->phi + k].type));
          assert_true(type_eq(D->values[L->next[k]].type, D->values[L->phi + k].type));
        }
        for (int v = L->first; v < L->end; v++) {
          int in = 0;
          for (int m = D->values[v].loop; m >= 0; m = D->loops[m].parent) in = in || m == l;
          assert_true(in);
        }
      }
      assert_true(D->values[D->result].loop < 0);
      break;
    }
  }
}

static void test_ir_invariants(void **state) {
  (void)state;
  static const char *const files[] = {"binarize.pxl", "copy.pxl",       "transpose.pxl", "blur3.pxl",
                                      "sobel3.pxl",   "erode3.pxl",     "dilate5.pxl",   "gradient73.pxl",
                                      "sum.pxl",      "min.pxl",        "max.pxl",       "hist256.pxl",
                                      "edges.pxl",    "cartoon.pxl",    "reconstruct.pxl", "distance.pxl"};
  for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
    char *src = read_example(files[i]);
    Compiled *c = compile_ok(src);
    check_program_inv(c->p, files[i]);
    compiled_free(c);
    free(src);
  }
  /* and a program that uses every kind of node */
  Compiled *c = compile_ok(
      "kernel f32 every(image u8x3 in, image f32 g : mirror, u8 t) size(in.width / 2, in.height) {\n"
      "  u8x3 v = in(0, 0);\n"
      "  f32x4 w = f32x4(v.r, v.g, v.b, 1);\n"
      "  w.a = -w.a + ~t + !t;\n"
      "  i32 k = x % 3 << 2 >> 1 & 7 | 8 ^ y;\n"
      "  for (int i = 0; i < 3 && k != 0 || i == 1; i++) { k += i; k--; }\n"
      "  if (k >= 2) k *= 2; else if (k <= -2) k /= 2;\n"
      "  return g.at(2 * x, y) + g(-1, 1) + (k > 0 ? w.x : (f32)k) + exp(1) + log(2.0) + pow(w.y, 2)\n"
      "      + sin(1) + cos(1) + atan2(1, 2) + floor(w.z) + ceil(1.5) + round(0.5) + width + height;\n"
      "}\n"
      "reduce f64 c(image f32 in, f64 lo) = combine(max(a, b), lo)(in(0, 0) * 2);\n"
      "reduce i32 am(image i16 in) = argmax(in(0, 0));\n"
      "histogram[10] h(image f32 in) { if (in(0, 0) > 0) bin(in(0, 0) * 10, 0.5); }\n"
      "kernel u8 m(image u8 in) { return in(0, 0); }\n"
      "pipeline p(image u8 in, u8 t) -> image u8 { image u8 a = m(in : wrap); return m(m(a : none)); }\n"
      "pipeline q(image u8 in, u8 t) -> image u8 {\n"
      "  image u8 a = m(in); image u8 b = m(in);\n"
      "  loop (t) { b = m(a); loop (3) until unchanged(a) { image u8 c = m(a); a = m(c); } in = m(b); }\n"
      "  loop (in.width) until unchanged(a, b) { a = m(b); b = m(a); }\n"
      "  return m(in);\n"
      "}\n");
  check_program_inv(c->p, "every");
  compiled_free(c);
}

/* ---- run-time specialisation: windows whose size is a parameter ---- */

static void test_specialise(void **state) {
  (void)state;
  Compiled *c = compile_ok("kernel u8 k(image u8 in, int r, f32 g) { int s = 0;\n"
                           "  for (int dy = -r; dy <= r; dy++) for (int dx = -r; dx <= 2 * r; dx++) s += in(dx, dy);\n"
                           "  return s * g; }\n"
                           "kernel u8 j(image u8 in, int d) { return in(d, 0); }\n"
                           "kernel u8 w(image u8 in, int r) { int s = 0; for (int i = -r; i <= r; i++) s += in(i, 0);"
                           " return s; }\n");
  Decl *D = program_find(c->p, "k");
  assert_int_equal(D->skel, SK_GATHER);
  assert_int_equal(D->spec_mask, 1); /* r, not the float g */
  Lane v[2] = {{.i = 2}, {.f = 0.5}};
  const Decl *S = spec_for(D, v);
  assert_ptr_not_equal(S, D);
  assert_int_equal(S->skel, SK_N2P);
  assert_int_equal(S->access[0].x0, -2);
  assert_int_equal(S->access[0].x1, 4);
  assert_int_equal(S->access[0].y0, -2);
  assert_int_equal(S->access[0].y1, 2);
  assert_non_null(S->sep); /* a plain sum: column and row passes */
  assert_true(S->index >= c->p->ndecls);
  assert_ptr_equal(spec_for(D, v), S); /* made once */
  v[1].f = 3; /* g is not specialised on */
  assert_ptr_equal(spec_for(D, v), S);
  Lane v3[2] = {{.i = 3}, {.f = 0.5}};
  const Decl *S3 = spec_for(D, v3);
  assert_ptr_not_equal(S3, S);
  assert_int_not_equal(S3->index, S->index);
  assert_int_equal(S3->access[0].x1, 6);
  Lane big[2] = {{.i = SPEC_MAX_RADIUS + 1}, {.f = 0}};
  assert_ptr_equal(spec_for(D, big), D); /* too wide: the generic gather */
  assert_ptr_equal(spec_for(D, big), D);
  /* a parameter used as an offset: a 1x1 window at (d, 0) */
  Decl *J = program_find(c->p, "j");
  Lane d[1] = {{.i = -3}};
  const Decl *SJ = spec_for(J, d);
  assert_int_equal(SJ->skel, SK_N2P);
  assert_int_equal(SJ->access[0].x0, -3);
  assert_int_equal(SJ->access[0].x1, -3);
  /* a negative radius: a loop that never runs, whose counter the analysis leaves unbounded,
   * so the generic gather runs (remembered: the second call makes nothing) */
  Decl *W = program_find(c->p, "w");
  Lane neg[1] = {{.i = -5}};
  assert_ptr_equal(spec_for(W, neg), W);
  assert_ptr_equal(spec_for(W, neg), W);
  assert_int_equal(W->nspecs, 1);
  /* a window that needs no parameter is never specialised */
  Compiled *b = compile_ok("kernel u8 k(image u8 in, int r) { return in(1, 0) + r; }\n");
  assert_int_equal(program_find(b->p, "k")->spec_mask, 0);
  compiled_free(b);
  compiled_free(c);
}

/* ---- value ranges: conversions that cannot saturate ---- */

/* Whether the conversion of kernel k's return value (its last statement) is flagged as
 * always in range. */
static bool return_in_range(const char *src) {
  Compiled *c = compile_ok(src);
  Decl *D = program_find(c->p, "k");
  assert_non_null(D);
  Node *s = D->body->body;
  while (s->next) s = s->next;
  assert_int_equal(s->kind, ND_RETURN);
  if (s->a->kind != ND_CAST) fail_msg("the return value is not converted:\n%s", src);
  bool r = (s->a->flags & NF_IN_RANGE) != 0;
  compiled_free(c);
  return r;
}

static void test_value_ranges(void **state) {
  (void)state;
  /* a 3x3 box mean: (0..2295 + 4) / 9 <= 255 */
  const char *box = "kernel u8 k(image u8 in) { int s = 0; for (int dy = -1; dy <= 1; dy++)"
                    " for (int dx = -1; dx <= 1; dx++) s += in(dx, dy); return (s + %d) / 9; }";
  char src[512];
  snprintf(src, sizeof src, box, 4);
  assert_true(return_in_range(src));
  snprintf(src, sizeof src, box, 9); /* (2295 + 9) / 9 = 256: may saturate */
  assert_false(return_in_range(src));
  /* min / max windows: the initial value counts */
  assert_true(return_in_range("kernel u8 k(image u8 in) { int m = 300; for (int dy = -1; dy <= 1; dy++)"
                              " for (int dx = -2; dx <= 2; dx++) m = min(m, in(dx, dy)); return m; }"));
  assert_false(return_in_range("kernel u8 k(image u8 in) { int m = 1000; for (int dy = -1; dy <= 1; dy++)"
                               " for (int dx = -2; dx <= 2; dx++) m = max(m, in(dx, dy)); return m; }"));
  /* pixels, division, masks */
  assert_true(return_in_range("kernel u8 k(image u8 in) { return in(0, 0) / 2 + 100; }"));
  assert_false(return_in_range("kernel u8 k(image u8 in) { return in(0, 0) / 2 + 200; }"));
  assert_true(return_in_range("kernel u8 k(image u8 in) { return (in(0, 0) - 300) & 255; }"));
  assert_true(return_in_range("kernel i16 k(image u16 in) { return in(0, 0) >> 1; }"));
  assert_false(return_in_range("kernel i16 k(image u16 in) { return in(0, 0); }"));
  /* unsigned arithmetic wraps below zero; signed division by a negative constant */
  assert_false(return_in_range("kernel u8 k(image u8 in) { u32 v = in(0, 0); return v - 5; }"));
  assert_true(return_in_range("kernel i16 k(image u8 in) { return in(0, 0) / -3; }"));
  /* a local assigned twice is not bounded */
  assert_false(return_in_range("kernel u8 k(image u8 in) { int v = in(0, 0); v = v * 2; return v; }"));
}

/* ---- out-of-memory injection ---- */

/* Compiles src with allocation n failing, for n = 0..max: never a crash, a leak or a
 * hang; the status is want_ok or PXL_ENOMEM. */
static void oom_sweep(const char *name, const char *src, int want_ok, long max) {
  int ok = 0, oom = 0;
  for (long n = 0; n <= max; n++) {
    Diag d;
    diag_init(&d, name, src);
    Program *p = NULL;
    pxl_test_fail_alloc_after(n);
    int rc = front_compile(name, src, &p, &d);
    if (rc == PXL_OK) {
      const char *e = explain_program(p); /* may be "out of memory\n" */
      assert_non_null(e);
    }
    pxl_test_fail_alloc_after(-1);
    if (rc == want_ok) {
      ok++;
      if (want_ok == PXL_OK) assert_non_null(p);
    } else if (rc == PXL_ENOMEM) {
      oom++;
      assert_null(p);
    } else {
      fail_msg("%s: allocation %ld failing gave status %d", name, n, rc);
    }
    program_free(p);
    diag_free(&d);
  }
  assert_true(oom > 0); /* the first allocations are needed */
  assert_true(ok > 0);  /* and max are enough */
}

static void test_out_of_memory(void **state) {
  (void)state;
  char *src = read_example("edges.pxl");
  oom_sweep("edges.pxl", src, PXL_OK, 200);
  free(src);
  src = read_example("cartoon.pxl");
  oom_sweep("cartoon.pxl", src, PXL_OK, 200);
  free(src);
  /* large enough to need several arena blocks, so that allocations fail in mid-parse */
  size_t cap = 100000, len = 0;
  char *big = malloc(cap);
  len += (size_t)snprintf(big + len, cap - len, "kernel u8 k(image u8 in) {\n  int s = 0;\n");
  for (int i = 0; i < 1500; i++) len += (size_t)snprintf(big + len, cap - len, "  s += in(1, %d);\n", i % 3);
  snprintf(big + len, cap - len, "  return s;\n}\n");
  oom_sweep("big.pxl", big, PXL_OK, 50);
  free(big);
  /* with errors: the diagnostics text needs memory too */
  oom_sweep("bad.pxl",
            "kernel u8 k(image u8 in) { int a = 1 $ 2; return b; }\n"
            "pipeline p(image u8 in) -> image u8 { return q(in); }\n",
            PXL_ESOURCE, 200);
}

int main(int argc, char **argv) {
  if (argc > 1) source_dir = argv[1];
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_lex_tokens),
      cmocka_unit_test(test_lex_values),
      cmocka_unit_test(test_lex_errors),
      cmocka_unit_test(test_arithmetic_conversions),
      cmocka_unit_test(test_float_literals),
      cmocka_unit_test(test_literal_conversions),
      cmocka_unit_test(test_vectors_and_calls),
      cmocka_unit_test(test_histogram_bins),
      cmocka_unit_test(test_ir_invariants),
      cmocka_unit_test(test_value_ranges),
      cmocka_unit_test(test_specialise),
      cmocka_unit_test(test_out_of_memory),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
