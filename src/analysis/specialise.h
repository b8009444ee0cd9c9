/*
 * specialise.h - declarations specialised on the values of scalar parameters at run time.
 *
 * A kernel whose window size comes from a parameter (`for (dy = -r; dy <= r; dy++) ...
 * in(dx, dy)`) cannot be bounded when compiled: the analysis calls it a gather. Its
 * integer scalar parameters are marked (Decl.spec_mask), and when it runs, the runtime
 * asks for the declaration specialised on their values: a copy of the tree with those
 * parameters replaced by the numbers, analysed again, so that it is a window of known
 * size with its border code, tiles and separable passes. The interpreter gives the same
 * results either way (a parameter and the literal of its value are the same value).
 */
#ifndef PXL_SPECIALISE_H
#define PXL_SPECIALISE_H

#include "ir/value.h"

/* The most specialisations of one declaration (later values run the generic code) and the
 * widest window a specialisation may have on each side of the pixel. */
#define SPEC_MAX 64
#define SPEC_MAX_RADIUS 64

/* Marks D's integer scalar parameters for specialisation when D is a gather whose
 * relative reads could not be bounded (sets D->spec_mask). */
void spec_mark(Decl *D);
/* The declaration to run for these scalar values: D itself when D is not marked, or when
 * specialising does not give a bounded window (N2P or P2P; or fails for memory); else the
 * specialisation, made once per distinct values and kept in D's program. */
const Decl *spec_for(const Decl *D, const Lane *scalars);

#endif
