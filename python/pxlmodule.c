/*
 * pxlmodule.c - `import pxl`: pxl on NumPy arrays, a CPython extension over the public C
 * API (include/pxl/pxl.h) and nothing else, like the command (cli/pxl.c).
 *
 *   prog = pxl.compile("examples/edges.pxl")      # a path, or source text
 *   edges = prog.edges(gray, t=40)                 # entries as methods
 *   edges = prog.run("edges", gray, t=40, device="cpu")
 *
 * A Program owns a pxl context and a compiled program. Images are NumPy arrays of shape
 * (H, W) or (H, W, C), C 1, 3 or 4, of uint8, int16, uint16, int32, uint32, float32 or
 * float64; they are given to the library without a copy where their rows are
 * contiguous and in native byte order (C-order arrays and views of whole rows: the row
 * pitch may be anything positive), otherwise copied once. Images are passed in order to
 * the entry's image parameters, scalars and arrays by keyword. Results: an image is a new
 * array (a tuple for several); a reduction a Python int or float, argmin/argmax a tuple
 * (value, x, y); a histogram a 1-D array of int64 or float64.
 *
 * The GIL is released while a run computes. A Program's context is not thread-safe, so a
 * lock per Program lets one run at a time in it; threads with Programs of their own run
 * in parallel. Errors are exceptions: pxl.SourceError (file, line, column, message) for
 * kernel source errors, pxl.DeviceError for an absent or failing device, TypeError and
 * ValueError for arguments, pxl.Error for the rest. docs/PYTHON.md is the user's guide.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "pxl/pxl.h"

static PyObject *PxlError, *PxlSourceError, *PxlDeviceError;

/* ---- errors ---- */

/* Raises the exception for library status st, with ctx's message. Returns NULL. */
static PyObject *raise_status(pxl_context *ctx, int st) {
  const char *msg = ctx ? pxl_errmsg(ctx) : "";
  if (!msg || !*msg) msg = pxl_status_name(st);
  if (st == PXL_ESOURCE) {
    /* the first diagnostic: FILE:LINE:COL: error: MESSAGE */
    char file[1024] = "";
    int line = 0, col = 0, used = 0;
    if (sscanf(msg, "%1023[^:]:%d:%d: %n", file, &line, &col, &used) < 3) file[0] = 0, line = col = 0;
    PyObject *exc_args = Py_BuildValue("(s)", msg);
    if (!exc_args) return NULL;
    PyObject *exc = PyObject_Call(PxlSourceError, exc_args, NULL);
    Py_DECREF(exc_args);
    if (!exc) return NULL;
    PyObject *f = PyUnicode_DecodeFSDefault(file), *l = PyLong_FromLong(line), *c = PyLong_FromLong(col);
    if (f && l && c) {
      PyObject_SetAttrString(exc, "file", f);
      PyObject_SetAttrString(exc, "line", l);
      PyObject_SetAttrString(exc, "column", c);
      PyObject_SetAttrString(exc, "message", PyTuple_GET_ITEM(((PyBaseExceptionObject *)exc)->args, 0));
    }
    Py_XDECREF(f), Py_XDECREF(l), Py_XDECREF(c);
    PyErr_SetObject(PxlSourceError, exc);
    Py_DECREF(exc);
    return NULL;
  }
  PyObject *type = st == PXL_EDEVICE || st == PXL_EFAULT ? PxlDeviceError
                   : st == PXL_EARG                       ? PyExc_ValueError
                   : st == PXL_ENOMEM                     ? PyExc_MemoryError
                   : st == PXL_EIO                        ? PyExc_OSError
                                                          : PxlError;
  PyErr_SetString(type, msg);
  return NULL;
}

/* ---- arrays and images ---- */

static int npy_of(pxl_type t) {
  switch (t) {
  case PXL_U8: return NPY_UINT8;
  case PXL_I16: return NPY_INT16;
  case PXL_U16: return NPY_UINT16;
  case PXL_I32: return NPY_INT32;
  case PXL_U32: return NPY_UINT32;
  case PXL_F32: return NPY_FLOAT32;
  default: return NPY_FLOAT64;
  }
}

static int pxl_of(int npy, pxl_type *t) {
  switch (npy) {
  case NPY_UINT8: *t = PXL_U8; return 1;
  case NPY_INT16: *t = PXL_I16; return 1;
  case NPY_UINT16: *t = PXL_U16; return 1;
  case NPY_INT32: *t = PXL_I32; return 1;
  case NPY_UINT32: *t = PXL_U32; return 1;
  case NPY_FLOAT32: *t = PXL_F32; return 1;
  case NPY_FLOAT64: *t = PXL_F64; return 1;
  default: return 0;
  }
}

/* An image over array obj (a new reference to the array that holds its pixels in *keep:
 * obj itself, or a copy where its layout cannot be wrapped). what names the argument. */
static pxl_image *image_of(pxl_context *ctx, PyObject *obj, const char *what, PyArrayObject **keep) {
  *keep = NULL;
  PyArrayObject *a = (PyArrayObject *)PyArray_FROM_OF(obj, NPY_ARRAY_ALIGNED | NPY_ARRAY_NOTSWAPPED);
  if (!a) return NULL;
  int nd = PyArray_NDIM(a);
  pxl_type t;
  if (!pxl_of(PyArray_TYPE(a), &t)) {
    PyErr_Format(PyExc_TypeError, "%s: pxl images are uint8, int16, uint16, int32, uint32, float32 or float64, not %R",
                 what, (PyObject *)PyArray_DESCR(a));
    Py_DECREF(a);
    return NULL;
  }
  npy_intp *shape = PyArray_DIMS(a);
  if ((nd != 2 && nd != 3) || (nd == 3 && shape[2] != 1 && shape[2] != 3 && shape[2] != 4) || shape[0] < 1 ||
      shape[1] < 1 || shape[0] > 65535 || shape[1] > 65535) {
    PyErr_Format(PyExc_ValueError, "%s: an image is (H, W) or (H, W, C) with C 1, 3 or 4, H and W 1 to 65535", what);
    Py_DECREF(a);
    return NULL;
  }
  int h = (int)shape[0], w = (int)shape[1], c = nd == 3 ? (int)shape[2] : 1;
  npy_intp es = PyArray_ITEMSIZE(a), *st = PyArray_STRIDES(a);
  bool rows_ok = (nd == 2 || st[2] == es) && st[1] == es * c && st[0] >= es * c * w;
  if (!rows_ok) { /* one copy, C order */
    PyArrayObject *copy = (PyArrayObject *)PyArray_NewCopy(a, NPY_CORDER);
    Py_DECREF(a);
    if (!copy) return NULL;
    a = copy;
    st = PyArray_STRIDES(a);
  }
  pxl_image *img;
  int rc = pxl_image_wrap(ctx, PyArray_DATA(a), w, h, t, c, (size_t)st[0], &img);
  if (rc) {
    Py_DECREF(a);
    raise_status(ctx, rc);
    return NULL;
  }
  *keep = a;
  return img;
}

/* A new array holding the pixels of host image img. */
static PyObject *array_of(pxl_image *img) {
  int h = pxl_image_height(img), w = pxl_image_width(img), c = pxl_image_channels(img);
  npy_intp dims[3] = {h, w, c};
  PyArrayObject *a = (PyArrayObject *)PyArray_SimpleNew(c == 1 ? 2 : 3, dims, npy_of(pxl_image_type(img)));
  if (!a) return NULL;
  size_t row = (size_t)w * (size_t)c * (size_t)PyArray_ITEMSIZE(a), pitch = pxl_image_pitch(img);
  const char *src = pxl_image_data(img);
  for (int y = 0; y < h; y++) memcpy((char *)PyArray_DATA(a) + (size_t)y * row, src + (size_t)y * pitch, row);
  return (PyObject *)a;
}

/* ---- Program ---- */

typedef struct {
  PyObject_HEAD pxl_context *ctx;
  pxl_program *prog;
  PyThread_type_lock lock;
} Program;

typedef struct {
  PyObject_HEAD Program *owner;
  int index;
} Entry;

static PyTypeObject ProgramType, EntryType;

static const char *const KIND_NAMES[] = {"image", "scalar", "array"};

/* entry i as an Entry object with attributes name, signature, params, outputs */
static PyObject *make_entry(Program *p, int i) {
  Entry *e = PyObject_New(Entry, &EntryType);
  if (!e) return NULL;
  Py_INCREF(p);
  e->owner = p;
  e->index = i;
  return (PyObject *)e;
}

static void entry_dealloc(Entry *e) {
  Py_XDECREF(e->owner);
  PyObject_Free(e);
}

static PyObject *entry_params(Entry *e, void *closure) {
  (void)closure;
  int n = pxl_program_entry_param_count(e->owner->prog, e->index);
  PyObject *t = PyTuple_New(n > 0 ? n : 0);
  for (int k = 0; t && k < n; k++) {
    pxl_param_info pi;
    pxl_program_entry_param(e->owner->prog, e->index, k, &pi);
    PyObject *item = Py_BuildValue("{s:s,s:s,s:s,s:i,s:i}", "name", pi.name, "kind", KIND_NAMES[pi.kind], "type",
                                   pxl_type_name(pi.type), "channels", pi.channels, "length", pi.length);
    if (!item) {
      Py_DECREF(t);
      return NULL;
    }
    PyTuple_SET_ITEM(t, k, item);
  }
  return t;
}

static PyObject *entry_name(Entry *e, void *closure) {
  (void)closure;
  return PyUnicode_FromString(pxl_program_entry_name(e->owner->prog, e->index));
}

static PyObject *entry_signature(Entry *e, void *closure) {
  (void)closure;
  return PyUnicode_FromString(pxl_program_entry_signature(e->owner->prog, e->index));
}

static PyObject *entry_repr(Entry *e) {
  return PyUnicode_FromFormat("<pxl entry %s>", pxl_program_entry_signature(e->owner->prog, e->index));
}

/* Binds keyword value v to parameter `name` of args: a number, or a sequence of numbers
 * for an array parameter, or a border mode text for an image parameter's border
 * ("border_NAME"). */
static int bind_keyword(Program *p, pxl_args *args, const char *name, PyObject *v) {
  int rc;
  if (!strncmp(name, "border_", 7)) {
    const char *mode = PyUnicode_AsUTF8(v);
    if (!mode) return -1;
    rc = pxl_args_border(args, name + 7, mode);
  } else if (PyFloat_Check(v) || PyLong_Check(v) || PyBool_Check(v) || PyArray_IsScalar(v, Number)) {
    double d = PyFloat_AsDouble(v);
    if (d == -1 && PyErr_Occurred()) return -1;
    rc = pxl_args_scalar(args, name, d);
  } else {
    PyArrayObject *a = (PyArrayObject *)PyArray_FROMANY(v, NPY_FLOAT64, 1, 1, NPY_ARRAY_CARRAY_RO);
    if (!a) {
      PyErr_Clear();
      PyErr_Format(PyExc_TypeError, "%s: a number, or a sequence of numbers for an array parameter", name);
      return -1;
    }
    npy_intp n = PyArray_DIM(a, 0);
    rc = n > PXL_MAX_ARRAY ? PXL_EARG : pxl_args_array(args, name, PyArray_DATA(a), (int)n);
    Py_DECREF(a);
    if (n > PXL_MAX_ARRAY) {
      PyErr_Format(PyExc_ValueError, "%s: at most %d values", name, PXL_MAX_ARRAY);
      return -1;
    }
  }
  if (rc) {
    raise_status(p->ctx, rc);
    return -1;
  }
  return 0;
}

/* The Python value of a run's result. */
static PyObject *result_value(pxl_run_result *res) {
  switch (pxl_result_kind_of(res)) {
  case PXL_RESULT_IMAGE: {
    int n = pxl_result_image_count(res);
    if (n == 1) return array_of(pxl_result_image(res));
    PyObject *t = PyTuple_New(n);
    for (int k = 0; t && k < n; k++) {
      PyObject *a = array_of(pxl_result_image_at(res, k));
      if (!a) {
        Py_DECREF(t);
        return NULL;
      }
      PyTuple_SET_ITEM(t, k, a);
    }
    return t;
  }
  case PXL_RESULT_SCALAR: {
    pxl_scalar_result s;
    pxl_result_scalar(res, &s);
    PyObject *v = s.is_float ? PyFloat_FromDouble(s.value) : PyLong_FromLongLong(s.ivalue);
    if (!v || !s.has_pos) return v;
    return Py_BuildValue("(Nii)", v, s.x, s.y);
  }
  default: {
    int n = 0, is_float = 0;
    const double *bins = pxl_result_bins(res, &n, &is_float);
    const int64_t *ibins = pxl_result_bins_i64(res, NULL);
    npy_intp dims[1] = {n};
    PyArrayObject *a = (PyArrayObject *)PyArray_SimpleNew(1, dims, is_float ? NPY_FLOAT64 : NPY_INT64);
    if (a) memcpy(PyArray_DATA(a), is_float ? (const void *)bins : (const void *)ibins, (size_t)n * 8);
    return (PyObject *)a;
  }
  }
}

/* Runs entry `name` (NULL: the default) of p on images (a tuple) and keywords. */
static PyObject *run_entry(Program *p, const char *name, PyObject *images, PyObject *kwargs) {
  const char *device = "auto";
  int threads = 0;
  pxl_args *args = pxl_args_new(p->ctx);
  if (!args) return PyErr_NoMemory();
  Py_ssize_t n = PyTuple_GET_SIZE(images);
  pxl_image **imgs = PyMem_Calloc((size_t)n + 1, sizeof *imgs);
  PyArrayObject **keep = PyMem_Calloc((size_t)n + 1, sizeof *keep);
  PyObject *out = NULL;
  int ok = imgs && keep;
  if (!ok) PyErr_NoMemory();
  for (Py_ssize_t k = 0; ok && k < n; k++) {
    char what[32];
    snprintf(what, sizeof what, "image %zd", k + 1);
    imgs[k] = image_of(p->ctx, PyTuple_GET_ITEM(images, k), what, &keep[k]);
    int rc = imgs[k] ? pxl_args_image(args, NULL, imgs[k]) : PXL_OK;
    if (rc) raise_status(p->ctx, rc);
    ok = imgs[k] && !rc;
  }
  PyObject *key, *val;
  Py_ssize_t pos = 0;
  while (ok && kwargs && PyDict_Next(kwargs, &pos, &key, &val)) {
    const char *kname = PyUnicode_AsUTF8(key);
    if (!kname) ok = 0;
    else if (!strcmp(kname, "device")) ok = (device = PyUnicode_AsUTF8(val)) != NULL;
    else if (!strcmp(kname, "threads")) {
      long t = PyLong_AsLong(val);
      ok = !(t == -1 && PyErr_Occurred());
      threads = (int)t;
      if (ok && (t < 0 || t > 4096)) {
        PyErr_SetString(PyExc_ValueError, "threads: 0 (all cores) to 4096");
        ok = 0;
      }
    } else
      ok = !bind_keyword(p, args, kname, val);
  }
  if (ok) {
    int rc = pxl_set_device(p->ctx, device);
    if (!rc) rc = pxl_set_threads(p->ctx, threads);
    pxl_run_result *res = NULL;
    if (!rc) {
      Py_BEGIN_ALLOW_THREADS PyThread_acquire_lock(p->lock, WAIT_LOCK);
      rc = pxl_run(p->ctx, p->prog, name, args, &res);
      PyThread_release_lock(p->lock);
      Py_END_ALLOW_THREADS
    }
    if (rc)
      raise_status(p->ctx, rc);
    else
      out = result_value(res);
    pxl_result_free(res);
  }
  for (Py_ssize_t k = 0; imgs && k < n; k++) {
    pxl_image_free(imgs[k]);
    if (keep) Py_XDECREF(keep[k]);
  }
  PyMem_Free(imgs);
  PyMem_Free(keep);
  pxl_args_free(args);
  return out;
}

static PyObject *entry_call(Entry *e, PyObject *args, PyObject *kwargs) {
  return run_entry(e->owner, pxl_program_entry_name(e->owner->prog, e->index), args, kwargs);
}

static PyGetSetDef entry_getset[] = {
    {"name", (getter)entry_name, NULL, "the entry's name", NULL},
    {"signature", (getter)entry_signature, NULL, "the entry as declared", NULL},
    {"params", (getter)entry_params, NULL,
     "the parameters in order: dicts of name, kind ('image', 'scalar', 'array'), type, channels, length", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject EntryType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "pxl.Entry",
    .tp_basicsize = sizeof(Entry),
    .tp_dealloc = (destructor)entry_dealloc,
    .tp_repr = (reprfunc)entry_repr,
    .tp_call = (ternaryfunc)entry_call,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An entry point of a pxl program: call it with the images in order and the scalars by keyword\n"
              "(device='auto', threads=0, border_NAME='mirror' also), e.g. prog.edges(gray, t=40).",
    .tp_getset = entry_getset,
};

static void program_dealloc(Program *p) {
  pxl_program_free(p->prog);
  pxl_context_free(p->ctx);
  if (p->lock) PyThread_free_lock(p->lock);
  Py_TYPE(p)->tp_free((PyObject *)p);
}

static PyObject *program_run(Program *p, PyObject *args, PyObject *kwargs) {
  Py_ssize_t n = PyTuple_GET_SIZE(args);
  if (n < 1 || !(PyUnicode_Check(PyTuple_GET_ITEM(args, 0)) || PyTuple_GET_ITEM(args, 0) == Py_None)) {
    PyErr_SetString(PyExc_TypeError, "run(entry, *images, **params): entry is a name or None (the default entry)");
    return NULL;
  }
  PyObject *first = PyTuple_GET_ITEM(args, 0);
  const char *name = first == Py_None ? NULL : PyUnicode_AsUTF8(first);
  if (first != Py_None && !name) return NULL;
  if (name && pxl_program_entry_find(p->prog, name) < 0) {
    PyErr_Format(PyExc_AttributeError, "no entry '%s' in this program", name);
    return NULL;
  }
  PyObject *images = PyTuple_GetSlice(args, 1, n);
  if (!images) return NULL;
  PyObject *r = run_entry(p, name, images, kwargs);
  Py_DECREF(images);
  return r;
}

static PyObject *program_getattro(Program *p, PyObject *attr) {
  PyObject *r = PyObject_GenericGetAttr((PyObject *)p, attr);
  if (r || !PyErr_ExceptionMatches(PyExc_AttributeError)) return r;
  const char *name = PyUnicode_AsUTF8(attr);
  int i = name && *name ? pxl_program_entry_find(p->prog, name) : -1;
  if (i < 0) return NULL; /* the AttributeError stands */
  PyErr_Clear();
  return make_entry(p, i);
}

/* A new tuple each time: Entry objects hold their Program, which must not hold them */
static PyObject *program_entries(Program *p, void *closure) {
  (void)closure;
  int n = pxl_program_entry_count(p->prog);
  PyObject *t = PyTuple_New(n);
  for (int i = 0; t && i < n; i++) {
    PyObject *e = make_entry(p, i);
    if (!e) {
      Py_DECREF(t);
      return NULL;
    }
    PyTuple_SET_ITEM(t, i, e);
  }
  return t;
}

static PyMethodDef program_methods[] = {
    {"run", (PyCFunction)(void (*)(void))program_run, METH_VARARGS | METH_KEYWORDS,
     "run(entry, *images, device='auto', threads=0, **params): runs entry (None: the program's default) on\n"
     "NumPy images (in the order of the entry's image parameters) with scalars and arrays by keyword\n"
     "(border_NAME='mirror' overrides a border); returns an array, a tuple of arrays, a number, (value, x, y)\n"
     "for argmin/argmax, or a histogram's bins."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef program_getset[] = {
    {"entries", (getter)program_entries, NULL, "the entry points, in declaration order", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject ProgramType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "pxl.Program",
    .tp_basicsize = sizeof(Program),
    .tp_dealloc = (destructor)program_dealloc,
    .tp_getattro = (getattrofunc)program_getattro,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A compiled pxl program (pxl.compile); its entries are attributes: prog.blur3(image).",
    .tp_methods = program_methods,
    .tp_getset = program_getset,
};

/* pxl.compile(source, name=None): a path to a .pxl file, or source text */
static PyObject *pxl_compile(PyObject *self, PyObject *args, PyObject *kwargs) {
  (void)self;
  static char *kw[] = {"source", "name", NULL};
  PyObject *src;
  const char *name = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|z", kw, &src, &name)) return NULL;
  PyObject *path = NULL;
  int is_path = 0;
  if (PyUnicode_Check(src)) {
    const char *s = PyUnicode_AsUTF8(src);
    if (!s) return NULL;
    FILE *f = !strchr(s, '\n') && !strchr(s, '{') ? fopen(s, "rb") : NULL;
    if (f) fclose(f);
    is_path = f != NULL;
    if (!is_path && !strchr(s, '\n') && !strchr(s, '{') && strlen(s) < 4096) {
      PyErr_Format(PyExc_FileNotFoundError, "%s: no such file (pass source text with a newline, or a path)", s);
      return NULL;
    }
    Py_INCREF(src);
    path = src;
  } else if (!PyUnicode_FSDecoder(src, &path)) {
    return NULL;
  } else {
    is_path = 1;
  }
  Program *p = PyObject_New(Program, &ProgramType);
  if (!p) {
    Py_DECREF(path);
    return NULL;
  }
  p->ctx = pxl_context_new();
  p->prog = NULL;
  p->lock = PyThread_allocate_lock();
  int rc = p->ctx && p->lock ? PXL_OK : PXL_ENOMEM;
  if (!rc) {
    const char *text = PyUnicode_AsUTF8(path);
    Py_BEGIN_ALLOW_THREADS rc = is_path ? pxl_program_from_file(p->ctx, text, &p->prog)
                                        : pxl_program_from_string(p->ctx, name ? name : "<string>", text, &p->prog);
    Py_END_ALLOW_THREADS
  }
  Py_DECREF(path);
  if (rc) {
    raise_status(p->ctx, rc);
    Py_DECREF(p);
    return NULL;
  }
  return (PyObject *)p;
}

static PyMethodDef module_methods[] = {
    {"compile", (PyCFunction)(void (*)(void))pxl_compile, METH_VARARGS | METH_KEYWORDS,
     "compile(source, name=None) -> Program: compiles a .pxl file (a path) or source text (with a newline);\n"
     "raises pxl.SourceError with file, line, column and message for a kernel error."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "pxl",
                                    "pxl: image-processing kernels on NumPy arrays (docs/PYTHON.md).", -1,
                                    module_methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit_pxl(void) {
  import_array();
  if (PyType_Ready(&ProgramType) < 0 || PyType_Ready(&EntryType) < 0) return NULL;
  PyObject *m = PyModule_Create(&module);
  if (!m) return NULL;
  PxlError = PyErr_NewExceptionWithDoc("pxl.Error", "A failure the pxl library reported.", PyExc_RuntimeError, NULL);
  PxlSourceError = PyErr_NewExceptionWithDoc("pxl.SourceError",
                                             "A kernel source error: attributes file, line, column, message.",
                                             PxlError, NULL);
  PxlDeviceError = PyErr_NewExceptionWithDoc("pxl.DeviceError", "An absent or failing device.", PxlError, NULL);
  if (!PxlError || !PxlSourceError || !PxlDeviceError || PyModule_AddObjectRef(m, "Error", PxlError) < 0 ||
      PyModule_AddObjectRef(m, "SourceError", PxlSourceError) < 0 ||
      PyModule_AddObjectRef(m, "DeviceError", PxlDeviceError) < 0 ||
      PyModule_AddObjectRef(m, "Program", (PyObject *)&ProgramType) < 0 ||
      PyModule_AddStringConstant(m, "__version__", PXL_VERSION_STRING) < 0) {
    Py_DECREF(m);
    return NULL;
  }
  return m;
}
