/*
 * types.h - the one list of element types: every scalar type of the kernel language,
 * its name, its size in bytes, and the pxl_type it is when it can be a pixel type.
 *
 * Everything else is generated from this table: the IR's Scalar enum (ir.h),
 * scalar_name and scalar_size (ir.c), pxl_type_name and pxl_type_size (image.c) and the
 * Scalar <-> pxl_type maps (ir/value.h). The public pxl.h spells pxl_type out itself (a
 * public header cannot include this one); the last column names its enumerators, and
 * image.c checks at compile time that every one of them has a row.
 */
#ifndef PXL_IMAGE_TYPES_H
#define PXL_IMAGE_TYPES_H

#define PXL_NOT_PIXEL (-1) /* last column of a type images cannot hold */

/* X(scalar tag, name, bytes, pxl_type or PXL_NOT_PIXEL). Order matters to the IR:
 * integer types first, by rank. */
#define PXL_ELEM_TYPES(X)                \
  X(T_VOID, "void", 0, PXL_NOT_PIXEL)    \
  X(T_U8, "u8", 1, PXL_U8)               \
  X(T_I16, "i16", 2, PXL_I16)            \
  X(T_U16, "u16", 2, PXL_U16)            \
  X(T_I32, "i32", 4, PXL_I32)            \
  X(T_U32, "u32", 4, PXL_U32)            \
  X(T_I64, "i64", 8, PXL_NOT_PIXEL)      \
  X(T_U64, "u64", 8, PXL_NOT_PIXEL)      \
  X(T_F32, "f32", 4, PXL_F32)            \
  X(T_F64, "f64", 8, PXL_F64)

#endif
