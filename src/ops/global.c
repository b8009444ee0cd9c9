/*
 * global.c - the table from the language's global operators (ir.h PXL_GLOBALS) to the
 * operator library's functions: which function, with which metric or connectivity.
 */
#include "ops/global.h"

int ops_global(GlobalOp g, const struct pxl_image *const *maps, const OpsRun *run, struct pxl_image *out, Err *err) {
  const struct pxl_image *map = maps[0];
  switch (g) {
  case G_EDT: return ops_distance(map, OPS_L2, run, out, err);
  case G_CITYBLOCK: return ops_distance(map, OPS_L1, run, out, err);
  case G_CHESSBOARD: return ops_distance(map, OPS_LINF, run, out, err);
  case G_NEAREST: return ops_nearest(map, run, out, err);
  case G_LABEL4: return ops_label(map, 4, run, out, NULL, err);
  case G_LABEL8: return ops_label(map, 8, run, out, NULL, err);
  case G_RECONSTRUCT4: return ops_reconstruct(maps[0], maps[1], false, 4, run, out, err);
  case G_RECONSTRUCT8: return ops_reconstruct(maps[0], maps[1], false, 8, run, out, err);
  case G_RECONSTRUCT_ERODE4: return ops_reconstruct(maps[0], maps[1], true, 4, run, out, err);
  case G_RECONSTRUCT_ERODE8: return ops_reconstruct(maps[0], maps[1], true, 8, run, out, err);
  case G_FILL4: return ops_fill(map, 4, run, out, err);
  case G_FILL8: return ops_fill(map, 8, run, out, err);
  case G_REGIONAL_MIN4: return ops_regional(map, false, 4, run, out, err);
  case G_REGIONAL_MIN8: return ops_regional(map, false, 8, run, out, err);
  case G_REGIONAL_MAX4: return ops_regional(map, true, 4, run, out, err);
  case G_REGIONAL_MAX8: return ops_regional(map, true, 8, run, out, err);
  case G_WATERSHED4: return ops_watershed(maps[0], maps[1], 4, run, out, err);
  case G_WATERSHED8: return ops_watershed(maps[0], maps[1], 8, run, out, err);
  case G_WATERSHED_MINIMA4: return ops_watershed_minima(map, 4, false, run, out, err);
  case G_WATERSHED_MINIMA8: return ops_watershed_minima(map, 8, false, run, out, err);
  case G_WATERSHED_LINES4: return ops_watershed_lines(maps[0], maps[1], 4, run, out, err);
  case G_WATERSHED_LINES8: return ops_watershed_lines(maps[0], maps[1], 8, run, out, err);
  case G_WATERSHED_MINIMA_LINES4: return ops_watershed_minima(map, 4, true, run, out, err);
  case G_WATERSHED_MINIMA_LINES8: return ops_watershed_minima(map, 8, true, run, out, err);
  case G_COUNT: break;
  }
  return err_set(err, PXL_ERROR, "internal: unknown global operator %d", (int)g);
}
