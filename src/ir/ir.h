/*
 * ir.h - the intermediate representation every layer after the front end reads.
 *
 * The front end (src/front) produces a Program: a list of Decls (kernel, reduce,
 * histogram, pipeline), each holding a typed expression/statement tree made of Nodes.
 * The checker makes every conversion explicit (ND_CAST nodes), so later layers never
 * re-derive C's promotion rules: a node's `type` is the type of its value, period.
 * Analysis (src/analysis) fills Decl.access and Decl.skel; the reference interpreter
 * (src/interp) executes the tree; code generators (src/codegen) print it.
 * All IR memory comes from one Arena (src/util/arena.h) freed with the Program.
 * docs/IR.md is the written spec of this file.
 */
#ifndef PXL_IR_H
#define PXL_IR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "image/types.h"
#include "util/arena.h"

/* Scalar element types: the rows of PXL_ELEM_TYPES (image/types.h), in its order. */
typedef enum {
#define X(e, name, size, pixel) e,
  PXL_ELEM_TYPES(X)
#undef X
      T_COUNT
} Scalar;

/* A value type: a scalar element type and 1, 3 or 4 lanes (channels). */
typedef struct {
  Scalar s;  /* element type */
  int lanes; /* 1, 3 or 4; 0 only for void */
} Type;

const char *scalar_name(Scalar s);         /* "u8", ... */
int scalar_size(Scalar s);                 /* bytes */
static inline bool scalar_is_float(Scalar s) { return s == T_F32 || s == T_F64; } /* f32, f64 */
bool scalar_is_signed(Scalar s);           /* signed ints and floats */
bool type_eq(Type a, Type b);              /* same scalar and lanes */
const char *type_str(Type t, char buf[16]); /* "u8x3" etc. */

/* Border modes: how an image read outside [0,w) x [0,h) is answered. */
#define PXL_BORDERS(X)                                                                      \
  X(B_CLAMP, "clamp")                                                                     \
  X(B_MIRROR, "mirror")                                                                   \
  X(B_MIRROR101, "mirror101")                                                             \
  X(B_WRAP, "wrap")                                                                       \
  X(B_CONSTANT, "constant")                                                               \
  X(B_NONE, "none")

typedef enum {
#define X(e, name) e,
  PXL_BORDERS(X)
#undef X
      B_COUNT
} BorderKind;

typedef struct {
  BorderKind kind;
  double value; /* B_CONSTANT: the value read outside (converted to the pixel type) */
} Border;

const char *border_name(BorderKind k);
/* Parses a border mode as text ("mirror", "constant(-1.5)"): true and *b on success. The
 * one parser of border-mode strings (the API's, and so the CLI's); the .pxl parser reads
 * the same names from tokens. */
bool border_parse(const char *text, Border *b);

/* Source location, for diagnostics. */
typedef struct {
  int line, col; /* 1-based */
} Loc;

/* Expression and statement node kinds. */
#define PXL_NODES(X)                                                                        \
  /* expressions */                                                                       \
  X(ND_NUM)     /* literal: ival or fval, per type */                                     \
  X(ND_VAR)     /* local variable or scalar parameter: var */                             \
  X(ND_COORD)   /* built-in x, y, width, height: ival = 0,1,2,3 (output coordinates) */  \
  X(ND_IMGDIM)  /* image.width / image.height: param, ival = 0 width, 1 height */          \
  X(ND_READ)    /* relative read img(dx, dy): param, a = dx, b = dy */                    \
  X(ND_AT)      /* absolute read img.at(ex, ey): param, a = ex, b = ey; parsed with ival \
                 * 1, 2, 3 for img.nearest, .linear, .cubic, made reads by the checker */ \
  X(ND_LANE)    /* vector component: a, ival = lane index */                              \
  X(ND_VEC)     /* vector constructor: args[nargs] scalars -> type */                     \
  X(ND_CAST)    /* conversion of a to type (saturating, see docs/LANGUAGE.md) */          \
  X(ND_NEG)                                                                               \
  X(ND_NOT)     /* logical ! */                                                           \
  X(ND_BITNOT)                                                                            \
  X(ND_ADD) X(ND_SUB) X(ND_MUL) X(ND_DIV) X(ND_MOD)                                       \
  X(ND_SHL) X(ND_SHR) X(ND_BITAND) X(ND_BITOR) X(ND_BITXOR)                               \
  X(ND_EQ) X(ND_NE) X(ND_LT) X(ND_LE) X(ND_GT) X(ND_GE)                                   \
  X(ND_LOGAND) X(ND_LOGOR)                                                                \
  X(ND_COND)    /* a ? b : c, fields a b c */                                             \
  X(ND_CALL)    /* built-in function: builtin, args[nargs] */                            \
  X(ND_FCALL)   /* user function: func (a D_FUNC Decl), args[nargs] (converted) */        \
  X(ND_INDEX)   /* array element var[a]: a is the index, an i64 */                       \
  /* statements */                                                                        \
  X(ND_BLOCK)   /* body: list of statements (next-linked) */                              \
  X(ND_DECL)    /* var, a = initialiser (may be NULL: zero) */                            \
  X(ND_ASSIGN)  /* var = a (a already converted to var's type; compound ops desugared) */ \
  X(ND_LANESET) /* var.lane(ival) = a */                                                  \
  X(ND_ISET)    /* var[a] = b (array element; a an i64, b converted to the element) */   \
  X(ND_IF)      /* if (a) b else c */                                                     \
  X(ND_FOR)     /* for (init; a; step) b; init and step are statements or NULL */         \
  X(ND_RETURN)  /* return a (converted to the kernel's type); several outputs: args */                           \
  X(ND_BIN)     /* histogram: bin(a [, b weight]); ival BIN_MIN/BIN_MAX: bin_min/bin_max(a, b) */                                      \
  X(ND_EXPRSTMT)/* evaluate a for no effect (rare; kept for completeness) */

typedef enum {
#define X(e) e,
  PXL_NODES(X)
#undef X
      ND_COUNT
} NodeKind;

const char *node_name(NodeKind k);

/* Built-in functions. arity -1: variadic (min/max take 2). */
#define PXL_BUILTINS(X)                                                                     \
  X(BI_MIN, "min", 2)                                                                     \
  X(BI_MAX, "max", 2)                                                                     \
  X(BI_ABS, "abs", 1)                                                                     \
  X(BI_CLAMP, "clamp", 3)                                                                 \
  X(BI_SQRT, "sqrt", 1)                                                                   \
  X(BI_EXP, "exp", 1)                                                                     \
  X(BI_LOG, "log", 1)                                                                     \
  X(BI_POW, "pow", 2)                                                                     \
  X(BI_SIN, "sin", 1)                                                                     \
  X(BI_COS, "cos", 1)                                                                     \
  X(BI_ATAN2, "atan2", 2)                                                                 \
  X(BI_FLOOR, "floor", 1)                                                                 \
  X(BI_CEIL, "ceil", 1)                                                                   \
  X(BI_ROUND, "round", 1)

typedef enum {
#define X(e, name, arity) e,
  PXL_BUILTINS(X)
#undef X
      BI_COUNT
} Builtin;

const char *builtin_name(Builtin b);
int builtin_arity(Builtin b);

typedef struct Param Param;
typedef struct Var Var;
typedef struct Node Node;
typedef struct Decl Decl;

/* A local variable (or a loop counter). Scalar parameters are Vars too (param set).
 * Arrays: len > 0 elements of `type`; a local array occupies slots slot..slot+len-1. A
 * const array (a table, file-scope or local) has no slots: its elements are number
 * literals elems[0..len) and its table id indexes Program.tables. */
struct Var {
  const char *name;
  Type type;    /* the element type for arrays */
  int slot;     /* index into the interpreter's frame; unique within a Decl (-1: table) */
  Param *param; /* non-NULL when this variable is a scalar parameter */
  Loc loc;
  int len;      /* array elements, or 0 for a plain variable */
  bool is_const; /* a table: read-only, elements known at compile time */
  int table;    /* tables: index in Program.tables, else -1 */
  Node **elems; /* tables: the elements, ND_NUM of `type` after checking */
  int pval;     /* a pipeline's scalar or array value (PV_SCALAR, PV_ARRAY): 1 + its index in
                 * Decl.values; 0 for every other variable */
};

/* Kernel parameter: an image, a scalar, or an array of scalars (len > 0: its Var is an
 * array with no slots of its own; the value is bound per run, Lane.arr). */
struct Param {
  const char *name;
  bool is_image;
  bool of_tparam;      /* declared with the type parameter of a generic declaration: image T in */
  Type type;         /* pixel type for images, value type for scalars */
  int index;         /* position among all params */
  int img_index;     /* position among image params (-1 for scalars) */
  int scalar_index;  /* position among scalar params (-1 for images) */
  Border border;     /* default border for image params (clamp unless written) */
  bool has_border;   /* written in the declaration */
  Var *var;          /* scalars: the Var that reads it */
  int len;           /* array parameters (T name[N]): N elements, read-only; 0 for others */
  Loc loc;
};

struct Node {
  NodeKind kind;
  Type type; /* value type of an expression; {T_VOID,0} for statements */
  Loc loc;
  Node *a, *b, *c;  /* operands / condition / then / else */
  Node *init, *step; /* ND_FOR */
  Node *body;        /* ND_BLOCK first statement; ND_FOR body is b */
  Node *next;        /* next statement in a block */
  Node **args;       /* ND_CALL, ND_VEC */
  int nargs;
  Var *var;          /* ND_VAR, ND_DECL, ND_ASSIGN, ND_LANESET */
  Param *param;      /* ND_READ, ND_AT, ND_IMGDIM */
  Decl *func;        /* ND_FCALL: the called function (a placeholder holding its name until checked) */
  Builtin builtin;   /* ND_CALL */
  int64_t ival;      /* ND_NUM (integer types), ND_COORD, ND_LANE, ND_IMGDIM; ND_BIN: its BIN_* */
  double fval;       /* ND_NUM (float types) */
  int flags;         /* NF_* */
  /* ND_DIV, ND_MOD by an integer constant d > 1 (analysis: value ranges): where every
   * analysis that met the node found its dividend in [0, 65535] (NF_DIV16), the 16-bit
   * multiplier and shift with (v * div_m) >> (16 + div_s) == v / d over the dividend's
   * values [div_lo, div_hi] */
  int32_t div_lo, div_hi, div_m, div_s;
};

enum {
  NF_UNTYPED_FLOAT = 1, /* float literal not yet given a type: adopts f64 next to f64 */
  NF_ERROR = 2,         /* placeholder made after a syntax error */
  NF_IN_RANGE = 4,      /* ND_CAST between integer types whose operand always fits the
                         * target (analysis: value ranges): no saturation needed;
                         * ND_INDEX, ND_ISET: the index is always inside the array */
  NF_COMPOUND = 8,      /* binary operator desugared from a compound assignment (a += b):
                         * diagnostics name it as written */
  NF_CHECKED = 16,      /* the value of a file-scope constant: checked and converted once */
  NF_KEPT_BRANCH = 32,  /* ND_BLOCK: the branch an if with a known condition kept (parser);
                         * a block it stands in splices its statements in */
  NF_UNROLL = 64,       /* ND_FOR: counts its counter, assigned nowhere else, from one literal
                         * to another by 1 in at most 16 iterations, and makes at most 64
                         * bodies with the loops unrolled inside it (analysis): generated C
                         * unrolls it completely */
  NF_DIV16 = 128,       /* ND_DIV, ND_MOD: div_m and div_s hold (Node) */
  NF_DIV_WIDE = 256,    /* ND_DIV, ND_MOD: an analysis found no 16-bit multiplier for it */
  NF_NO_WRAP = 512,     /* ND_ADD, ND_SUB, ND_MUL of i32 or i64: every analysis that met the node
                         * found its operands and result far inside the type (analysis: value
                         * ranges, coordinates and sizes bounded by PXL_MAX_DIM), so generated
                         * code may use the language's signed arithmetic, which compilers
                         * treat as never wrapping (address arithmetic then vectorises) */
  NF_MAY_WRAP = 1024,   /* ND_ADD, ND_SUB, ND_MUL: an analysis could not bound it; no NF_NO_WRAP */
};

typedef enum { D_KERNEL, D_REDUCE, D_HISTOGRAM, D_PIPELINE, D_FUNC } DeclKind;

/* How a histogram's bins combine (Decl.binop): sums (bin), or per-bin minima or maxima
 * (bin_min, bin_max: a reduction per bin, such as a bounding box per label). */
enum { BIN_SUM, BIN_MIN, BIN_MAX };

/* The axes of a scan (Decl.scan): prefixes along rows (x), columns (y), or both. */
enum { SCAN_X = 1, SCAN_Y = 2 };

/* Reduction operators of a `reduce` declaration. */
#define PXL_REDOPS(X)                                                                       \
  X(R_SUM, "sum")                                                                         \
  X(R_MIN, "min")                                                                         \
  X(R_MAX, "max")                                                                         \
  X(R_ARGMIN, "argmin")                                                                   \
  X(R_ARGMAX, "argmax")                                                                   \
  X(R_COMBINE, "combine")

typedef enum {
#define X(e, name) e,
  PXL_REDOPS(X)
#undef X
      R_COUNT
} RedOp;

const char *redop_name(RedOp r);

/* The most outputs of one kernel. */
#define PXL_MAX_OUTS 8
/* The most pixels of a tiler's tile (tile(TW, TH): TW * TH), and of each side. */
#define PXL_MAX_TILE 64
#define PXL_MAX_TILE_SIDE 16

/* Skeleton classes, found by analysis (never declared by the user). */
#define PXL_SKELETONS(X)                                                                    \
  X(SK_P2P, "P2P")                                                                        \
  X(SK_P2P_NONSEQ, "P2P-nonsequential")                                                   \
  X(SK_AFFINE, "affine window")                                                           \
  X(SK_N2P, "N2P")                                                                        \
  X(SK_GATHER, "gather")                                                                  \
  X(SK_R2S, "R2S")                                                                        \
  X(SK_R2V, "R2V")                                                                        \
  X(SK_SCAN, "scan")                                                                      \
  X(SK_TILER, "tiler")                                                                    \
  X(SK_GLOBAL, "global")                                                                  \
  X(SK_PIPELINE, "pipeline")

typedef enum {
#define X(e, name) e,
  PXL_SKELETONS(X)
#undef X
      SK_COUNT
} Skeleton;

const char *skeleton_name(Skeleton s);

/* Affine form c0 + cx*x + cy*y + cw*width + ch*height of an index, when analysis finds
 * one, plus a bounded term: the constant part ranges over c0..c1 (a loop counter with
 * constant bounds, a table's elements: in.at(2 * x + i - 2, y) has cx 2, c0 -2, c1 2). */
typedef struct {
  bool ok;
  int64_t c0, cx, cy, cw, ch;
  int64_t c1; /* >= c0; c0 == c1: one constant */
} Affine;

/* What analysis found about one image parameter's reads. */
typedef struct {
  bool read_rel;        /* has relative reads */
  bool window_known;    /* relative offsets are bounded constants */
  int x0, x1, y0, y1;   /* window: dx in [x0, x1], dy in [y0, y1] (0..0 for P2P) */
  bool read_abs;        /* has absolute reads */
  bool abs_affine;      /* every absolute read is affine in x, y, all with one linear part */
  Affine ax, ay;        /* that linear part, the constant parts of every absolute read
                         * within c0..c1 (the footprint of a tile: its corners' maps) */
  bool gather;          /* some read is data-dependent */
} Access;

/* Per-pixel counts for `pxl check --explain` (Park et al.'s metrics). */
typedef struct {
  double arith;    /* arithmetic operations per output pixel */
  double flops;    /* of which floating point */
  double reads;    /* image reads per output pixel */
  double branches; /* conditional branches executed per pixel */
  double bins;     /* histograms: bin() statements run per pixel (an if's branches both counted) */
  bool exact;      /* false when a loop has data-dependent bounds (counts are per iteration) */
} Metrics;

/* A window reduction that splits into a column pass and a row pass (found by analysis):
 *   acc_i = init_i; for (vy = y0..y1) for (vx = x0..x1) acc_i = OP_i(acc_i, img(vx, vy)); ...
 * with OP min, max or integer +. Backends compute OP over each column of the window
 * once per pixel column, then OP over x0..x1 of those: the same value, fewer reads.
 * An integer sum may be weighted by an outer product, acc += WY(vy) * WX(vx) * img(vx,
 * vy) (factors in any order; WY reads only vy, WX only vx, numbers and const tables):
 * the column pass sums wy[vy - y0] * img, the row pass runs the update with WY as 1 over
 * the column values (integer arithmetic wraps, so the grouping gives the same bits). */
#define PXL_MAX_SEP_ACC 4
#define PXL_MAX_SEP_XREADS 4
typedef struct {
  Param *img;             /* the image read */
  Node *loop;             /* the outer for statement (replaced by the row pass) */
  Var *vx, *vy;           /* inner and outer counters */
  int x0, x1, y0, y1;     /* their ranges (inclusive) */
  int nacc;
  Var *acc[PXL_MAX_SEP_ACC];
  int op[PXL_MAX_SEP_ACC];   /* BI_MIN, BI_MAX, or -1 for a sum */
  Node *read[PXL_MAX_SEP_ACC]; /* the operand of each update: the read, or a temporary holding it */
  Var *tmp[PXL_MAX_SEP_ACC];   /* temporaries declared in the loop as `T t = img(vx, vy)` */
  int ntmp;
  Type col[PXL_MAX_SEP_ACC];   /* type of a column value */
  const Node *wy_node[PXL_MAX_SEP_ACC]; /* weighted sums: the factor WY (the row pass emits 1), else NULL */
  int64_t *wy[PXL_MAX_SEP_ACC];   /* its value for vy = y0 .. y1, else NULL */
  int64_t *wx[PXL_MAX_SEP_ACC];   /* WX's value for vx = x0 .. x1 (for bounds), else NULL */
  bool narrow[PXL_MAX_SEP_ACC];   /* a sum whose every value, from its start to the whole window's,
                                   * lies in [0, 65535] (analysis: value ranges): the C emitter
                                   * holds it in 16 bits (16-bit vector lanes, twice as many) */
  /* Decl.sep_x only: the image's reads outside the window loop, each at a literal offset
   * inside the window, (xr_dx[j], xr_dy[j]) (`c = e(0, 0)` beside a 3x3 maximum) */
  int nxr;
  int xr_dx[PXL_MAX_SEP_XREADS], xr_dy[PXL_MAX_SEP_XREADS];
} Separable;

/* Global operators, `global T name(params) = OP(value, ...);`: a whole-image pass of the
 * operator library (src/ops) over the values the expressions give at every pixel (the
 * maps: ordinary kernels, Decl.gmap). Each output pixel may depend on every pixel of the
 * maps, so the pass is not pxl code: the interpreter's backend runs the library's
 * reference algorithm, the others its fast one (docs/LANGUAGE.md, "Global operators").
 * Columns: the name; the number of maps; what a map's value is made into before the pass
 * (GM_FEATURE: u8, 1 where the value is nonzero; GM_VALUE: the value's own type;
 * GM_SAME: the value's type, the same for every map); the output types the operator
 * allows (GT_ANY: every pixel type; GT_FLOAT: f32, f64; GT_LABEL: u32, i32). */
#define PXL_GLOBALS(X)                                                                      \
  X(G_EDT, "edt", 1, GM_FEATURE, GT_FLOAT)                                                \
  X(G_CITYBLOCK, "cityblock", 1, GM_FEATURE, GT_ANY)                                      \
  X(G_CHESSBOARD, "chessboard", 1, GM_FEATURE, GT_ANY)                                    \
  X(G_NEAREST, "nearest", 1, GM_FEATURE, GT_LABEL)                                        \
  X(G_LABEL4, "label4", 1, GM_VALUE, GT_LABEL)                                            \
  X(G_LABEL8, "label8", 1, GM_VALUE, GT_LABEL)                                            \
  X(G_RECONSTRUCT4, "reconstruct4", 2, GM_SAME, GT_ANY)                                   \
  X(G_RECONSTRUCT8, "reconstruct8", 2, GM_SAME, GT_ANY)                                   \
  X(G_RECONSTRUCT_ERODE4, "reconstruct_erode4", 2, GM_SAME, GT_ANY)                       \
  X(G_RECONSTRUCT_ERODE8, "reconstruct_erode8", 2, GM_SAME, GT_ANY)                       \
  X(G_FILL4, "fill4", 1, GM_VALUE, GT_ANY)                                                \
  X(G_FILL8, "fill8", 1, GM_VALUE, GT_ANY)                                                \
  X(G_REGIONAL_MIN4, "regional_min4", 1, GM_VALUE, GT_ANY)                                \
  X(G_REGIONAL_MIN8, "regional_min8", 1, GM_VALUE, GT_ANY)                                \
  X(G_REGIONAL_MAX4, "regional_max4", 1, GM_VALUE, GT_ANY)                                \
  X(G_REGIONAL_MAX8, "regional_max8", 1, GM_VALUE, GT_ANY)                                \
  X(G_WATERSHED4, "watershed4", 2, GM_VALUE, GT_LABEL)                                    \
  X(G_WATERSHED8, "watershed8", 2, GM_VALUE, GT_LABEL)                                    \
  X(G_WATERSHED_MINIMA4, "watershed_minima4", 1, GM_VALUE, GT_LABEL)                      \
  X(G_WATERSHED_MINIMA8, "watershed_minima8", 1, GM_VALUE, GT_LABEL)                      \
  X(G_WATERSHED_LINES4, "watershed_lines4", 2, GM_VALUE, GT_LABEL)                        \
  X(G_WATERSHED_LINES8, "watershed_lines8", 2, GM_VALUE, GT_LABEL)                        \
  X(G_WATERSHED_MINIMA_LINES4, "watershed_minima_lines4", 1, GM_VALUE, GT_LABEL)          \
  X(G_WATERSHED_MINIMA_LINES8, "watershed_minima_lines8", 1, GM_VALUE, GT_LABEL)

typedef enum {
#define X(e, name, arity, map, out) e,
  PXL_GLOBALS(X)
#undef X
      G_COUNT
} GlobalOp;
enum { GM_FEATURE, GM_VALUE, GM_SAME };
enum { GT_ANY, GT_FLOAT, GT_LABEL };
#define PXL_MAX_GMAPS 2 /* the most maps of a global operator */

const char *global_name(GlobalOp g);
int global_arity(GlobalOp g);    /* its number of maps, 1 .. PXL_MAX_GMAPS */
int global_map_kind(GlobalOp g); /* GM_* */
int global_out_kind(GlobalOp g); /* GT_* */
/* Whether the CUDA backend runs g's pass on the device (runtime/cuda/cuda_ops.c; the
 * others, and every pass on OpenCL, run on the host): for explanations and the cost model. */
bool global_on_device(GlobalOp g);

/* Histogram bins in the compiled backends: float sums are doubles (hist_double_sums); every
 * other histogram's bins are int64_t: integer sums, or for bin_min / bin_max the keys of
 * ir/prelude.h (pxr_bkey_*), which hist_keys_to_values turns into D's values in place (i64,
 * or f64 where D->weighted_float), the interpreter's bins. */
union Lane;
bool hist_double_sums(const Decl *D);
void hist_keys_to_values(const Decl *D, union Lane *bins); /* ir/value.h */

/* One call in a pipeline: img = kernel(args...). */
typedef struct PipeArg PipeArg;
struct PipeArg {
  int source;    /* >= 0: index of the pipeline value (an image, or for an array parameter a
                  * PV_ARRAY value); -1: scalar expr */
  Node *expr;    /* scalar argument expression over the pipeline's scalar params (or NULL) */
  Border border; /* border for this use (image args) */
  bool has_border;
  Loc loc;
};

/* What a pipeline value is: an image (a parameter or a kernel's result), a reduction's
 * result (`i64 s = total(in);`) or a histogram's bins (`i64 h[256] = hist(in);`). */
typedef enum { PV_IMAGE, PV_SCALAR, PV_ARRAY } PipeValueKind;

/* A pipeline value: either a pipeline parameter or the result of a call. */
typedef struct {
  PipeValueKind kind;
  const char *name; /* local name, or NULL for an anonymous nested call */
  Decl *callee;     /* NULL for a parameter */
  Param *param;     /* pipeline parameter (image) when callee == NULL */
  PipeArg *args;
  int nargs;
  Type type;        /* pixel type; PV_SCALAR, PV_ARRAY: the value's (element) type, one lane */
  int len;          /* PV_ARRAY: the number of bins */
  Var *var;         /* PV_SCALAR, PV_ARRAY: the variable naming it in the pipeline (Var.pval) */
  Loc loc;
  int loop;         /* the innermost loop whose body computes this value, -1: none */
  int carried;      /* >= 0: the image carried by loop `carried` (callee, param NULL) */
  int nouts;        /* a tuple statement (image T a, image U b) = k(...): its number of
                     * images, one value each (sharing args); 0 for every other value */
  int out;          /* which output of the tuple this value is (0 .. nouts - 1) */
  bool fused;       /* a fused pipeline (Decl.fused): computed inside value `into`'s kernel,
                     * never run or stored (analysis/fuse.c) */
  int into;
} PipeValue;

/* A loop of a pipeline: values[first .. end) run once per iteration, in order. Each
 * image the body assigns that was defined before the loop is carried: values[phi + k]
 * holds it, init[k] on entry and next[k] after each iteration (after the loop: its
 * final value). Nested loops lie inside their parent's body. */
typedef struct {
  Node *count;     /* at most this many iterations: an i64 host expression */
  int phi, ncarry; /* the carried images; first == phi + ncarry */
  int first, end;  /* the body's values */
  int *init;       /* [ncarry] the value each carried image starts from (< phi) */
  int *next;       /* [ncarry] its value at the end of an iteration (first .. end - 1) */
  bool *until;     /* [ncarry] named in until unchanged(...) */
  bool has_until;  /* stops after an iteration that changed none of the named images */
  int parent;      /* the enclosing loop, -1: none */
  Loc loc;
} PipeLoop;

struct Decl {
  DeclKind kind;
  const char *name;
  Loc loc;
  Type type;          /* kernel: output pixel type; reduce: result type; pipeline: output */
  Param **params;
  int nparams;
  int nimages;        /* image params */
  int nscalars;       /* scalar params */
  Node *size_w, *size_h; /* kernel size(w, h) expressions, or NULL = first image's size */
  Node *body;         /* kernel / histogram body (ND_BLOCK); reduce: map expression */
  int nslots;         /* number of Var slots used by body */
  /* reduce */
  RedOp redop;
  Node *combine;      /* R_COMBINE: expression over combine_a, combine_b */
  Var *combine_a, *combine_b;
  Node *identity;     /* R_COMBINE: identity value */
  /* scan: a D_KERNEL whose body returns VALUE (the map), then prefix `redop` (R_SUM,
   * R_MIN or R_MAX) along the axes in `scan` (SCAN_X | SCAN_Y); 0 for other kernels */
  int scan;
  /* a global operator (PXL_GLOBALS): 1 + its GlobalOp, 0 for every other declaration. Its
   * body is NULL: gmap[0 .. global_arity) are the kernels computing its maps (the same
   * parameters; not in Program.decls, never entries), whose outputs the pass reads */
  int global;
  struct Decl *gmap[PXL_MAX_GMAPS];
  /* histogram */
  int nbins;
  bool weighted_float; /* some weight (or min/max value) is floating point: bins are f64, else i64 */
  int binop;           /* BIN_SUM, BIN_MIN or BIN_MAX: the kind of every bin call */
  /* pipeline */
  PipeValue *values;
  int nvalues;
  int result;         /* index of the returned value (several: results[0]) */
  int *results;       /* a pipeline -> (image T1, image T2, ...): the returned values, nouts
                       * of them after checking (out_types their types); NULL for one */
  int nresults;       /* as written in the return (checked against nouts) */
  PipeLoop *loops;    /* in source order (a parent before its nested loops) */
  /* a fused kernel of rule C (analysis/fuse.c): the image parameter stage_param is not
   * bound to an image but computed by kernel `stage` (tiles in shared memory on GPUs);
   * stage_map[i] is the index in params of stage's parameter i. NULL otherwise. */
  const struct Decl *stage;
  int stage_param;
  int *stage_map;
  struct Decl *fused[2]; /* analysis (fuse.c): this pipeline with stages fused into their
                       * consumers where the cost model predicts a gain, per device class
                       * (analysis/cost.h: [COST_CPU] for host backends, [COST_GPU]), which the
                       * compiled backends run; NULL: none fuses */
  int nloops;
  /* several outputs: kernel (T1 a, T2 b) name(...): nouts 2..PXL_MAX_OUTS, else 0 (type is
   * then out_types[0]); a return gives one value per output (ND_RETURN args). A pipeline
   * -> (image T1, image T2) also has nouts and out_types (out_names NULL) and results */
  int nouts;
  /* a tiler, kernel T name(...) tile(TW, TH) paving(PX, PY) origin(OX, OY) repeat(RW, RH):
   * the body runs once per repetition (x, y) of the repetition space size_w x size_h
   * (repeat(), else ceil(image 0's size / paving)), reads relative to the input pattern's
   * origin (OX + PX * x, OY + PY * y) (the checker made them absolute reads, ND_AT), and
   * returns tile[0] * tile[1] values: the output pixels (TW * x + i, TH * y + j), row by
   * row. tile[0] == 0: not a tiler */
  int tile[2], paving[2], origin[2];
  Type *out_types;
  const char **out_names;
  Loc *out_locs;
  struct Decl **outs; /* analysis (outputs.c): the projection computing output k alone */
  const struct Decl *parent; /* a projection: the kernel it comes from (out_index: which output) */
  int out_index;
  /* a generic declaration, `kernel<T: u8 | u16 | f32> T name(image T in)`: one Decl per
   * type of the list (instances, parsed from the same tokens with T bound to it), all
   * named `name`; a run or a pipeline call takes the first whose image parameters have
   * the element types of the images given (ir.c: decl_instance_for) */
  const char *tparam; /* the type parameter's name, NULL: not generic */
  Type targ;          /* the type it stands for in this instance */
  struct Decl *inst_first; /* the first instance (itself for the first) */
  struct Decl *inst_next;  /* the next instance, NULL after the last */
  bool bad;           /* had syntax errors: not type-checked */
  int index;          /* position in Program.decls */
  uint64_t serial;    /* Program.serial of its program */
  /* filled by analysis */
  Skeleton skel;
  Access *access;     /* one per image param */
  Separable *sep;     /* N2P kernels whose window splits into columns and rows, else NULL */
  Separable *sep_x;   /* where sep is NULL only because the image is also read outside the
                       * window loop at literal offsets inside the window: the same split
                       * with those reads (nxr). Read by the GPU's iterated stencils alone
                       * (gen_gpu.c, steps_words); every other generator sees sep only */
  Metrics metrics;
  /* run-time specialisation (analysis/specialise.c): a gather whose offsets or loop
   * bounds depend on integer scalar parameters is re-analysed with their values */
  uint32_t spec_mask; /* bit i: scalar parameter i is specialised on; 0: never */
  Decl *specs;        /* the specialisations made so far, linked by spec_next */
  Decl *spec_next;
  int64_t *spec_vals; /* a specialisation: the values (by scalar index) it was made for */
  int nspecs;         /* specialisations of this declaration (capped) */
  struct Program *prog; /* the program holding this declaration (its arena) */
};

typedef struct Program {
  Arena *arena;
  uint64_t serial;    /* unique per compiled program in this process (caches key on it) */
  const char *filename;
  const char *source;
  Decl **decls;
  int ndecls;
  Decl **funcs;       /* user functions (D_FUNC), not entry points; the same namespace */
  int nfuncs;
  Var **tables;       /* every const array of the program (file-scope and local), by Var.table */
  int ntables;
  int next_index;     /* the next Decl.index for a specialisation (after the entries) */
} Program;

Decl *program_find(const Program *p, const char *name); /* an entry point; NULL if absent */
Decl *program_find_func(const Program *p, const char *name); /* a user function; NULL if absent */
/* The types the instances of generic declaration g stand for, "u8, u16, f32", in buf. */
void decl_instance_types(const Decl *g, char *buf, size_t n);

/* Node constructors used by the checker and transforms; memory from the arena. */
Node *node_new(Arena *a, NodeKind k, Type t, Loc loc);
/* A deep copy of the tree n (its next chain too) in arena a. Each copy, its children
 * already copied, goes to edit (when given), which may rewrite it in place: the
 * transforms that copy a body (specialise.c, outputs.c). NULL for NULL; on out-of-memory
 * sets *failed and returns NULL. */
Node *ir_clone(Arena *a, const Node *n, void (*edit)(void *ctx, Node *copy), void *ctx, bool *failed);
/* Whether pred holds for a node of the tree n (its next chain and every child, operands
 * and arguments included). */
bool ir_any(const Node *n, bool (*pred)(const Node *n, const void *ctx), const void *ctx);
/* The same for node n and its children only (a statement, not the statements after it). */
bool ir_any_in(const Node *n, bool (*pred)(const Node *n, const void *ctx), const void *ctx);
/* n without the casts around it (NULL for NULL). */
const Node *ir_strip_casts(const Node *n);
/* The pipeline value call pv reads as its callee's first image (image 0, whose size a
 * kernel without size() has), or -1. */
int pipe_first_image(const PipeValue *pv);
Type type_scalar(Scalar s); /* {s, 1} */
Type type_vec(Scalar s, int lanes);
extern const Type TYPE_VOID;

#endif
