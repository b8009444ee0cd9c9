/*
 * lex.c - first phase of the front end: source text -> tokens.
 *
 * C's lexical rules, trimmed: identifiers, decimal/hex integers (suffix u allowed),
 * floats (1.0, .5, 1e-3, 2.5f), // and block comments, and the punctuators of the
 * kernel language. Keywords are identifiers found in a table.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "front/front.h"
#include "util/alloc.h"

/* The longest identifier (docs/LANGUAGE.md, Limits). */
#define MAX_IDENT_LEN 63

static const char *const keywords[] = {"kernel", "reduce", "histogram", "pipeline", "image", "if",
                                       "else",   "for",    "return",    "size",     "const", "scan"};

/* Longest first, so that "<<=" wins over "<<" and "<". */
static const char *const puncts[] = {"<<=", ">>=", "->", "==", "!=", "<=", ">=", "&&", "||", "<<",
                                     ">>",  "+=",  "-=", "*=", "/=", "%=", "&=", "|=", "^=", "++",
                                     "--",  "+",   "-",  "*",  "/",  "%",  "&",  "|",  "^",  "~",
                                     "!",   "<",   ">",  "=",  "?",  ":",  ";",  ",",  ".",  "(",
                                     ")",   "{",   "}",  "[",  "]"};

static bool is_keyword(const char *s, int n) {
  for (size_t i = 0; i < sizeof keywords / sizeof *keywords; i++)
    if ((int)strlen(keywords[i]) == n && !memcmp(keywords[i], s, (size_t)n)) return true;
  return false;
}

Token *lex(Arena *a, Diag *d, const char *src, int *n) {
  int cap = 256, cnt = 0;
  Token *toks = PXL_MALLOC(sizeof(Token) * (size_t)cap);
  if (!toks) return NULL;
  const char *p = src;
  int line = 1;
  const char *line_start = src;
#define LOC_AT(q) ((Loc){line, (int)((q) - line_start) + 1})
  for (;;) {
    /* skip white space and comments */
    for (;;) {
      if (*p == '\n') {
        line++;
        line_start = ++p;
      } else if (isspace((unsigned char)*p)) {
        p++;
      } else if (p[0] == '/' && p[1] == '/') {
        while (*p && *p != '\n') p++;
      } else if (p[0] == '/' && p[1] == '*') {
        Loc at = LOC_AT(p);
        p += 2;
        while (*p && !(p[0] == '*' && p[1] == '/')) {
          if (*p == '\n') {
            line++;
            line_start = p + 1;
          }
          p++;
        }
        if (!*p) {
          diag_error(d, at, "unterminated comment");
          break;
        }
        p += 2;
      } else {
        break;
      }
    }
    if (cnt + 1 + LEX_LOOKAHEAD >= cap) {
      cap *= 2;
      Token *t = PXL_REALLOC(toks, sizeof(Token) * (size_t)cap);
      if (!t) {
        PXL_FREE(toks);
        return NULL;
      }
      toks = t;
    }
    Token *t = &toks[cnt];
    memset(t, 0, sizeof *t);
    t->loc = LOC_AT(p);
    if (!*p) { /* the end, repeated so that the parser's look-ahead stays inside the array */
      for (int k = 0; k <= LEX_LOOKAHEAD; k++) t[k] = (Token){.kind = TK_EOF, .text = "", .loc = t->loc};
      cnt++;
      break;
    }
    const char *start = p;
    if (isalpha((unsigned char)*p) || *p == '_') {
      while (isalnum((unsigned char)*p) || *p == '_') p++;
      t->kind = is_keyword(start, (int)(p - start)) ? TK_KEYWORD : TK_IDENT;
      /* Names reach the API (pxl_args binds parameters by names of up to 63 bytes) and
       * every backend's generated code; C11 guarantees 63 significant characters. */
      if (p - start > MAX_IDENT_LEN)
        diag_error(d, t->loc, "name too long (%d characters; at most %d)", (int)(p - start), MAX_IDENT_LEN);
    } else if (isdigit((unsigned char)*p) || (*p == '.' && isdigit((unsigned char)p[1]))) {
      bool is_float = false, is_hex = false;
      if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
        is_hex = true;
        p += 2;
        while (isxdigit((unsigned char)*p)) p++;
        if (p == start + 2) diag_error(d, t->loc, "hexadecimal number without digits");
      } else {
        while (isdigit((unsigned char)*p)) p++;
        if (*p == '.') {
          is_float = true;
          p++;
          while (isdigit((unsigned char)*p)) p++;
        }
        if ((*p == 'e' || *p == 'E') &&
            (isdigit((unsigned char)p[1]) || ((p[1] == '+' || p[1] == '-') && isdigit((unsigned char)p[2])))) {
          is_float = true;
          p += 2;
          while (isdigit((unsigned char)*p)) p++;
        }
      }
      char buf[128];
      size_t len = (size_t)(p - start);
      bool too_long = len >= sizeof buf;
      if (too_long) {
        diag_error(d, t->loc, "number too long");
        len = sizeof buf - 1;
      }
      memcpy(buf, start, len);
      buf[len] = 0;
      errno = 0;
      if (is_float) {
        t->kind = TK_FLOAT;
        t->fval = strtod(buf, NULL);
        if (*p == 'f' || *p == 'F') p++;
      } else {
        t->kind = TK_INT;
        /* decimal or hexadecimal: a leading 0 does not make an octal number as in C */
        if (!is_hex && buf[0] == '0' && buf[1])
          diag_error(d, t->loc, "integer with a leading zero (pxl has no octal numbers)");
        t->ival = strtoull(is_hex ? buf + 2 : buf, NULL, is_hex ? 16 : 10);
        if (errno == ERANGE && !too_long) diag_error(d, t->loc, "integer literal too large");
        if (*p == 'u' || *p == 'U') p++;
      }
      if (isalnum((unsigned char)*p) || *p == '_') {
        diag_error(d, LOC_AT(p), "invalid suffix on number");
        while (isalnum((unsigned char)*p) || *p == '_') p++;
      }
    } else {
      size_t i;
      for (i = 0; i < sizeof puncts / sizeof *puncts; i++) {
        size_t l = strlen(puncts[i]);
        if (!strncmp(p, puncts[i], l)) {
          p += l;
          t->kind = TK_PUNCT;
          break;
        }
      }
      if (i == sizeof puncts / sizeof *puncts) {
        unsigned char c = (unsigned char)*p;
        if (c >= 0x20 && c < 0x7f)
          diag_error(d, t->loc, "unexpected character '%c'", c);
        else if (c >= 0xc0)
          diag_error(d, t->loc, "unexpected non-ASCII character (bytes 0x%02x...)", c);
        else
          diag_error(d, t->loc, "unexpected byte 0x%02x", c);
        p++;
        if (c >= 0xc0) /* one report per UTF-8 sequence: skip its continuation bytes */
          while (((unsigned char)*p & 0xc0) == 0x80) p++;
        continue;
      }
    }
    t->len = (int)(p - start);
    t->text = arena_strndup(a, start, (size_t)t->len);
    if (!t->text) {
      PXL_FREE(toks);
      return NULL;
    }
    cnt++;
  }
#undef LOC_AT
  *n = cnt;
  return toks;
}
