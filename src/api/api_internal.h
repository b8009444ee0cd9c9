/*
 * api_internal.h - for tests and tools inside the project: the IR behind a public handle.
 */
#ifndef PXL_API_INTERNAL_H
#define PXL_API_INTERNAL_H

#include "ir/ir.h"
#include "pxl/pxl.h"

/* The checked, analysed program behind prog (owned by prog). */
const Program *pxl_program_ir(const pxl_program *prog);

/* Pipeline runs recorded as CUDA graphs by ctx's CUDA backend (0 without one). */
int pxl_context_cuda_graphs(const pxl_context *ctx);

#endif
