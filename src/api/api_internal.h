/*
 * api_internal.h - for tests and tools inside the project: the IR behind a public handle.
 */
#ifndef PXL_API_INTERNAL_H
#define PXL_API_INTERNAL_H

#include "ir/ir.h"
#include "pxl/pxl.h"

/* The checked, analysed program behind prog (owned by prog). */
const Program *pxl_program_ir(const pxl_program *prog);

#endif
