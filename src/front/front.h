/*
 * front.h - the front end: source text -> checked Program (src/ir/ir.h).
 *
 * Pipeline: lex (lex.c) -> parse (parse.c, names resolved, types not yet known) ->
 * check (check.c, types computed, conversions made explicit, rules enforced). Errors
 * go to a Diag (diag.c) as "file:line:col: error: msg" with the source line and a caret;
 * every phase keeps going after an error so one run reports several.
 */
#ifndef PXL_FRONT_H
#define PXL_FRONT_H

#include <stdbool.h>

#include "ir/ir.h"

/* ---- diagnostics ---- */

typedef struct {
  const char *filename;
  const char *source;
  char *text;     /* accumulated messages (heap), NUL-terminated */
  size_t len, cap;
  int nerrors;     /* errors reported, shown or not */
  int nshown;      /* errors shown in text (at most DIAG_MAX_ERRORS) */
  Loc last;        /* where the last shown error was */
  bool oom;        /* an allocation failed while reporting */
  const char *context; /* added to each message: "with T = f32" while an instance of a generic
                        * declaration is parsed or checked; NULL: none */
  uint64_t seen[16];   /* hashes of the last messages with a context: an error each instance
                        * makes alike is shown once */
  int nseen;
} Diag;

#define DIAG_MAX_ERRORS 20

void diag_init(Diag *d, const char *filename, const char *source);
void diag_free(Diag *d); /* frees the text */
/* Reports an error at loc (line/col 1-based); past DIAG_MAX_ERRORS further ones are dropped. */
void diag_error(Diag *d, Loc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* ---- tokens ---- */

typedef enum { TK_IDENT, TK_INT, TK_FLOAT, TK_PUNCT, TK_KEYWORD, TK_EOF } TokenKind;

typedef struct Token {
  TokenKind kind;
  const char *text; /* NUL-terminated copy of the spelling */
  int len;
  uint64_t ival;    /* TK_INT */
  double fval;      /* TK_FLOAT */
  Loc loc;
} Token;

/* How far past the current token the parser may look (P->tok[LEX_LOOKAHEAD]). */
#define LEX_LOOKAHEAD 2

/* Splits src into tokens (last is TK_EOF); *n receives the count. LEX_LOOKAHEAD more
 * TK_EOF tokens follow the counted ones, so that a look-ahead at the end of the file reads
 * the end again instead of memory past the array. Lexical errors are reported to d and
 * the offending characters skipped. NULL only on out-of-memory. */
Token *lex(Arena *a, Diag *d, const char *src, int *n);

/* ---- parse and check ---- */

/* Parses tokens into p (decls appended). Returns false if there were errors. */
bool parse_program(Program *p, Diag *d, Token *toks, int ntoks);
/* Types and validates every declaration of p; false on errors. */
bool check_program(Program *p, Diag *d);

/* The whole compiler up to analysis (src/driver/compile.c): on success *out is a checked, analysed Program (free with
 * program_free). On failure *out is NULL and d holds the diagnostics. Returns a PXL_*
 * status: PXL_ESOURCE for errors in the source, PXL_ENOMEM. */
int front_compile(const char *filename, const char *source, Program **out, Diag *d);
void program_free(Program *p);

/* Type names: "u8", "f32x3", "int"... -> Type; false if not a type name. */
bool type_from_name(const char *name, Type *out);
/* The scalar types' names, then the aliases (int, ...), for messages: "u8 i16 ..., int, ...". */
void type_names(char *buf, size_t n);

#endif
