/*
 * parse.c - second phase of the front end: tokens -> declarations with names resolved.
 *
 * A recursive-descent parser; functions are named after the grammar rules in
 * docs/LANGUAGE.md. Variables are resolved to Var objects here (block scoping as in C),
 * image parameters to Param objects, and built-in names to their kinds; types of
 * expressions are left for check.c. After a syntax error the parser skips to the next
 * ';' or '}' (or, between declarations, to the next declaration keyword) and goes on,
 * so one run reports several errors; nodes made in error carry NF_ERROR.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "front/front.h"
#include "util/alloc.h"

/* The language's limits on nesting (docs/LANGUAGE.md, Limits). They are set by what
 * every backend's compiler accepts in the code generated from them, with a wide margin:
 * the C, CUDA and OpenCL code nests two braces per statement level and one to three
 * parentheses per expression level, and clang (the CPU backend with PXL_CC=clang, and
 * PoCL's OpenCL compiler) refuses brackets nested deeper than 256, whatever their kind.
 * Deeper input is refused here with a diagnostic, never handed to a backend to fail
 * there; the limits also keep the recursion of this parser and of the later phases,
 * which all recurse over the tree, far from the stack's end.
 *   MAX_NEST: levels of statements: each if, for, else-if and stand-alone { } counts
 *     one; the braced body of an if, else or for is part of it.
 *   MAX_EXPR_DEPTH: depth of one expression: each parenthesis, unary operator, call,
 *     component selection, ?: and each operator of a chain such as a + b + c counts one
 *     (a chain is a left-deep tree).
 *   MAX_CALL_DEPTH: pipeline calls nested in each other. Each is a stage of its own in
 *     generated code, so only the recursion over the tree bounds them. */
#define MAX_NEST 64
#define MAX_EXPR_DEPTH 64
#define MAX_CALL_DEPTH 1000
/* Pipeline loops nested in each other (each level is a loop of the run time's). */
#define MAX_LOOP_NEST 16
/* Arrays (docs/LANGUAGE.md, Arrays and tables): a local array lives in registers or
 * private memory of every thread, so it is small; tables go to constant memory on GPUs,
 * 64 KiB on CUDA, of which the tables of one program may take half. */
#define MAX_ARRAY_LEN 1024
#define MAX_TABLE_LEN 4096
#define MAX_PARAM_ARRAY 4096 /* elements of an array parameter */
#define MAX_TABLE_BYTES 32768

typedef struct Scope Scope;
struct Scope {
  Scope *up;
  const char *name;
  Var *var;
};

typedef struct {
  Program *prog;
  Arena *a;
  Diag *d;
  Token *tok;     /* current token */
  Token *end;     /* the TK_EOF token */
  Decl *decl;     /* declaration being parsed */
  Scope *scope;   /* innermost binding first */
  Scope *globals; /* file-scope tables, all parsed before the declarations */
  Scope *fnames;  /* names of the file's functions (var NULL), found before the declarations */
  int depth;      /* expression depth (MAX_EXPR_DEPTH) */
  int call_depth; /* pipeline calls (MAX_CALL_DEPTH) */
  int nest;       /* statement levels (MAX_NEST) */
  bool body_next; /* the next statement is the body of an if, else or for */
  bool too_deep;  /* "nested too deeply" reported: the rest of the statement is skipped */
  bool in_pipeline;
  int loop;       /* the pipeline loop being parsed (its body), -1: none */
  int loop_depth; /* pipeline loops open (MAX_LOOP_NEST) */
  int loop_cap;   /* room in decl->loops */
  bool in_func;   /* parsing a user function: no coordinates, no images */
  int table_bytes; /* bytes of the program's tables so far (MAX_TABLE_BYTES) */
  const char *tparam; /* parsing an instance of a generic declaration: its type parameter */
  Type targ;          /* and the type it stands for */
} Parser;

/* ---- helpers ---- */

static bool is(Parser *P, const char *s) {
  return (P->tok->kind == TK_PUNCT || P->tok->kind == TK_KEYWORD) && !strcmp(P->tok->text, s);
}

static bool is_ident(Parser *P, const char *s) {
  return P->tok->kind == TK_IDENT && !strcmp(P->tok->text, s);
}

static void advance(Parser *P) {
  if (P->tok < P->end) P->tok++;
}

static bool accept(Parser *P, const char *s) {
  if (!is(P, s)) return false;
  advance(P);
  return true;
}

static const char *tok_desc(Token *t, char buf[64]) {
  if (t->kind == TK_EOF) return "end of file";
  snprintf(buf, 64, "'%.40s'", t->text);
  return buf;
}

static bool expect(Parser *P, const char *s) {
  if (accept(P, s)) return true;
  char b[64];
  diag_error(P->d, P->tok->loc, "expected '%s' before %s", s, tok_desc(P->tok, b));
  return false;
}

static Node *new_node(Parser *P, NodeKind k, Loc loc) {
  Node *n = node_new(P->a, k, TYPE_VOID, loc);
  if (!n) {
    /* out of memory: the arena flags it; return a static placeholder so parsing can
     * unwind without NULL checks everywhere. The result is discarded. */
    static Node oom_node;
    memset(&oom_node, 0, sizeof oom_node);
    oom_node.kind = ND_NUM;
    oom_node.flags = NF_ERROR;
    return &oom_node;
  }
  return n;
}

static Node *error_node(Parser *P, Loc loc) {
  Node *n = new_node(P, ND_NUM, loc);
  n->flags |= NF_ERROR;
  return n;
}

static void *alloc(Parser *P, size_t n) {
  void *p = arena_alloc(P->a, n);
  if (!p) {
    static _Alignas(16) unsigned char sink[4096];
    memset(sink, 0, sizeof sink);
    return n <= sizeof sink ? sink : NULL;
  }
  return p;
}

static const char *ident(Parser *P, const char *what) {
  if (P->tok->kind != TK_IDENT) {
    char b[64];
    diag_error(P->d, P->tok->loc, "expected %s before %s", what, tok_desc(P->tok, b));
    return NULL;
  }
  const char *s = P->tok->text;
  advance(P);
  return s;
}

static bool at_type_tok(Parser *P, const Token *t);

/* A function header: type IDENT "(" (a statement cannot start so). */
static bool at_func_header(Parser *P) {
  return at_type_tok(P, P->tok) && P->tok + 2 <= P->end && P->tok[1].kind == TK_IDENT &&
         P->tok[2].kind == TK_PUNCT && !strcmp(P->tok[2].text, "(");
}

/* 'global' before a type or a type-params clause: a global operator's declaration
 * ('global' names nothing else there). */
static bool at_global(Parser *P) {
  return is_ident(P, "global") && P->tok + 1 <= P->end &&
         (at_type_tok(P, P->tok + 1) || (P->tok[1].kind == TK_PUNCT && !strcmp(P->tok[1].text, "<")));
}

static bool is_decl_keyword(Parser *P) {
  return is(P, "kernel") || is(P, "reduce") || is(P, "histogram") || is(P, "scan") || is(P, "pipeline") ||
         at_global(P) || at_func_header(P);
}

/* Skips the rest of a statement: to just after the next ';' outside braces or the '}'
 * closing a block opened while skipping, or to the next '}' of this level or the next
 * declaration keyword (not consumed). Parentheses are not counted, so that an unclosed
 * '(' does not swallow the statements after it. */
static void sync_stmt(Parser *P) {
  int depth = 0;
  while (P->tok->kind != TK_EOF && !is_decl_keyword(P)) {
    if (is(P, "{")) {
      depth++;
    } else if (is(P, "}")) {
      if (depth == 0) return;
      if (--depth == 0) {
        advance(P);
        return;
      }
    } else if (depth == 0 && is(P, ";")) {
      advance(P);
      return;
    }
    advance(P);
  }
}

static bool is_coord_name(const char *s) {
  return !strcmp(s, "x") || !strcmp(s, "y") || !strcmp(s, "width") || !strcmp(s, "height");
}

static int builtin_lookup(const char *s) {
  static const char *const names[] = {
#define X(e, name, arity) name,
      PXL_BUILTINS(X)
#undef X
  };
  for (int i = 0; i < BI_COUNT; i++)
    if (!strcmp(names[i], s)) return i;
  return -1;
}

static Var *lookup_var(Parser *P, const char *name) {
  for (Scope *s = P->scope; s; s = s->up)
    if (!strcmp(s->name, name)) return s->var;
  for (Scope *s = P->globals; s; s = s->up) /* file-scope tables */
    if (!strcmp(s->name, name)) return s->var;
  return NULL;
}

static Param *lookup_image(Parser *P, const char *name) {
  Decl *D = P->decl;
  for (int i = 0; i < D->nparams; i++)
    if (D->params[i]->is_image && !strcmp(D->params[i]->name, name)) return D->params[i];
  return NULL;
}

/* The type `name` names: a type of the language, or the type parameter of the generic
 * declaration being parsed (the type of this instance). */
static bool named_type(const Parser *P, const char *name, Type *t) {
  if (P->tparam && !strcmp(name, P->tparam)) {
    *t = P->targ;
    return true;
  }
  return type_from_name(name, t);
}

/* Reports a name that a declaration may not take (coordinates, types, built-ins). */
static bool reserved_name(Parser *P, const char *name, Loc loc) {
  Type ty;
  if (is_coord_name(name))
    diag_error(P->d, loc, "'%s' is a built-in coordinate and cannot be declared", name);
  else if (named_type(P, name, &ty))
    diag_error(P->d, loc, "'%s' is a type name and cannot be declared", name);
  else if (builtin_lookup(name) >= 0)
    diag_error(P->d, loc, "'%s' is a built-in function and cannot be declared", name);
  else
    return false;
  return true;
}

/* Adds variable `name` to the innermost scope (no checks). */
static Var *bind_var(Parser *P, const char *name, Type t, Loc loc) {
  Var *v = alloc(P, sizeof *v);
  Scope *s = alloc(P, sizeof *s);
  if (!v || !s || P->a->failed) return NULL; /* never link the shared placeholder */
  v->name = name;
  v->type = t;
  v->slot = P->decl->nslots++;
  v->loc = loc;
  s->name = name;
  s->var = v;
  s->up = P->scope;
  P->scope = s;
  return v;
}

/* Declares a local variable, refusing reserved names and image parameters' names. */
static Var *declare_var(Parser *P, const char *name, Type t, Loc loc) {
  if (!reserved_name(P, name, loc) && lookup_image(P, name))
    diag_error(P->d, loc, "'%s' is already an image parameter", name);
  return bind_var(P, name, t, loc);
}

/* type = scalar-type ("x3" | "x4")? | "int" | "uint" | "float" | "double" */
static bool parse_type(Parser *P, Type *t) {
  if (P->tok->kind != TK_IDENT || !named_type(P, P->tok->text, t)) {
    char b[64];
    diag_error(P->d, P->tok->loc, "expected a type (u8, i16, u16, i32, u32, f32, ...) before %s",
               tok_desc(P->tok, b));
    return false;
  }
  advance(P);
  return true;
}

static bool at_type_tok(Parser *P, const Token *t) {
  Type ty;
  return t->kind == TK_IDENT && named_type(P, t->text, &ty);
}

static bool at_type(Parser *P) { return at_type_tok(P, P->tok); }


static Node *expr(Parser *P);
static Node *assign_expr(Parser *P);

/* ---- arrays and tables ---- */

/* Records a const array in Program.tables and gives it its id. */
static bool add_table(Parser *P, Var *v) {
  Program *p = P->prog;
  if ((p->ntables & (p->ntables - 1)) == 0) { /* 0, 1, 2, 4 ...: grow to the next power of two */
    Var **nt = alloc(P, sizeof(Var *) * (size_t)(p->ntables ? p->ntables * 2 : 1));
    if (!nt) return false;
    if (p->ntables) memcpy(nt, p->tables, sizeof(Var *) * (size_t)p->ntables);
    p->tables = nt;
  }
  v->table = p->ntables;
  p->tables[p->ntables++] = v;
  return true;
}

/* "[" INT? "]": an array's length, or 0 for "[]" (taken from the initialiser); -1 on error. */
static int array_len(Parser *P, int max) {
  Loc loc = P->tok->loc;
  expect(P, "[");
  if (accept(P, "]")) return 0;
  if (P->tok->kind != TK_INT) {
    char b[64];
    diag_error(P->d, P->tok->loc, "expected the number of elements before %s", tok_desc(P->tok, b));
    while (!is(P, "]") && !is(P, ";") && P->tok->kind != TK_EOF) advance(P);
    accept(P, "]");
    return -1;
  }
  uint64_t n = P->tok->ival;
  advance(P);
  expect(P, "]");
  if (n < 1 || n > (uint64_t)max) {
    diag_error(P->d, loc, "an array has 1 to %d elements here, not %llu", max, (unsigned long long)n);
    return -1;
  }
  return (int)n;
}

/* "{" expr ("," expr)* ","? "}": an array's initialiser; returns the count, -1 on error. */
static int array_init(Parser *P, Node ***out, int max) {
  Loc loc = P->tok->loc;
  if (!expect(P, "{")) return -1;
  int n = 0, cap = 0;
  Node **v = NULL;
  while (!is(P, "}") && P->tok->kind != TK_EOF) {
    Node *e = assign_expr(P);
    if (n == max) {
      diag_error(P->d, e->loc, "too many elements (at most %d)", max);
      while (!is(P, "}") && !is(P, ";") && P->tok->kind != TK_EOF) advance(P);
      break;
    }
    if (n == cap) {
      int nc = cap ? cap * 2 : 8;
      Node **nv = alloc(P, sizeof(Node *) * (size_t)nc);
      if (!nv) return -1;
      if (n) memcpy(nv, v, sizeof(Node *) * (size_t)n);
      v = nv;
      cap = nc;
    }
    v[n++] = e;
    if (!accept(P, ",")) break;
  }
  if (!expect(P, "}")) return -1;
  if (n == 0) {
    diag_error(P->d, loc, "an array initialiser needs at least one element");
    return -1;
  }
  *out = v;
  return n;
}

/* A file-scope constant bound in P->globals (read-only, no slot). NULL on out-of-memory. */
static Var *global_var(Parser *P, const char *name, Type t, Loc loc) {
  reserved_name(P, name, loc);
  for (Scope *s = P->globals; s; s = s->up)
    if (!strcmp(s->name, name)) diag_error(P->d, loc, "'%s' is already defined", name);
  Var *v = alloc(P, sizeof *v);
  Scope *s = alloc(P, sizeof *s);
  if (!v || !s || P->a->failed) return NULL;
  v->name = name;
  v->type = t;
  v->loc = loc;
  v->slot = -1;
  v->is_const = true;
  s->name = name;
  s->var = v;
  s->up = P->globals;
  P->globals = s;
  return v;
}

/* After "const": `T name[N?] = { numbers };` (a table) or `T name = e` (at file scope a
 * named number, in a body a read-only variable). File-scope constants are bound in
 * P->globals, local ones in scope. */
static Node *const_decl(Parser *P, bool file_scope) {
  Loc loc = P->tok->loc;
  Type t;
  if (!parse_type(P, &t)) return error_node(P, loc);
  Loc vloc = P->tok->loc;
  const char *name = ident(P, "a constant's name");
  if (!name) return error_node(P, loc);
  if (!is(P, "[")) {
    if (!expect(P, "=")) return error_node(P, loc);
    if (file_scope) { /* a named number: every use is that number (check.c) */
      if (t.lanes != 1) diag_error(P->d, loc, "a file-scope constant has one channel");
      Node *e = assign_expr(P);
      Var *v = global_var(P, name, t, vloc);
      if (!v) return error_node(P, loc);
      v->table = -1;
      v->elems = alloc(P, sizeof(Node *));
      if (!v->elems) return error_node(P, loc);
      v->elems[0] = e;
      return NULL;
    }
    Node *n = new_node(P, ND_DECL, vloc);
    n->a = expr(P);
    n->var = declare_var(P, name, t, vloc);
    if (n->var) n->var->is_const = true;
    return n;
  }
  if (t.lanes != 1) diag_error(P->d, loc, "table elements must have one channel");
  int len = array_len(P, MAX_TABLE_LEN);
  Node **elems = NULL;
  if (!expect(P, "=")) return error_node(P, loc);
  int n = array_init(P, &elems, MAX_TABLE_LEN);
  if (len < 0 || n < 0) return error_node(P, loc);
  if (len && n > len) { /* reported; the table keeps its first len elements */
    diag_error(P->d, elems[len]->loc, "too many elements for %s[%d]", name, len);
    n = len;
  }
  if (!len) len = n;
  P->table_bytes += len * scalar_size(t.s);
  if (P->table_bytes > MAX_TABLE_BYTES) {
    diag_error(P->d, vloc, "the tables of a program take at most %d bytes (constant memory of GPUs)",
               MAX_TABLE_BYTES);
    return error_node(P, loc);
  }
  Var *v;
  if (file_scope) {
    v = global_var(P, name, t, vloc);
    if (!v) return error_node(P, loc);
  } else {
    v = declare_var(P, name, t, vloc);
    if (!v) return error_node(P, loc);
  }
  v->slot = -1;
  v->len = len;
  v->is_const = true;
  v->elems = alloc(P, sizeof(Node *) * (size_t)len);
  if (!v->elems || !add_table(P, v)) return error_node(P, loc);
  memcpy(v->elems, elems, sizeof(Node *) * (size_t)n); /* the rest stay NULL: zeros */
  return NULL; /* a table is no statement */
}

/* ---- expressions ---- */

static NodeKind compound_op(const char *s);

static Node *binary(Parser *P, NodeKind k, Node *a, Node *b, Loc loc) {
  Node *n = new_node(P, k, loc);
  n->a = a;
  n->b = b;
  return n;
}

/* Parses "(" expr ("," expr)* ")" into a fresh array; returns the count (-1 on error). */
static int call_args(Parser *P, Node ***out) {
  Node *tmp[16];
  int n = 0;
  if (!expect(P, "(")) return -1;
  if (!is(P, ")")) {
    do {
      Node *e = assign_expr(P);
      if (n < 16) tmp[n] = e;
      n++;
    } while (accept(P, ","));
  }
  if (!expect(P, ")")) return -1;
  if (n > 16) {
    diag_error(P->d, P->tok[-1].loc, "too many arguments (at most 16)");
    return -1;
  }
  Node **args = alloc(P, sizeof(Node *) * (size_t)(n ? n : 1));
  if (!args) return -1;
  memcpy(args, tmp, sizeof(Node *) * (size_t)n);
  *out = args;
  return n;
}

static int lane_index(const char *s) {
  if (strlen(s) != 1) return -1;
  switch (s[0]) {
  case 'x': case 'r': return 0;
  case 'y': case 'g': return 1;
  case 'z': case 'b': return 2;
  case 'w': case 'a': return 3;
  }
  return -1;
}

/* primary = NUM | "(" expr ")" | IDENT | IDENT "(" args ")" | IDENT "." member ... */
static Node *primary(Parser *P) {
  Token *t = P->tok;
  Loc loc = t->loc;
  if (t->kind == TK_INT) {
    advance(P);
    Node *n = new_node(P, ND_NUM, loc);
    /* C's rule: the first type that holds the value, from i32 i64 u64 for decimal,
     * i32 u32 i64 u64 for hexadecimal, u32 u64 with the suffix u */
    bool hex = t->len > 1 && (t->text[1] == 'x' || t->text[1] == 'X');
    bool u = t->text[t->len - 1] == 'u' || t->text[t->len - 1] == 'U';
    if (t->ival <= INT32_MAX && !u)
      n->type = type_scalar(T_I32);
    else if (t->ival <= UINT32_MAX && (hex || u))
      n->type = type_scalar(T_U32);
    else if (t->ival <= INT64_MAX && !u)
      n->type = type_scalar(T_I64);
    else
      n->type = type_scalar(T_U64);
    n->ival = (int64_t)t->ival;
    return n;
  }
  if (t->kind == TK_FLOAT) {
    advance(P);
    Node *n = new_node(P, ND_NUM, loc);
    n->type = type_scalar(T_F32);
    n->fval = t->fval;
    if (t->text[t->len - 1] == 'f' || t->text[t->len - 1] == 'F')
      n->fval = (float)n->fval; /* 2.5f is an f32, as in C */
    else
      n->flags |= NF_UNTYPED_FLOAT; /* 2.5 adapts to f64 operands */
    return n;
  }
  if (accept(P, "(")) {
    Node *n = expr(P);
    expect(P, ")");
    return n;
  }
  if (t->kind != TK_IDENT) {
    char b[64];
    diag_error(P->d, loc, "expected an expression before %s", tok_desc(t, b));
    return error_node(P, loc);
  }
  const char *name = t->text;
  advance(P);

  if (!strcmp(name, "is_float") && is(P, "(") && !lookup_var(P, name)) {
    /* is_float(TYPE): 1 for f32 and f64, else 0, known where it is parsed (so that an if
     * on it keeps one branch: a generic declaration's code for float or integer types) */
    advance(P);
    Type ty;
    if (!at_type(P)) {
      char b[64];
      diag_error(P->d, P->tok->loc, "is_float takes a type (u8, f32, a type parameter), not %s", tok_desc(P->tok, b));
      return error_node(P, loc);
    }
    parse_type(P, &ty);
    expect(P, ")");
    Node *n = new_node(P, ND_NUM, loc);
    n->type = type_scalar(T_I32);
    n->ival = scalar_is_float(ty.s);
    return n;
  }

  if (P->in_pipeline && is(P, ".")) { /* the size of an image of the pipeline: in.width */
    Param *pimg = lookup_image(P, name);
    advance(P);
    Loc mloc = P->tok->loc;
    const char *m = ident(P, "'width' or 'height'");
    if (!m) return error_node(P, loc);
    if (strcmp(m, "width") && strcmp(m, "height")) {
      diag_error(P->d, mloc, "an image of a pipeline has only 'width' and 'height' here, not '%s'", m);
      return error_node(P, loc);
    }
    if (!pimg) {
      diag_error(P->d, loc, "'%s' is not an image parameter of the pipeline; only their sizes can be used in "
                 "arguments", name);
      return error_node(P, loc);
    }
    Node *r = new_node(P, ND_IMGDIM, loc);
    r->param = pimg;
    r->ival = m[0] == 'h';
    return r;
  }
  Param *img = P->in_pipeline ? NULL : lookup_image(P, name);
  if (img) {
    if (is(P, "(")) { /* relative read */
      Node **args;
      int n = call_args(P, &args);
      if (n < 0) return error_node(P, loc);
      if (n != 2) {
        diag_error(P->d, loc, "image read %s(dx, dy) takes 2 offsets, got %d", name, n);
        return error_node(P, loc);
      }
      Node *r = new_node(P, ND_READ, loc);
      r->param = img;
      r->a = args[0];
      r->b = args[1];
      return r;
    }
    if (accept(P, ".")) {
      Loc mloc = P->tok->loc;
      const char *m = ident(P, "'width', 'height', 'at', 'nearest', 'linear' or 'cubic'");
      if (!m) return error_node(P, loc);
      if (!strcmp(m, "width") || !strcmp(m, "height")) {
        Node *r = new_node(P, ND_IMGDIM, loc);
        r->param = img;
        r->ival = m[0] == 'h';
        return r;
      }
      /* at: an absolute read; nearest, linear, cubic: interpolating reads at fractional
       * coordinates (ND_AT with ival = the mode, made into reads by the checker) */
      static const char *const reads[] = {"at", "nearest", "linear", "cubic"};
      for (int k = 0; k < 4; k++) {
        if (strcmp(m, reads[k])) continue;
        Node **args;
        int n = call_args(P, &args);
        if (n < 0) return error_node(P, loc);
        if (n != 2) {
          diag_error(P->d, mloc, "%s.%s(x, y) takes 2 coordinates, got %d", name, m, n);
          return error_node(P, loc);
        }
        Node *r = new_node(P, ND_AT, loc);
        r->param = img;
        r->a = args[0];
        r->b = args[1];
        r->ival = k;
        return r;
      }
      diag_error(P->d, mloc, "image '%s' has no member '%s' (use width, height, at, nearest, linear or cubic)", name, m);
      if (is(P, "(")) { /* a call of it: its arguments skipped, no second error */
        Node **args;
        call_args(P, &args);
      }
      return error_node(P, loc);
    }
    diag_error(P->d, loc, "image '%s' must be read: %s(dx, dy) or %s.at(x, y)", name, name, name);
    return error_node(P, loc);
  }

  if (is(P, "(")) {
    Type ty;
    if (named_type(P, name, &ty)) { /* conversion or vector constructor: T(args) */
      Node **args;
      int n = call_args(P, &args);
      if (n < 0) return error_node(P, loc);
      Node *r = new_node(P, ND_VEC, loc);
      r->type = ty;
      r->args = args;
      r->nargs = n;
      return r;
    }
    int bi = builtin_lookup(name);
    bool known = false;
    for (Scope *s = P->fnames; s && !known; s = s->up) known = !strcmp(s->name, name);
    if (bi < 0 && !known) { /* skip the arguments, parentheses balanced: their errors would be noise */
      diag_error(P->d, loc, "unknown function '%s'", name);
      int depth = 0;
      while (P->tok->kind != TK_EOF) {
        if (is(P, "(")) depth++;
        if (is(P, ")") && --depth <= 0) {
          advance(P);
          break;
        }
        if (is(P, ";") || is(P, "{") || is(P, "}")) break;
        advance(P);
      }
      return error_node(P, loc);
    }
    if (bi < 0) { /* a user function, resolved by check.c (it may be defined later) */
      Node **args;
      int n = call_args(P, &args);
      if (n < 0) return error_node(P, loc);
      Decl *ph = alloc(P, sizeof *ph); /* placeholder carrying the name */
      if (!ph) return error_node(P, loc);
      ph->name = name;
      ph->kind = D_FUNC;
      ph->loc = loc;
      Node *r = new_node(P, ND_FCALL, loc);
      r->func = ph;
      r->args = args;
      r->nargs = n;
      return r;
    }
    Node **args;
    int n = call_args(P, &args);
    if (n < 0) return error_node(P, loc);
    if (n != builtin_arity((Builtin)bi)) {
      diag_error(P->d, loc, "%s() takes %d argument%s, got %d", name, builtin_arity((Builtin)bi),
                 builtin_arity((Builtin)bi) == 1 ? "" : "s", n);
      return error_node(P, loc);
    }
    Node *r = new_node(P, ND_CALL, loc);
    r->builtin = (Builtin)bi;
    r->args = args;
    r->nargs = n;
    return r;
  }

  Var *v = lookup_var(P, name);
  Node *r;
  if (v && v->len) { /* an array: a[i] */
    if (!is(P, "[")) {
      diag_error(P->d, loc, "array '%s' must be indexed: %s[i]", name, name);
      return error_node(P, loc);
    }
    advance(P);
    r = new_node(P, ND_INDEX, loc);
    r->var = v;
    r->a = expr(P);
    expect(P, "]");
  } else if (v) {
    r = new_node(P, ND_VAR, loc);
    r->var = v;
    if (is(P, "[")) {
      diag_error(P->d, P->tok->loc, "'%s' is not an array", name);
      return error_node(P, loc);
    }
  } else if (is_coord_name(name) && P->in_func) {
    diag_error(P->d, loc, "a function sees only its parameters; pass '%s' as an argument", name);
    return error_node(P, loc);
  } else if (is_coord_name(name) && !P->in_pipeline) {
    r = new_node(P, ND_COORD, loc);
    r->ival = !strcmp(name, "x") ? 0 : !strcmp(name, "y") ? 1 : !strcmp(name, "width") ? 2 : 3;
  } else {
    diag_error(P->d, loc, "undeclared name '%s'", name);
    return error_node(P, loc);
  }
  return r;
}

/* postfix = primary ("." lane)* */
static Node *postfix(Parser *P) {
  Node *n = primary(P);
  int saved = P->depth;
  while (is(P, ".") && !P->too_deep) {
    Loc loc = P->tok->loc;
    if (++P->depth > MAX_EXPR_DEPTH) {
      P->depth = saved;
      diag_error(P->d, loc, "expression nested too deeply (at most %d levels)", MAX_EXPR_DEPTH);
      P->too_deep = true;
      return error_node(P, loc);
    }
    advance(P);
    const char *m = ident(P, "a component name (x y z w or r g b a)");
    if (!m) {
      P->depth = saved;
      return error_node(P, loc);
    }
    int lane = lane_index(m);
    if (lane < 0) {
      P->depth = saved;
      diag_error(P->d, loc, "unknown component '%s' (use x y z w or r g b a)", m);
      return error_node(P, loc);
    }
    Node *l = new_node(P, ND_LANE, loc);
    l->a = n;
    l->ival = lane;
    n = l;
  }
  P->depth = saved;
  if (is(P, "++") || is(P, "--")) { /* a++ inside an expression */
    diag_error(P->d, P->tok->loc, "'%s' is a statement in pxl, not an expression", P->tok->text);
    advance(P);
    return error_node(P, n->loc);
  }
  return n;
}

/* unary = ("-" | "+" | "!" | "~") unary | "(" type ")" unary | postfix */
static Node *unary(Parser *P) {
  Loc loc = P->tok->loc;
  if (P->too_deep) return error_node(P, loc);
  if (++P->depth > MAX_EXPR_DEPTH) {
    P->depth--;
    diag_error(P->d, loc, "expression nested too deeply (at most %d levels)", MAX_EXPR_DEPTH);
    P->too_deep = true;
    return error_node(P, loc);
  }
  Node *r;
  if (accept(P, "-")) {
    r = new_node(P, ND_NEG, loc);
    r->a = unary(P);
  } else if (accept(P, "+")) {
    r = unary(P);
  } else if (accept(P, "!")) {
    r = new_node(P, ND_NOT, loc);
    r->a = unary(P);
  } else if (accept(P, "~")) {
    r = new_node(P, ND_BITNOT, loc);
    r->a = unary(P);
  } else if (is(P, "(") && P->tok[1].kind == TK_IDENT && P->tok + 2 <= P->end && P->tok[2].kind == TK_PUNCT &&
             !strcmp(P->tok[2].text, ")") && at_type_tok(P, &P->tok[1])) {
    advance(P);
    Type t;
    parse_type(P, &t);
    expect(P, ")");
    r = new_node(P, ND_CAST, loc);
    r->type = t;
    r->a = unary(P);
  } else if (is(P, "++") || is(P, "--")) {
    diag_error(P->d, loc, "'%s' is a statement in pxl, not an expression", P->tok->text);
    advance(P);
    r = error_node(P, loc);
  } else {
    r = postfix(P);
  }
  P->depth--;
  return r;
}

typedef struct {
  const char *op;
  NodeKind kind;
  int prec;
} BinOp;

static const BinOp binops[] = {
    {"||", ND_LOGOR, 1}, {"&&", ND_LOGAND, 2}, {"|", ND_BITOR, 3}, {"^", ND_BITXOR, 4},
    {"&", ND_BITAND, 5}, {"==", ND_EQ, 6},     {"!=", ND_NE, 6},   {"<", ND_LT, 7},
    {"<=", ND_LE, 7},    {">", ND_GT, 7},      {">=", ND_GE, 7},   {"<<", ND_SHL, 8},
    {">>", ND_SHR, 8},   {"+", ND_ADD, 9},     {"-", ND_SUB, 9},   {"*", ND_MUL, 10},
    {"/", ND_DIV, 10},   {"%", ND_MOD, 10},
};

static const BinOp *find_binop(Parser *P) {
  if (P->tok->kind != TK_PUNCT) return NULL;
  for (size_t i = 0; i < sizeof binops / sizeof *binops; i++)
    if (!strcmp(binops[i].op, P->tok->text)) return &binops[i];
  return NULL;
}

/* binary expression by precedence climbing (C's precedence table). */
static Node *binexpr(Parser *P, int min_prec) {
  Node *lhs = unary(P);
  int saved = P->depth;
  for (;;) {
    const BinOp *op = find_binop(P);
    if (!op || op->prec < min_prec || P->too_deep) break;
    Loc loc = P->tok->loc;
    if (++P->depth > MAX_EXPR_DEPTH) { /* a + b + c ... is a left-deep tree */
      diag_error(P->d, loc, "expression nested too deeply (at most %d levels)", MAX_EXPR_DEPTH);
      P->too_deep = true;
      lhs = error_node(P, loc);
      break;
    }
    advance(P);
    Node *rhs = binexpr(P, op->prec + 1);
    lhs = binary(P, op->kind, lhs, rhs, loc);
  }
  P->depth = saved;
  return lhs;
}

/* conditional = binexpr ("?" expr ":" conditional)? */
static Node *conditional(Parser *P) {
  Node *c = binexpr(P, 1);
  if (!is(P, "?") || P->too_deep) return c;
  Loc loc = P->tok->loc;
  if (++P->depth > MAX_EXPR_DEPTH) {
    P->depth--;
    diag_error(P->d, loc, "expression nested too deeply (at most %d levels)", MAX_EXPR_DEPTH);
    P->too_deep = true;
    return error_node(P, loc);
  }
  advance(P);
  Node *n = new_node(P, ND_COND, loc);
  n->a = c;
  n->b = expr(P);
  expect(P, ":");
  n->c = conditional(P);
  P->depth--;
  return n;
}

/* An argument: an expression; `a = b` here is reported as what it is. */
static Node *assign_expr(Parser *P) {
  Node *n = conditional(P);
  if (is(P, "=") || (P->tok->kind == TK_PUNCT && compound_op(P->tok->text) != ND_COUNT)) {
    if (!(n->flags & NF_ERROR))
      diag_error(P->d, P->tok->loc, "'%s' is a statement in pxl, not an expression", P->tok->text);
    advance(P);
    conditional(P);
    return error_node(P, n->loc);
  }
  return n;
}

static Node *expr(Parser *P) { return conditional(P); }

/* ---- statements ---- */

static Node *stmt(Parser *P);

static NodeKind compound_op(const char *s) {
  static const struct {
    const char *op;
    NodeKind k;
  } ops[] = {{"+=", ND_ADD},    {"-=", ND_SUB},   {"*=", ND_MUL},    {"/=", ND_DIV},
             {"%=", ND_MOD},    {"&=", ND_BITAND}, {"|=", ND_BITOR}, {"^=", ND_BITXOR},
             {"<<=", ND_SHL},   {">>=", ND_SHR}};
  for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
    if (!strcmp(ops[i].op, s)) return ops[i].k;
  return ND_COUNT;
}

/* simple = declaration | assignment | "x++" | "x--" (no trailing ';') */
static Node *simple_stmt(Parser *P) {
  Loc loc = P->tok->loc;
  if (at_type(P)) { /* declaration: type name ("=" expr)? ("," name ("=" expr)?)* */
    Type t;
    parse_type(P, &t);
    Node *head = NULL, **tail = &head;
    do {
      Loc vloc = P->tok->loc;
      const char *name = ident(P, "a variable name");
      if (!name) return head ? head : error_node(P, loc);
      Node *init = NULL;
      Node *n = new_node(P, ND_DECL, vloc);
      if (is(P, "[")) { /* a local array: T a[N] or T a[N] = { e, ... } */
        int len = array_len(P, MAX_ARRAY_LEN);
        if (accept(P, "=")) n->nargs = array_init(P, &n->args, MAX_ARRAY_LEN);
        if (len < 0 || n->nargs < 0) return error_node(P, loc);
        if (len && n->nargs > len) {
          diag_error(P->d, n->args[len]->loc, "too many elements for %s[%d]", name, len);
          return error_node(P, loc);
        }
        if (!len && !n->nargs) {
          diag_error(P->d, vloc, "array '%s' needs a length or an initialiser", name);
          return error_node(P, loc);
        }
        n->var = declare_var(P, name, t, vloc);
        if (!n->var) return error_node(P, loc);
        n->var->len = len ? len : n->nargs;
        P->decl->nslots += n->var->len - 1; /* one slot per element */
      } else {
        if (accept(P, "=")) init = expr(P); /* the name is in scope only after its initialiser */
        n->var = declare_var(P, name, t, vloc);
      }
      n->a = init;
      *tail = n;
      tail = &n->next;
    } while (accept(P, ","));
    return head;
  }
  if (P->tok->kind != TK_IDENT) {
    char b[64];
    diag_error(P->d, loc, "expected a statement before %s", tok_desc(P->tok, b));
    return error_node(P, loc);
  }
  const char *name = P->tok->text;
  Var *v = lookup_var(P, name);
  if (!v) {
    if (is_coord_name(name))
      diag_error(P->d, loc, "cannot assign to the built-in coordinate '%s'", name);
    else if (!strcmp(name, "while") || !strcmp(name, "do"))
      diag_error(P->d, loc, "pxl has no '%s' loop; use for (init; condition; step)", name);
    else if (!strcmp(name, "break") || !strcmp(name, "continue") || !strcmp(name, "switch") ||
             !strcmp(name, "goto"))
      diag_error(P->d, loc, "pxl has no '%s' statement", name);
    else if (lookup_image(P, name) && P->tok[1].kind == TK_PUNCT &&
             (!strcmp(P->tok[1].text, "=") || compound_op(P->tok[1].text) != ND_COUNT))
      diag_error(P->d, loc, "cannot assign to image '%s' (a kernel writes its output pixel with return)", name);
    else if (lookup_image(P, name) || builtin_lookup(name) >= 0)
      diag_error(P->d, loc, "statement has no effect (only assignments, declarations and control flow are statements)");
    else if (P->tok[1].kind == TK_IDENT) { /* `bool ok = ...`: a declaration with a type pxl lacks */
      char types[128];
      type_names(types, sizeof types);
      diag_error(P->d, loc, "unknown type '%s' (the types: %s, vectors such as u8x3; a condition is an int)", name,
                 types);
    } else
      diag_error(P->d, loc, "undeclared name '%s'", name);
    return error_node(P, loc);
  }
  if (v->param) {
    diag_error(P->d, loc, "cannot assign to parameter '%s' (parameters are read-only)", name);
  } else if (v->is_const) {
    diag_error(P->d, loc, "cannot assign to constant '%s'", name);
  }
  advance(P);
  Node *index = NULL;
  if (v->len) { /* an element: a[i] = e */
    if (!expect(P, "[")) return error_node(P, loc);
    index = expr(P);
    if (!expect(P, "]")) return error_node(P, loc);
  } else if (is(P, "[")) {
    diag_error(P->d, P->tok->loc, "'%s' is not an array", name);
    return error_node(P, loc);
  }
  int lane = -1;
  if (accept(P, ".")) {
    Loc mloc = P->tok->loc;
    const char *m = ident(P, "a component name");
    if (!m) return error_node(P, loc);
    lane = lane_index(m);
    if (lane < 0) {
      diag_error(P->d, mloc, "unknown component '%s' (use x y z w or r g b a)", m);
      return error_node(P, loc);
    }
  }
  Loc oploc = P->tok->loc;
  Node *rhs;
  if (is(P, "++") || is(P, "--")) {
    bool inc = is(P, "++");
    advance(P);
    Node *one = new_node(P, ND_NUM, oploc);
    one->type = type_scalar(T_I32);
    one->ival = 1;
    Node *cur = new_node(P, index ? ND_INDEX : ND_VAR, loc);
    cur->var = v;
    cur->a = index;
    if (lane >= 0) {
      Node *l = new_node(P, ND_LANE, loc);
      l->a = cur;
      l->ival = lane;
      cur = l;
    }
    rhs = binary(P, inc ? ND_ADD : ND_SUB, cur, one, oploc);
  } else if (accept(P, "=")) {
    rhs = expr(P);
  } else if (P->tok->kind == TK_PUNCT && compound_op(P->tok->text) != ND_COUNT) {
    NodeKind k = compound_op(P->tok->text);
    advance(P);
    Node *cur = new_node(P, index ? ND_INDEX : ND_VAR, loc);
    cur->var = v;
    cur->a = index;
    if (lane >= 0) {
      Node *l = new_node(P, ND_LANE, loc);
      l->a = cur;
      l->ival = lane;
      cur = l;
    }
    rhs = binary(P, k, cur, expr(P), oploc);
    rhs->flags |= NF_COMPOUND;
  } else {
    char b[64];
    diag_error(P->d, oploc, "expected an assignment operator before %s", tok_desc(P->tok, b));
    return error_node(P, loc);
  }
  if (index) {
    if (lane >= 0) {
      diag_error(P->d, loc, "assign a whole element of '%s', not one component", name);
      return error_node(P, loc);
    }
    Node *n = new_node(P, ND_ISET, loc);
    n->var = v;
    n->a = index;
    n->b = rhs;
    return n;
  }
  Node *n = new_node(P, lane >= 0 ? ND_LANESET : ND_ASSIGN, loc);
  n->var = v;
  n->a = rhs;
  n->ival = lane;
  return n;
}

static Node *block(Parser *P) {
  Loc loc = P->tok->loc;
  Node *b = new_node(P, ND_BLOCK, loc);
  if (!expect(P, "{")) return b;
  Scope *saved = P->scope;
  Node **tail = &b->body;
  while (!is(P, "}") && P->tok->kind != TK_EOF && !P->a->failed) {
    if (is_decl_keyword(P)) break; /* missing '}' : let the caller report it */
    Node *s = stmt(P);
    if (P->a->failed) break; /* out of memory: s may be the shared placeholder node */
    if (s && s->kind == ND_BLOCK && (s->flags & NF_KEPT_BRANCH)) s = s->body; /* names are resolved: no clash */
    *tail = s;
    while (*tail) tail = &(*tail)->next;
  }
  expect(P, "}");
  P->scope = saved;
  return b;
}

/* At "(": whether a comma follows at the parenthesis' own level before it closes, as in
 * return (a, b); (a tuple, not a parenthesised expression). */
static bool tuple_ahead(Parser *P) {
  int depth = 0;
  for (Token *t = P->tok; t->kind != TK_EOF; t++) {
    if (t->kind != TK_PUNCT) continue;
    if (!strcmp(t->text, "(") || !strcmp(t->text, "[")) depth++;
    else if ((!strcmp(t->text, ")") || !strcmp(t->text, "]")) && --depth == 0) return false;
    else if (depth == 1 && !strcmp(t->text, ",")) return true;
    else if (!strcmp(t->text, ";") || !strcmp(t->text, "{") || !strcmp(t->text, "}")) return false;
  }
  return false;
}

static Node *stmt(Parser *P) {
  Loc loc = P->tok->loc;
  Token *start = P->tok;
  int errs = P->d->nerrors;
  bool body = P->body_next;
  P->body_next = false;
  bool opens = is(P, "if") || is(P, "for") || (is(P, "{") && !body);
  if (opens && ++P->nest > MAX_NEST) {
    P->nest--;
    diag_error(P->d, loc, "statements nested too deeply (at most %d levels of if, for, else if and { })",
               MAX_NEST);
    sync_stmt(P);
    return NULL;
  }
  Node *r = NULL;
  if (is(P, "{")) {
    r = block(P);
  } else if (accept(P, "if")) {
    r = new_node(P, ND_IF, loc);
    expect(P, "(");
    r->a = expr(P);
    expect(P, ")");
    P->body_next = true;
    r->b = stmt(P);
    if (accept(P, "else")) {
      P->body_next = true;
      r->c = stmt(P);
    }
    if (!r->b) r->b = new_node(P, ND_BLOCK, loc);
    if (r->a && r->a->kind == ND_NUM && !(r->a->flags & NF_ERROR) && !scalar_is_float(r->a->type.s)) {
      /* a known condition (is_float(T) in a generic declaration, if (0)): the branch taken
       * stands for the if, so analysis sees only the code that runs */
      r = r->a->ival ? r->b : r->c ? r->c : new_node(P, ND_BLOCK, loc);
      if (r->kind == ND_BLOCK) r->flags |= NF_KEPT_BRANCH;
    }
  } else if (accept(P, "for")) {
    Scope *saved = P->scope;
    r = new_node(P, ND_FOR, loc);
    expect(P, "(");
    if (!is(P, ";")) r->init = simple_stmt(P);
    expect(P, ";");
    if (is(P, ";")) {
      diag_error(P->d, P->tok->loc, "a for loop needs a condition");
      r->a = error_node(P, P->tok->loc);
    } else {
      r->a = expr(P);
    }
    expect(P, ";");
    if (!is(P, ")")) r->step = simple_stmt(P);
    expect(P, ")");
    P->body_next = true;
    r->b = stmt(P);
    if (!r->b) r->b = new_node(P, ND_BLOCK, loc);
    P->scope = saved;
  } else if (accept(P, "return")) {
    r = new_node(P, ND_RETURN, loc);
    if (P->decl->kind == D_HISTOGRAM) {
      diag_error(P->d, loc, "a histogram body does not return a value; use bin(index[, weight])");
    }
    if (is(P, "(") && tuple_ahead(P)) { /* return (a, b): one value per output */
      enum { MAXV = PXL_MAX_TILE > PXL_MAX_OUTS ? PXL_MAX_TILE : PXL_MAX_OUTS }; /* a tiler's tile, or outputs */
      Node *tmp[MAXV + 1];
      int n = 0;
      advance(P);
      do {
        Node *e = expr(P);
        if (n <= MAXV) tmp[n++] = e;
      } while (accept(P, ","));
      expect(P, ")");
      r->args = alloc(P, sizeof(Node *) * (size_t)n);
      if (r->args) memcpy(r->args, tmp, sizeof(Node *) * (size_t)n);
      r->nargs = r->args ? n : 0;
    } else {
      r->a = expr(P);
    }
    expect(P, ";");
  } else if ((is_ident(P, "bin") || is_ident(P, "bin_min") || is_ident(P, "bin_max")) &&
             P->tok[1].kind == TK_PUNCT && !strcmp(P->tok[1].text, "(")) {
    const char *which = P->tok->text;
    int op = !strcmp(which, "bin") ? BIN_SUM : !strcmp(which, "bin_min") ? BIN_MIN : BIN_MAX;
    advance(P);
    if (P->decl->kind != D_HISTOGRAM) diag_error(P->d, loc, "%s() is only allowed in a histogram", which);
    Node **args;
    int n = call_args(P, &args);
    r = new_node(P, ND_BIN, loc);
    r->ival = op;
    if (n == 2 || (n == 1 && op == BIN_SUM)) {
      r->a = args[0];
      r->b = n == 2 ? args[1] : NULL;
    } else if (n >= 0 && op != BIN_SUM) {
      diag_error(P->d, loc, "%s(index, value) takes 2 arguments, got %d", which, n);
      r->a = error_node(P, loc);
    } else if (n >= 0) {
      diag_error(P->d, loc, "bin(index[, weight]) takes 1 or 2 arguments, got %d", n);
      r->a = error_node(P, loc);
    } else {
      r->a = error_node(P, loc);
    }
    expect(P, ";");
  } else if (accept(P, ";")) {
    r = NULL;
  } else if (accept(P, "const")) {
    r = const_decl(P, false);
    if (P->d->nerrors == errs) expect(P, ";");
  } else {
    r = simple_stmt(P);
    /* After an error in the statement, sync_stmt below finds its end. A ';' missing at
     * the end of a line is reported and the next line parsed as the next statement. */
    if (P->d->nerrors == errs && !expect(P, ";") && P->tok->loc.line > P->tok[-1].loc.line)
      errs = P->d->nerrors;
  }
  /* After an error, skip to the end of the statement unless it ended at ';' or '}'; a
   * statement that consumed nothing is always skipped, so the caller's loop advances. */
  if (P->d->nerrors > errs && !is(P, "}") &&
      (P->tok == start ||
       !(P->tok[-1].kind == TK_PUNCT && (!strcmp(P->tok[-1].text, ";") || !strcmp(P->tok[-1].text, "}")))))
    sync_stmt(P);
  P->too_deep = false;
  P->body_next = false;
  if (opens) P->nest--;
  return r;
}

/* ---- declarations ---- */

/* border = IDENT ("(" "-"? NUM ")")? */
static bool parse_border(Parser *P, Border *b) {
  Loc loc = P->tok->loc;
  const char *name = ident(P, "a border mode (clamp, mirror, mirror101, wrap, constant(v), none)");
  if (!name) return false;
  static const char *const names[] = {
#define X(e, n) n,
      PXL_BORDERS(X)
#undef X
  };
  for (int i = 0; i < B_COUNT; i++) {
    if (strcmp(names[i], name)) continue;
    b->kind = (BorderKind)i;
    b->value = 0;
    if (b->kind == B_CONSTANT) {
      if (!expect(P, "(")) return false;
      bool neg = accept(P, "-");
      if (P->tok->kind == TK_INT) {
        b->value = (double)P->tok->ival;
      } else if (P->tok->kind == TK_FLOAT) {
        b->value = P->tok->fval;
      } else {
        char bb[64];
        diag_error(P->d, P->tok->loc, "expected a number in constant(...) before %s", tok_desc(P->tok, bb));
        return false;
      }
      if (neg) b->value = -b->value;
      advance(P);
      if (!expect(P, ")")) return false;
    }
    return true;
  }
  diag_error(P->d, loc, "unknown border mode '%s' (use clamp, mirror, mirror101, wrap, constant(v) or none)", name);
  return false;
}

/* After a parameter's name: "[" INT "]", an array parameter of kernels, reductions and
 * histograms (one channel, 1 to MAX_PARAM_ARRAY elements, read like a table). */
static void array_param(Parser *P, Param *p) {
  Loc loc = P->tok->loc;
  int len = array_len(P, MAX_PARAM_ARRAY);
  if (len == 0) diag_error(P->d, loc, "an array parameter needs its length: %s %s[N]", scalar_name(p->type.s), p->name);
  if (len <= 0) return;
  if (P->in_func)
    diag_error(P->d, loc, "a function takes values, not arrays; read the elements in the kernel and pass them");
  else if (P->in_pipeline)
    diag_error(P->d, loc, "a pipeline takes no array parameters; compute the table in the pipeline (a histogram) or "
               "write it as a const table");
  else
    p->len = len;
}

/* params = "(" (param ("," param)*)? ")"; param = "image" type IDENT (":" border)? | type IDENT ("[" INT "]")? */
static void params(Parser *P) {
  Decl *D = P->decl;
  Param *tmp[32];
  int n = 0;
  bool too_many = false;
  if (!expect(P, "(")) return;
  if (!is(P, ")")) {
    do {
      Loc loc = P->tok->loc;
      Param *p = alloc(P, sizeof *p);
      if (!p || P->a->failed) return; /* out of memory: the program is discarded */
      p->loc = loc;
      p->border.kind = B_CLAMP;
      p->img_index = p->scalar_index = -1;
      if (P->in_func && is(P, "image")) {
        diag_error(P->d, loc, "a function takes values, not images; read the pixels in the kernel and pass them");
        break;
      }
      if (accept(P, "image")) {
        p->is_image = true;
        p->of_tparam = P->tparam && P->tok->kind == TK_IDENT && !strcmp(P->tok->text, P->tparam);
        if (!parse_type(P, &p->type)) break;
        p->name = ident(P, "a parameter name");
        if (!p->name) break;
        reserved_name(P, p->name, P->tok[-1].loc);
        if (accept(P, ":")) {
          if (P->in_pipeline)
            diag_error(P->d, P->tok[-1].loc, "border modes of a pipeline are written where an image is used");
          p->has_border = parse_border(P, &p->border);
        }
      } else {
        if (!parse_type(P, &p->type)) break;
        if (p->type.lanes != 1 && !P->in_func) diag_error(P->d, loc, "scalar parameters must have one channel");
        p->name = ident(P, "a parameter name");
        if (!p->name) break;
        reserved_name(P, p->name, P->tok[-1].loc);
        if (is(P, "[")) array_param(P, p);
        if (accept(P, ":")) {
          diag_error(P->d, P->tok[-1].loc, "only image parameters have border modes");
          Border ignored;
          parse_border(P, &ignored);
        }
      }
      for (int i = 0; i < n; i++)
        if (!strcmp(tmp[i]->name, p->name)) diag_error(P->d, loc, "duplicate parameter '%s'", p->name);
      if (n == 32) { /* report once, parse the rest */
        if (!too_many) diag_error(P->d, loc, "too many parameters (at most 32)");
        too_many = true;
        continue;
      }
      p->index = n;
      tmp[n++] = p;
    } while (accept(P, ","));
  }
  expect(P, ")");
  D->params = alloc(P, sizeof(Param *) * (size_t)(n ? n : 1));
  if (!D->params || P->a->failed) return;
  memcpy(D->params, tmp, sizeof(Param *) * (size_t)n);
  D->nparams = n;
  for (int i = 0; i < n; i++) {
    Param *p = D->params[i];
    if (p->is_image) {
      p->img_index = D->nimages++;
    } else {
      p->scalar_index = D->nscalars++;
      p->var = bind_var(P, p->name, p->type, p->loc); /* names checked above */
      if (p->var) p->var->param = p;
      if (p->var) p->var->len = p->len;
    }
  }
}

static Decl *new_decl(Parser *P, DeclKind k, Loc loc) {
  Decl *D = alloc(P, sizeof *D);
  D->kind = k;
  D->loc = loc;
  P->decl = D;
  P->scope = NULL;
  return D;
}

/* outputs = "(" type IDENT { "," type IDENT } ")": a kernel's several outputs (2 to
 * PXL_MAX_OUTS); names are checked against each other and the parameters by check.c */
static void outputs(Parser *P, Decl *D) {
  Type t[PXL_MAX_OUTS];
  const char *names[PXL_MAX_OUTS];
  Loc locs[PXL_MAX_OUTS];
  int n = 0;
  Loc open = P->tok->loc;
  advance(P); /* ( */
  do {
    Loc l = P->tok->loc;
    Type ty = {0};
    if (!parse_type(P, &ty)) return;
    const char *name = ident(P, "an output name");
    if (!name) return;
    reserved_name(P, name, P->tok[-1].loc);
    if (n == PXL_MAX_OUTS) {
      diag_error(P->d, l, "too many outputs (at most %d)", PXL_MAX_OUTS);
      n++;
    }
    if (n < PXL_MAX_OUTS) {
      t[n] = ty;
      names[n] = name;
      locs[n++] = l;
    }
  } while (accept(P, ","));
  expect(P, ")");
  if (n > PXL_MAX_OUTS) n = PXL_MAX_OUTS;
  if (n == 1) {
    diag_error(P->d, open, "a kernel with one output is written 'kernel %s %s(...)'", scalar_name(t[0].s), names[0]);
    D->type = t[0];
    return;
  }
  D->out_types = alloc(P, sizeof(Type) * (size_t)n);
  D->out_names = alloc(P, sizeof(char *) * (size_t)n);
  D->out_locs = alloc(P, sizeof(Loc) * (size_t)n);
  if (!D->out_types || !D->out_names || !D->out_locs) return;
  memcpy(D->out_types, t, sizeof(Type) * (size_t)n);
  memcpy(D->out_names, names, sizeof(char *) * (size_t)n);
  memcpy(D->out_locs, locs, sizeof(Loc) * (size_t)n);
  D->nouts = n;
  D->type = t[0];
}

/* "(" INT "," INT ")" of a tiler clause, each (an optional minus sign, then digits) in
 * lo..hi; `what` names the clause in messages. */
static void int_pair(Parser *P, const char *what, int lo, int hi, int v[2]) {
  expect(P, "(");
  for (int k = 0; k < 2; k++) {
    if (k) expect(P, ",");
    Loc l = P->tok->loc;
    bool neg = accept(P, "-");
    if (P->tok->kind != TK_INT) {
      char b[64];
      diag_error(P->d, P->tok->loc, "%s() takes two integer numbers; expected a number before %s", what,
                 tok_desc(P->tok, b));
      while (!is(P, ")") && !is(P, "{") && P->tok->kind != TK_EOF) advance(P);
      break;
    }
    int64_t n = P->tok->ival > (uint64_t)INT32_MAX ? INT64_MAX : (int64_t)P->tok->ival;
    if (neg) n = -n;
    advance(P);
    if (n < lo || n > hi) diag_error(P->d, l, "%s(): %lld is not in %d..%d", what, (long long)n, lo, hi);
    else v[k] = (int)n;
  }
  expect(P, ")");
}

/* "(" expr "," expr ")" of size() and repeat(). */
static void expr_pair(Parser *P, Node **w, Node **h) {
  expect(P, "(");
  *w = expr(P);
  expect(P, ",");
  *h = expr(P);
  expect(P, ")");
}

/* The clauses after a kernel's parameters, in any order, each at most once:
 *   clause = "size" "(" expr "," expr ")"
 *          | "tile" "(" INT "," INT ")" | "paving" "(" INT "," INT ")"
 *          | "origin" "(" INT "," INT ")" | "repeat" "(" expr "," expr ")"
 * tile, paving, origin and repeat are names only here (a variable may be called tile). */
static void kernel_clauses(Parser *P, Decl *D) {
  static const char *const names[] = {"size", "tile", "paving", "origin", "repeat"};
  bool seen[5] = {0};
  Loc at[5];
  for (;;) {
    int k = -1;
    for (int i = 0; i < 5 && k < 0; i++)
      if (i ? is_ident(P, names[i]) && P->tok[1].kind == TK_PUNCT && !strcmp(P->tok[1].text, "(") : is(P, names[i]))
        k = i;
    if (k < 0) break;
    Loc l = P->tok->loc;
    advance(P);
    if (seen[k]) diag_error(P->d, l, "%s() is given twice", names[k]);
    seen[k] = true;
    at[k] = l;
    int v[2] = {1, 1};
    switch (k) {
    case 0: expr_pair(P, &D->size_w, &D->size_h); break;
    case 1:
      int_pair(P, "tile", 1, PXL_MAX_TILE_SIDE, v);
      if (v[0] * v[1] > PXL_MAX_TILE) {
        diag_error(P->d, l, "tile(%d, %d) has %d pixels; a tile has at most %d", v[0], v[1], v[0] * v[1], PXL_MAX_TILE);
        v[1] = 1;
      }
      D->tile[0] = v[0], D->tile[1] = v[1];
      break;
    case 2: int_pair(P, "paving", 1, 1024, D->paving); break;
    case 3: int_pair(P, "origin", -1024, 1024, D->origin); break;
    default: expr_pair(P, &D->size_w, &D->size_h); break;
    }
  }
  if (!seen[1]) {
    for (int k = 2; k < 5; k++)
      if (seen[k]) diag_error(P->d, at[k], "%s() belongs to a tiler: give the tile too, tile(width, height)", names[k]);
    D->size_w = seen[0] ? D->size_w : NULL;
    D->size_h = seen[0] ? D->size_h : NULL;
    return;
  }
  if (seen[0])
    diag_error(P->d, at[0], "a tiler's output is its repetitions times its tile: write repeat(width, height) (the "
               "number of tiles), not size()");
  if (D->nouts) diag_error(P->d, at[1], "a tiler has one output image (the tile's pixels are its values)");
  if (!seen[2]) D->paving[0] = D->tile[0], D->paving[1] = D->tile[1];
  if (!seen[4]) D->size_w = D->size_h = NULL; /* the checker makes ceil(image 0 / paving) */
}

/* kernel = "kernel" ( type | outputs ) IDENT params clause* block */
static Decl *kernel_decl(Parser *P, Loc loc) {
  Decl *D = new_decl(P, D_KERNEL, loc);
  if (is(P, "(")) {
    outputs(P, D);
  } else {
    parse_type(P, &D->type);
  }
  D->name = ident(P, "a kernel name");
  params(P);
  kernel_clauses(P, D);
  D->body = block(P);
  return D;
}

/* reduce = "reduce" type IDENT params "=" redop "(" expr ")" ";"
 * redop = sum | min | max | argmin | argmax | combine "(" expr "," expr ")" */
static Decl *reduce_decl(Parser *P, Loc loc) {
  Decl *D = new_decl(P, D_REDUCE, loc);
  parse_type(P, &D->type);
  D->name = ident(P, "a reduction name");
  params(P);
  expect(P, "=");
  Loc oloc = P->tok->loc;
  const char *op = ident(P, "a reduction (sum, min, max, argmin, argmax or combine)");
  if (!op) return D;
  static const char *const names[] = {
#define X(e, n) n,
      PXL_REDOPS(X)
#undef X
  };
  int k = -1;
  for (int i = 0; i < R_COUNT; i++)
    if (!strcmp(names[i], op)) k = i;
  if (k < 0) {
    diag_error(P->d, oloc, "unknown reduction '%s' (use sum, min, max, argmin, argmax or combine)", op);
    return D;
  }
  D->redop = (RedOp)k;
  if (D->redop == R_COMBINE) {
    /* combine(EXPR over a and b, IDENTITY)(VALUE) */
    Scope *saved = P->scope;
    expect(P, "(");
    D->combine_a = declare_var(P, "a", D->type, oloc);
    D->combine_b = declare_var(P, "b", D->type, oloc);
    D->combine = expr(P);
    P->scope = saved;
    expect(P, ",");
    D->identity = expr(P);
    expect(P, ")");
  }
  expect(P, "(");
  D->body = expr(P);
  expect(P, ")");
  expect(P, ";");
  return D;
}

/* scan = "scan" type IDENT params "=" ("sum" | "min" | "max") "(" expr ")" ("along" ("x" | "y"))? ";"
 * A kernel whose body is `return expr;` (the map, converted to the type like any return),
 * marked with the prefix pass that follows it (Decl.scan, redop). */
static Decl *scan_decl(Parser *P, Loc loc) {
  Decl *D = new_decl(P, D_KERNEL, loc);
  D->scan = SCAN_X | SCAN_Y;
  D->redop = R_SUM;
  parse_type(P, &D->type);
  D->name = ident(P, "a scan name");
  params(P);
  expect(P, "=");
  Loc oloc = P->tok->loc;
  const char *op = ident(P, "a scan (sum, min or max)");
  if (!op) return D;
  if (!strcmp(op, "min"))
    D->redop = R_MIN;
  else if (!strcmp(op, "max"))
    D->redop = R_MAX;
  else if (strcmp(op, "sum")) {
    diag_error(P->d, oloc, "unknown scan '%s' (use sum, min or max)", op);
    return D;
  }
  Node *ret = new_node(P, ND_RETURN, P->tok->loc);
  expect(P, "(");
  ret->a = expr(P);
  expect(P, ")");
  if (is_ident(P, "along")) {
    advance(P);
    Loc aloc = P->tok->loc;
    const char *ax = ident(P, "'x' or 'y' after 'along'");
    if (ax && !strcmp(ax, "x"))
      D->scan = SCAN_X;
    else if (ax && !strcmp(ax, "y"))
      D->scan = SCAN_Y;
    else if (ax)
      diag_error(P->d, aloc, "a scan runs along 'x' (rows) or 'y' (columns), not '%s'", ax);
  }
  expect(P, ";");
  D->body = new_node(P, ND_BLOCK, loc);
  D->body->body = ret;
  return D;
}

/* global = "global" type IDENT params "=" OP "(" expr { "," expr } ")" ";"
 * (OP: a row of PXL_GLOBALS, with as many expressions as its maps.) The declaration D
 * holds the name, output type and parameters; map k - a kernel of the same parameters
 * whose body is `return expr_k;` (for map kind GM_FEATURE `return expr_k != 0;` into u8)
 * - is D->gmap[k]. A map's type is its expression's otherwise (void until the checker
 * sets it). 'global' is a word only at the start of a declaration, before a type. */
static Decl *global_decl(Parser *P, Loc loc) {
  Decl *D = new_decl(P, D_KERNEL, loc);
  parse_type(P, &D->type);
  D->name = ident(P, "a global operator's name");
  params(P);
  expect(P, "=");
  Loc oloc = P->tok->loc;
  const char *op = ident(P, "an operator");
  if (!op) return D;
  int k = -1;
  for (int i = 0; i < G_COUNT && k < 0; i++)
    if (!strcmp(global_name((GlobalOp)i), op)) k = i;
  if (k < 0) {
    char list[1024] = ""; /* every name (PXL_GLOBALS: under 600 bytes) */
    for (int i = 0; i < G_COUNT; i++)
      snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? (i == G_COUNT - 1 ? " or " : ", ") : "",
               global_name((GlobalOp)i));
    diag_error(P->d, oloc, "unknown global operator '%s' (use %s)", op, list);
    return D;
  }
  D->global = k + 1;
  int arity = global_arity((GlobalOp)k), n = 0;
  Node *values[PXL_MAX_GMAPS];
  Loc at[PXL_MAX_GMAPS];
  expect(P, "(");
  do {
    Loc l = P->tok->loc;
    Node *v = expr(P);
    if (n < arity) at[n] = l, values[n] = v;
    n++;
  } while (accept(P, ","));
  expect(P, ")");
  expect(P, ";");
  if (n != arity) {
    diag_error(P->d, oloc, "%s takes %d value%s; %d given", op, arity, arity == 1 ? "" : "s", n);
    return D;
  }
  for (int i = 0; i < arity; i++) {
    Decl *M = alloc(P, sizeof *M);
    *M = *D;
    M->global = 0;
    M->type = TYPE_VOID;
    Node *value = values[i];
    if (global_map_kind((GlobalOp)k) == GM_FEATURE) {
      Node *zero = new_node(P, ND_NUM, at[i]);
      zero->type = type_scalar(T_I32);
      Node *ne = new_node(P, ND_NE, at[i]);
      ne->a = value;
      ne->b = zero;
      value = ne;
      M->type = type_scalar(T_U8);
    }
    Node *ret = new_node(P, ND_RETURN, at[i]);
    ret->a = value;
    M->body = new_node(P, ND_BLOCK, loc);
    M->body->body = ret;
    D->gmap[i] = M;
  }
  return D;
}

/* histogram = "histogram" "[" INT "]" IDENT params block */
static Decl *histogram_decl(Parser *P, Loc loc) {
  Decl *D = new_decl(P, D_HISTOGRAM, loc);
  D->type = type_scalar(T_I64);
  expect(P, "[");
  if (P->tok->kind == TK_INT) {
    if (P->tok->ival < 1 || P->tok->ival > (1u << 20))
      diag_error(P->d, P->tok->loc, "a histogram needs 1 to 1048576 bins");
    else
      D->nbins = (int)P->tok->ival;
    advance(P);
  } else {
    diag_error(P->d, P->tok->loc, "expected the number of bins");
    while (!is(P, "]") && !is(P, "(") && !is(P, "{") && P->tok->kind != TK_EOF) advance(P);
  }
  expect(P, "]");
  D->name = ident(P, "a histogram name");
  params(P);
  D->body = block(P);
  return D;
}

/* function = type IDENT "(" (type IDENT ("," type IDENT)*)? ")" block
 * Its parameters are local variables initialised from the arguments. */
static Decl *func_decl(Parser *P, Loc loc) {
  Decl *D = new_decl(P, D_FUNC, loc);
  parse_type(P, &D->type);
  Loc nloc = P->tok->loc;
  D->name = ident(P, "a function name");
  if (D->name) reserved_name(P, D->name, nloc);
  P->in_func = true;
  params(P);
  for (int i = 0; i < D->nparams; i++)
    if (D->params[i]->var) D->params[i]->var->param = NULL; /* a copy the body may change */
  D->body = block(P);
  P->in_func = false;
  return D;
}

/* ---- pipelines ---- */

static int add_value(Parser *P, PipeValue v, Decl *D, int *cap) {
  v.loop = P->loop;
  v.carried = -1;
  if (D->nvalues == *cap) {
    int nc = *cap ? *cap * 2 : 16;
    PipeValue *nv = alloc(P, sizeof(PipeValue) * (size_t)nc);
    if (!nv) return -1;
    if (D->nvalues) memcpy(nv, D->values, sizeof(PipeValue) * (size_t)D->nvalues);
    D->values = nv;
    *cap = nc;
  }
  D->values[D->nvalues] = v;
  return D->nvalues++;
}

/* The value a name stands for here: the latest definition or assignment, skipping the
 * bodies of loops already closed (while a loop is parsed its end is -1). */
static int find_value(Decl *D, const char *name) {
  for (int i = D->nvalues - 1; i >= 0; i--) {
    int l = D->values[i].loop;
    if (l >= 0 && D->loops[l].end >= 0) continue;
    if (D->values[i].name && !strcmp(D->values[i].name, name)) return i;
  }
  return -1;
}

static int pcall(Parser *P, int *cap);

/* Reports `name`, which names no value here: undeclared, or computed in the body of a
 * loop that has ended (its images and values are the body's own). */
static void undeclared(Parser *P, Loc loc, const char *name) {
  Decl *D = P->decl;
  for (int i = D->nvalues - 1; i >= 0; i--) {
    int l = D->values[i].loop;
    if (l >= 0 && D->values[i].name && !strcmp(D->values[i].name, name)) {
      if (D->values[i].kind == PV_IMAGE)
        diag_error(P->d, loc, "'%s' is computed in the body of the loop of line %d, and not known after it; to "
                   "keep an image, define it before the loop and assign it in the body", name, D->loops[l].loc.line);
      else
        diag_error(P->d, loc, "'%s' is computed in the body of the loop of line %d, and known only there (a "
                   "reduction's value or an array is computed again in every iteration)", name, D->loops[l].loc.line);
      return;
    }
  }
  diag_error(P->d, loc, "undeclared image '%s'", name);
}

/* parg = pcall (":" border)? | IDENT (":" border)? | expr */
static PipeArg parg(Parser *P, int *cap) {
  PipeArg a = {.source = -1, .loc = P->tok->loc};
  Decl *D = P->decl;
  Type t;
  bool size = P->tok[1].kind == TK_PUNCT && !strcmp(P->tok[1].text, "."); /* in.width: a scalar */
  Var *arr = P->tok->kind == TK_IDENT ? lookup_var(P, P->tok->text) : NULL;
  if (arr && arr->pval && arr->len && P->tok[1].kind == TK_PUNCT &&
      (!strcmp(P->tok[1].text, ",") || !strcmp(P->tok[1].text, ")"))) { /* a histogram's bins */
    a.source = arr->pval - 1;
    advance(P);
    return a;
  }
  if (P->tok->kind == TK_IDENT && !lookup_var(P, P->tok->text) && builtin_lookup(P->tok->text) < 0 &&
      !named_type(P, P->tok->text, &t) && !size) { /* an image: a call or a name */
    bool call = P->tok[1].kind == TK_PUNCT && !strcmp(P->tok[1].text, "(");
    if (call) {
      a.source = pcall(P, cap);
    } else {
      a.source = find_value(D, P->tok->text);
      if (a.source < 0) undeclared(P, P->tok->loc, P->tok->text);
      advance(P);
    }
    if (accept(P, ":")) a.has_border = parse_border(P, &a.border);
    if (a.source < 0) a.source = -2; /* error: keep it an image argument */
    return a;
  }
  a.expr = expr(P);
  return a;
}

/* pcall = IDENT "(" (parg ("," parg)*)? ")"; the callee is resolved by check.c */
static int pcall(Parser *P, int *cap) {
  PipeValue v = {.loc = P->tok->loc};
  const char *callee = P->tok->text;
  advance(P);
  if (++P->call_depth > MAX_CALL_DEPTH) { /* skip the call, parentheses balanced */
    P->call_depth--;
    diag_error(P->d, v.loc, "calls nested too deeply");
    int depth = 0;
    while (P->tok->kind != TK_EOF) {
      if (is(P, "(")) depth++;
      if (is(P, ")") && --depth <= 0) {
        advance(P);
        break;
      }
      advance(P);
    }
    return -1;
  }
  PipeArg tmp[32];
  int n = 0;
  expect(P, "(");
  if (!is(P, ")")) {
    do {
      PipeArg a = parg(P, cap);
      if (n == 32) diag_error(P->d, a.loc, "too many arguments (at most 32)");
      if (n < 32) tmp[n] = a;
      n++;
    } while (accept(P, ","));
  }
  if (n > 32) n = 32;
  expect(P, ")");
  P->call_depth--;
  v.args = alloc(P, sizeof(PipeArg) * (size_t)(n ? n : 1));
  if (!v.args) return -1;
  memcpy(v.args, tmp, sizeof(PipeArg) * (size_t)n);
  v.nargs = n;
  /* callee name kept in `name` until check.c resolves it; then name becomes NULL */
  v.callee = NULL;
  v.param = NULL;
  Decl *fake = alloc(P, sizeof *fake); /* placeholder carrying the callee's name */
  if (!fake) return -1;
  fake->name = callee;
  fake->kind = D_PIPELINE;
  fake->loc = v.loc;
  v.callee = fake;
  return add_value(P, v, P->decl, cap);
}

/* pvalue = type IDENT [ "[" INT "]" ] "=" pcall ";": a reduction's result or a histogram's
 * bins as a value of the pipeline, named by a variable that scalar arguments read (a
 * scalar) or that is passed to an array parameter (the bins). */
static void pvalue_stmt(Parser *P, int *cap) {
  Decl *D = P->decl;
  Loc loc = P->tok->loc;
  Type t;
  parse_type(P, &t);
  const char *name = ident(P, "a value name");
  if (!name) return;
  Loc nloc = P->tok[-1].loc;
  reserved_name(P, name, nloc);
  int len = 0;
  if (is(P, "[")) {
    len = array_len(P, 1 << 20);
    if (len == 0) diag_error(P->d, nloc, "a histogram's bins need their number: %s %s[N]", scalar_name(t.s), name);
    if (len <= 0) return;
  }
  char tb[16];
  if (t.lanes != 1) diag_error(P->d, loc, "a pipeline value has one channel, not %s", type_str(t, tb));
  expect(P, "=");
  if (!(P->tok->kind == TK_IDENT && P->tok[1].kind == TK_PUNCT && !strcmp(P->tok[1].text, "("))) {
    diag_error(P->d, P->tok->loc, "expected a call of a %s", len ? "histogram" : "reduction");
    return;
  }
  if (find_value(D, name) >= 0 || lookup_var(P, name)) diag_error(P->d, nloc, "'%s' is already defined", name);
  int v = pcall(P, cap);
  if (v < 0) return;
  PipeValue *pv = &D->values[v];
  pv->kind = len ? PV_ARRAY : PV_SCALAR;
  pv->name = name;
  pv->type = t;
  pv->len = len;
  pv->loc = loc;
  pv->var = bind_var(P, name, t, nloc);
  if (pv->var) {
    pv->var->pval = v + 1;
    pv->var->len = len;
  }
  expect(P, ";");
}

/* The names a loop body assigns (`name = ...` at the start of a statement, nested loops
 * included), P->tok at its '{': the images the loop carries are found before the body is
 * parsed, so that a read before the assignment already means the carried image. */
static int assigned_names(Parser *P, const char **names, int max) {
  int n = 0, depth = 0;
  for (Token *t = P->tok; t->kind != TK_EOF; t++) {
    if (t->kind == TK_PUNCT && !strcmp(t->text, "{")) depth++;
    if (t->kind == TK_PUNCT && !strcmp(t->text, "}") && --depth == 0) break;
    if (t->kind != TK_IDENT || t[1].kind != TK_PUNCT || strcmp(t[1].text, "=")) continue;
    if (t[-1].kind != TK_PUNCT || (strcmp(t[-1].text, ";") && strcmp(t[-1].text, "{") && strcmp(t[-1].text, "}")))
      continue;
    bool seen = false;
    for (int i = 0; i < n; i++) seen = seen || !strcmp(names[i], t->text);
    if (!seen && n < max) names[n++] = t->text;
  }
  return n;
}

static void pstmt(Parser *P, int *cap);

/* tuple = "(" "image" type IDENT { "," "image" type IDENT } ")" "=" pcall ";": the images
 * of a kernel with several outputs, one value each; value k computes output k (check.c
 * matches them against the kernel's outputs). The values share the call's arguments. */
static void tuple_stmt(Parser *P, int *cap) {
  Decl *D = P->decl;
  Type t[PXL_MAX_OUTS];
  const char *names[PXL_MAX_OUTS];
  Loc locs[PXL_MAX_OUTS];
  int n = 0;
  bool ok = true;
  advance(P); /* ( */
  do {
    Loc l = P->tok->loc;
    Type ty = {0};
    if (!expect(P, "image") || !parse_type(P, &ty)) return;
    const char *name = ident(P, "an image name");
    if (!name) return;
    if (find_value(D, name) >= 0) diag_error(P->d, l, "image '%s' is already defined", name);
    for (int i = 0; i < n && i < PXL_MAX_OUTS; i++)
      if (!strcmp(names[i], name)) diag_error(P->d, l, "image '%s' is named twice", name);
    if (n == PXL_MAX_OUTS) {
      diag_error(P->d, l, "too many images (a kernel has at most %d outputs)", PXL_MAX_OUTS);
      ok = false;
      n++;
    }
    if (n < PXL_MAX_OUTS) {
      t[n] = ty;
      names[n] = name;
      locs[n++] = l;
    }
  } while (accept(P, ","));
  expect(P, ")");
  expect(P, "=");
  if (!(P->tok->kind == TK_IDENT && P->tok[1].kind == TK_PUNCT && !strcmp(P->tok[1].text, "("))) {
    diag_error(P->d, P->tok->loc, "expected a call of a kernel with several outputs");
    return;
  }
  int v = pcall(P, cap);
  expect(P, ";");
  if (v < 0 || !ok) return;
  if (n > PXL_MAX_OUTS) n = PXL_MAX_OUTS;
  PipeValue first = D->values[v];
  for (int k = 0; k < n; k++) {
    int i = k ? add_value(P, first, D, cap) : v;
    if (i < 0) return;
    D->values[i].name = names[k];
    D->values[i].type = t[k];
    D->values[i].loc = locs[k];
    D->values[i].nouts = n;
    D->values[i].out = k;
  }
}

/* loop = "loop" "(" expr ")" [ "until" "unchanged" "(" IDENT { "," IDENT } ")" ]
 *        "{" { pstmt } "}" */
static void pipe_loop(Parser *P, int *cap) {
  Decl *D = P->decl;
  Loc loc = P->tok->loc;
  int errs = P->d->nerrors;
  advance(P);
  if (P->loop_depth >= MAX_LOOP_NEST)
    diag_error(P->d, loc, "loops nested too deeply (at most %d levels)", MAX_LOOP_NEST);
  expect(P, "(");
  Node *count = expr(P);
  expect(P, ")");
  const char *until[32];
  Loc uloc[32];
  int nuntil = 0;
  bool has_until = false;
  if (is_ident(P, "until")) {
    advance(P);
    has_until = true;
    if (!is_ident(P, "unchanged")) {
      diag_error(P->d, P->tok->loc, "expected 'unchanged(...)' after 'until'");
      if (P->tok->kind != TK_IDENT) return;
    }
    advance(P);
    expect(P, "(");
    do {
      Loc l = P->tok->loc;
      const char *name = ident(P, "an image name");
      if (name && nuntil < 32) {
        uloc[nuntil] = l;
        until[nuntil++] = name;
      }
    } while (accept(P, ","));
    expect(P, ")");
  }
  if (!is(P, "{")) {
    expect(P, "{");
    return;
  }
  if (D->nloops == P->loop_cap) {
    int nc = P->loop_cap ? P->loop_cap * 2 : 4;
    PipeLoop *nl = alloc(P, sizeof(PipeLoop) * (size_t)nc);
    if (!nl) return;
    if (D->nloops) memcpy(nl, D->loops, sizeof(PipeLoop) * (size_t)D->nloops);
    D->loops = nl;
    P->loop_cap = nc;
  }
  int li = D->nloops++;
  const char *names[64];
  int nnames = assigned_names(P, names, 64);
  PipeLoop L = {.count = count, .parent = P->loop, .end = -1, .loc = loc, .has_until = has_until};
  L.init = alloc(P, sizeof(int) * (size_t)(nnames + 1));
  L.next = alloc(P, sizeof(int) * (size_t)(nnames + 1));
  L.until = alloc(P, sizeof(bool) * (size_t)(nnames + 1));
  if (!L.init || !L.next || !L.until) return;
  D->loops[li] = L;
  int phi = D->nvalues, nc = 0;
  for (int i = 0; i < nnames; i++) { /* the carried images: defined before the loop */
    int s = find_value(D, names[i]);
    if (s < 0 || D->values[s].kind != PV_IMAGE) continue; /* values are not carried (pstmt says so) */
    PipeValue v = {.name = names[i], .type = D->values[s].type, .loc = D->values[s].loc};
    int k = add_value(P, v, D, cap);
    if (k < 0) return;
    D->values[k].carried = li;
    D->loops[li].init[nc] = s;
    D->loops[li].until[nc++] = false;
  }
  D->loops[li].phi = phi;
  D->loops[li].ncarry = nc;
  D->loops[li].first = D->nvalues;
  for (int i = 0; i < nuntil; i++) {
    int s = find_value(D, until[i]);
    if (s >= phi && s < phi + nc)
      D->loops[li].until[s - phi] = true;
    else if (s < 0)
      undeclared(P, uloc[i], until[i]);
    else
      diag_error(P->d, uloc[i], "'%s' is not assigned in this loop; until unchanged(...) names images the loop "
                 "assigns", until[i]);
  }
  int outer = P->loop;
  Scope *scope = P->scope; /* the values the body computes are its own, like its images */
  P->loop = li;
  P->loop_depth++;
  advance(P); /* { */
  while (!is(P, "}") && P->tok->kind != TK_EOF && !is_decl_keyword(P) && !P->a->failed) pstmt(P, cap);
  expect(P, "}");
  for (int k = 0; k < nc; k++) { /* each carried image's value at the end of the body */
    int s = find_value(D, D->values[phi + k].name);
    D->loops[li].next[k] = s >= D->loops[li].first ? s : phi + k;
  }
  D->loops[li].end = D->nvalues;
  P->scope = scope;
  P->loop = outer;
  P->loop_depth--;
  if (nc == 0 && P->d->nerrors == errs)
    diag_error(P->d, loc, "the loop assigns no image defined before it, so nothing it computes is kept; "
               "assign one (name = kernel(...);)");
}

/* pstmt = "image" type IDENT "=" pcall ";" | tuple | IDENT "=" pcall ";" | loop
 *       | "return" (pcall | IDENT) ";" */
static void pstmt(Parser *P, int *cap) {
  Decl *D = P->decl;
  int errs = P->d->nerrors;
  Token *start = P->tok;
  Loc sloc = P->tok->loc;
  if (is_ident(P, "loop") && P->tok[1].kind == TK_PUNCT && !strcmp(P->tok[1].text, "(")) {
    pipe_loop(P, cap);
    P->too_deep = false;
    return;
  }
  if (is(P, "(") && P->tok[1].kind == TK_KEYWORD && !strcmp(P->tok[1].text, "image")) {
    tuple_stmt(P, cap);
  } else if (accept(P, "image")) {
    Type t;
    parse_type(P, &t);
    const char *name = ident(P, "an image name");
    expect(P, "=");
    if (P->tok->kind == TK_IDENT && P->tok[1].kind == TK_PUNCT && !strcmp(P->tok[1].text, "(")) {
      int v = pcall(P, cap);
      if (v >= 0 && name) {
        if (find_value(D, name) >= 0) diag_error(P->d, sloc, "image '%s' is already defined", name);
        D->values[v].name = name;
        D->values[v].type = t;
        D->values[v].loc = sloc;
      }
    } else {
      diag_error(P->d, P->tok->loc, "expected a kernel call");
    }
    expect(P, ";");
  } else if (P->tok->kind == TK_IDENT && named_type(P, P->tok->text, &(Type){0})) {
    pvalue_stmt(P, cap);
  } else if (P->tok->kind == TK_IDENT && P->tok[1].kind == TK_PUNCT && !strcmp(P->tok[1].text, "=")) {
    const char *name = P->tok->text;
    int prev = find_value(D, name);
    if (prev < 0)
      undeclared(P, sloc, name);
    else if (D->values[prev].kind != PV_IMAGE)
      diag_error(P->d, sloc, "'%s' is a %s, which cannot be assigned; compute it inside the loop instead (it is "
                 "then computed again in every iteration)", name,
                 D->values[prev].kind == PV_SCALAR ? "reduction's value" : "pipeline array (bins or a table)");
    else if (P->loop < 0)
      diag_error(P->d, sloc, "image '%s' is assigned outside a loop; a new image needs a new name "
                 "(image T name = ...;)", name);
    advance(P);
    advance(P);
    if (P->tok->kind == TK_IDENT && P->tok[1].kind == TK_PUNCT && !strcmp(P->tok[1].text, "(")) {
      int v = pcall(P, cap);
      if (v >= 0 && prev >= 0 && P->loop >= 0) {
        D->values[v].name = name;
        D->values[v].type = D->values[prev].type;
        D->values[v].loc = sloc;
      }
    } else {
      diag_error(P->d, P->tok->loc, "expected a kernel call");
    }
    expect(P, ";");
  } else if (accept(P, "return")) {
    if (P->loop >= 0) diag_error(P->d, sloc, "return inside a loop; return the image after the loop");
    if (is(P, "(")) { /* return (a, b, ...): a pipeline with several images */
      int tmp[PXL_MAX_OUTS + 1], n = 0;
      advance(P);
      do {
        int r = -1;
        if (P->tok->kind == TK_IDENT && P->tok[1].kind == TK_PUNCT && !strcmp(P->tok[1].text, "(")) {
          r = pcall(P, cap);
        } else if (P->tok->kind == TK_IDENT) {
          r = find_value(D, P->tok->text);
          if (r < 0) undeclared(P, P->tok->loc, P->tok->text);
          advance(P);
        } else {
          diag_error(P->d, P->tok->loc, "expected a kernel call or an image name");
          break;
        }
        if (n <= PXL_MAX_OUTS) tmp[n++] = r;
      } while (accept(P, ","));
      expect(P, ")");
      D->results = alloc(P, sizeof(int) * (size_t)(n ? n : 1));
      if (D->results && n) {
        memcpy(D->results, tmp, sizeof(int) * (size_t)n);
        D->result = tmp[0];
        D->nresults = n;
      }
    } else if (P->tok->kind == TK_IDENT && P->tok[1].kind == TK_PUNCT && !strcmp(P->tok[1].text, "(")) {
      D->result = pcall(P, cap);
    } else if (P->tok->kind == TK_IDENT) {
      D->result = find_value(D, P->tok->text);
      if (D->result < 0) undeclared(P, P->tok->loc, P->tok->text);
      advance(P);
    } else {
      diag_error(P->d, P->tok->loc, "expected a kernel call or an image name after return");
    }
    expect(P, ";");
  } else {
    char b[64];
    diag_error(P->d, sloc, "expected 'image T name = kernel(...);', 'name = kernel(...);', 'loop (...) { ... }' "
               "or 'return ...;' before %s", tok_desc(P->tok, b));
  }
  if (P->d->nerrors > errs && (P->tok == start || !(P->tok[-1].kind == TK_PUNCT && !strcmp(P->tok[-1].text, ";"))))
    sync_stmt(P); /* unless the statement ended at its ';' */
  P->too_deep = false;
}

/* pipeline = "pipeline" IDENT params "->" "image" type "{" pstmt* "}" */
static Decl *pipeline_decl(Parser *P, Loc loc) {
  Decl *D = new_decl(P, D_PIPELINE, loc);
  P->in_pipeline = true;
  P->loop = -1;
  P->loop_depth = 0;
  P->loop_cap = 0;
  D->name = ident(P, "a pipeline name");
  params(P);
  int cap = 0;
  for (int i = 0; i < D->nparams; i++) {
    if (!D->params[i]->is_image) continue;
    PipeValue v = {.name = D->params[i]->name, .param = D->params[i], .type = D->params[i]->type,
                   .loc = D->params[i]->loc};
    add_value(P, v, D, &cap);
  }
  expect(P, "->");
  if (is(P, "(")) { /* -> (image T1, image T2, ...): several images */
    Type t[PXL_MAX_OUTS];
    int n = 0;
    Loc open = P->tok->loc;
    advance(P);
    do {
      Type ty = {0};
      if (!expect(P, "image") || !parse_type(P, &ty)) break;
      if (n == PXL_MAX_OUTS) diag_error(P->d, P->tok[-1].loc, "too many images (at most %d)", PXL_MAX_OUTS);
      if (n < PXL_MAX_OUTS) t[n] = ty;
      n++;
    } while (accept(P, ","));
    expect(P, ")");
    if (n > PXL_MAX_OUTS) n = PXL_MAX_OUTS;
    if (n == 1) diag_error(P->d, open, "a pipeline returning one image is written '-> image %s'", scalar_name(t[0].s));
    D->type = n ? t[0] : (Type){0};
    if (n > 1) {
      D->out_types = alloc(P, sizeof(Type) * (size_t)n);
      if (D->out_types) memcpy(D->out_types, t, sizeof(Type) * (size_t)n);
      D->nouts = D->out_types ? n : 0;
    }
  } else {
    expect(P, "image");
    parse_type(P, &D->type);
  }
  D->result = -1;
  if (!expect(P, "{")) {
    P->in_pipeline = false;
    return D;
  }
  while (!is(P, "}") && P->tok->kind != TK_EOF && !is_decl_keyword(P) && !P->a->failed) pstmt(P, &cap);
  expect(P, "}");
  if (D->result < 0 && P->d->nerrors == 0) diag_error(P->d, loc, "pipeline '%s' has no return", D->name ? D->name : "?");
  P->in_pipeline = false;
  return D;
}

static void add_func(Parser *P, Decl *D) {
  Program *p = P->prog;
  if ((p->nfuncs & (p->nfuncs - 1)) == 0) { /* grow at powers of two */
    Decl **nf = alloc(P, sizeof(Decl *) * (size_t)(p->nfuncs ? p->nfuncs * 2 : 1));
    if (!nf) return;
    if (p->nfuncs) memcpy(nf, p->funcs, sizeof(Decl *) * (size_t)p->nfuncs);
    p->funcs = nf;
  }
  p->funcs[p->nfuncs++] = D;
}

/* Skips a file-scope const declaration (parsed by the first pass): to its ';'. */
static void skip_const(Parser *P) {
  int depth = 0;
  while (P->tok->kind != TK_EOF) {
    if (is(P, "{")) depth++;
    if (is(P, "}")) depth--;
    if (depth <= 0 && is(P, ";")) {
      advance(P);
      return;
    }
    if (depth <= 0 && (is(P, "kernel") || is(P, "reduce") || is(P, "histogram") || is(P, "scan") ||
                       is(P, "pipeline") || at_global(P)))
      return;
    advance(P);
  }
}

/* First pass: the file-scope tables, so that declarations may use those defined after them. */
static void parse_tables(Parser *P) {
  Token *start = P->tok;
  int depth = 0;
  Decl none = {.kind = D_KERNEL};
  P->decl = &none;
  while (P->tok->kind != TK_EOF && !P->a->failed && P->d->nerrors <= DIAG_MAX_ERRORS) {
    if (is(P, "{")) depth++;
    if (is(P, "}") && depth > 0) depth--;
    if (depth == 0 && at_func_header(P)) {
      Scope *s = alloc(P, sizeof *s);
      if (!s) break;
      s->name = P->tok[1].text;
      s->up = P->fnames;
      P->fnames = s;
    }
    if (depth == 0 && accept(P, "const")) {
      int errs = P->d->nerrors;
      P->scope = NULL;
      const_decl(P, true);
      if (P->d->nerrors == errs) expect(P, ";");
      if (P->d->nerrors > errs) skip_const(P);
      continue;
    }
    advance(P);
  }
  P->tok = start;
  P->decl = NULL;
}

static void add_decl(Parser *P, Decl *D, int *cap) {
  Program *p = P->prog;
  if (p->ndecls == *cap) {
    int nc = *cap ? *cap * 2 : 16;
    Decl **nd = alloc(P, sizeof(Decl *) * (size_t)nc);
    if (!nd) return;
    if (p->ndecls) memcpy(nd, p->decls, sizeof(Decl *) * (size_t)p->ndecls);
    p->decls = nd;
    *cap = nc;
  }
  p->decls[p->ndecls++] = D;
}

typedef Decl *(*DeclParser)(Parser *P, Loc loc);

#define MAX_INSTANCES 8

/* type-params = "<" IDENT ":" type ("|" type)* ">": the type parameter of a generic
 * declaration and the types it stands for (at most MAX_INSTANCES, each once). Returns the
 * number of types, 0 after an error. */
static int type_params(Parser *P, const char **name, Type *types) {
  advance(P); /* < */
  Loc nloc = P->tok->loc;
  *name = ident(P, "a type parameter's name");
  if (!*name) return 0;
  Type ty;
  if (reserved_name(P, *name, nloc)) return 0;
  if (!expect(P, ":")) return 0;
  int n = 0;
  do {
    Loc tloc = P->tok->loc;
    if (P->tok->kind != TK_IDENT || !type_from_name(P->tok->text, &ty)) {
      char b[64];
      diag_error(P->d, tloc, "expected a type (u8, u16, f32, ...) for '%s' before %s", *name, tok_desc(P->tok, b));
      return 0;
    }
    advance(P);
    for (int i = 0; i < n; i++)
      if (type_eq(types[i], ty)) {
        diag_error(P->d, tloc, "'%s' lists %s twice", *name, type_str(ty, (char[16]){0}));
        return 0;
      }
    if (n == MAX_INSTANCES) {
      diag_error(P->d, tloc, "a type parameter stands for at most %d types", MAX_INSTANCES);
      return 0;
    }
    types[n++] = ty;
  } while (accept(P, "|"));
  if (!expect(P, ">")) return 0;
  return n;
}

/* Skips to the end of a declaration: past its body's closing brace, or past the ';' of
 * a reduce or scan, whichever comes first at the outermost level. */
static void skip_declaration(Parser *P) {
  while (P->tok->kind != TK_EOF && !is(P, "{") && !is(P, ";")) advance(P);
  if (accept(P, ";")) return;
  int depth = 0;
  while (P->tok->kind != TK_EOF) {
    if (is(P, "{")) depth++;
    else if (is(P, "}") && --depth == 0) {
      advance(P);
      return;
    }
    advance(P);
  }
}

/* Adds D to the program, refusing a name taken by another declaration, a function or a
 * table (instances of one generic declaration share theirs). */
static void define(Parser *P, Decl *D, Loc loc, int *cap) {
  Program *prog = P->prog;
  Decl *same = program_find(prog, D->name);
  if ((same && !(D->inst_first && same->inst_first == D->inst_first)) || program_find_func(prog, D->name))
    diag_error(P->d, loc, "'%s' is already defined", D->name);
  for (Scope *s = P->globals; s; s = s->up)
    if (!strcmp(s->name, D->name)) diag_error(P->d, loc, "'%s' is already defined (a table)", D->name);
  if (D->kind == D_FUNC) add_func(P, D);
  else add_decl(P, D, cap);
}

/* A declaration after its keyword: parsed once, or, generic (a type-params clause
 * follows the keyword), once per type of the clause from the same tokens with the type
 * parameter bound to it, each instance a declaration of its own (Decl.tparam). Stops
 * after an instance with errors: the next ones would repeat them. */
static void declaration(Parser *P, Loc loc, DeclParser parse, int *cap) {
  const char *tparam = NULL;
  Type types[MAX_INSTANCES];
  int n = 0;
  if (parse != func_decl && is(P, "<") && !(n = type_params(P, &tparam, types))) {
    skip_declaration(P); /* its T means nothing: its body would only add errors */
    return;
  }
  Token *start = P->tok;
  Decl *first = NULL, *prev = NULL;
  for (int i = 0; i < (n ? n : 1); i++) {
    P->tok = start;
    P->depth = P->call_depth = P->nest = 0;
    P->too_deep = false;
    char ctx[64], t[16];
    if (n) {
      snprintf(ctx, sizeof ctx, "with %s = %s", tparam, type_str(types[i], t));
      P->tparam = tparam;
      P->targ = types[i];
      P->d->context = ctx;
    }
    int errs = P->d->nerrors;
    Decl *D = parse(P, loc);
    P->tparam = NULL;
    P->d->context = NULL;
    if (!D) return;
    D->bad = P->d->nerrors > errs;
    if (n) {
      D->tparam = tparam;
      D->targ = types[i];
      D->inst_first = first ? first : D;
      if (prev) prev->inst_next = D;
      first = D->inst_first;
      prev = D;
    }
    if (D->name) define(P, D, loc, cap);
    if (D->bad) return;
  }
}

bool parse_program(Program *prog, Diag *d, Token *toks, int ntoks) {
  Parser P = {.prog = prog, .a = prog->arena, .d = d, .tok = toks, .end = &toks[ntoks - 1]};
  int cap = 0;
  int start_errs = d->nerrors;
  parse_tables(&P);
  while (P.tok->kind != TK_EOF && !P.a->failed) { /* after out-of-memory nothing is kept */
    Loc loc = P.tok->loc;
    int errs = d->nerrors;
    DeclParser parse = NULL;
    if (accept(&P, "kernel"))
      parse = kernel_decl;
    else if (accept(&P, "reduce"))
      parse = reduce_decl;
    else if (accept(&P, "histogram"))
      parse = histogram_decl;
    else if (accept(&P, "scan"))
      parse = scan_decl;
    else if (accept(&P, "pipeline"))
      parse = pipeline_decl;
    else if (at_global(&P)) {
      advance(&P);
      parse = global_decl;
    }
    else if (at_func_header(&P))
      parse = func_decl;
    else if (accept(&P, "const")) {
      skip_const(&P); /* a table, parsed by parse_tables */
      continue;
    } else {
      char b[64];
      diag_error(d, loc, "expected 'kernel', 'reduce', 'histogram', 'scan', 'global', 'pipeline', 'const' or a function before %s",
                 tok_desc(P.tok, b));
    }
    if (parse) declaration(&P, loc, parse, &cap);
    if (d->nerrors > errs) { /* resynchronise on the next declaration keyword */
      if (!is_decl_keyword(&P)) advance(&P);
      while (P.tok->kind != TK_EOF && !is_decl_keyword(&P)) advance(&P);
    }
    if (d->nerrors > DIAG_MAX_ERRORS) break;
  }
  return d->nerrors == start_errs && !prog->arena->failed;
}
