// Shape facts the Hopper kernel's planner rules share between the variant table
// (config_table.cpp: against eager) and the backend's rule against Inductor (inductor_rule.cpp);
// the tile's work share is sm90::tileWorkShare (hopper_tile_choice.h).
#pragma once

#include "codegen/codegen.h"
#include "codegen/hopper_tile_choice.h"

namespace fxfuse::codegen {

// The multiprocessors the Hopper tile choice plans for (H100/H200 SXM).
constexpr int kHopperSms = 132;

// Whether a decode batch (one matrix of 64 to 256 rows) fills the machine with 64x128 tiles whose
// rows are mostly real (measured: config_table.cpp, kSmallBatchMinTiles).
bool decodeBatchFillsSms(const ProblemShape& s);
// The split-K cluster size the heuristic takes for this shape; 1: none.
int splitKFor(const ProblemShape& s);

}  // namespace fxfuse::codegen
