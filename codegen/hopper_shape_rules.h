// Shape facts the Hopper kernel's planner rules share between the variant table
// (config_table.cpp: against eager) and the backend's rule against Inductor (inductor_rule.cpp).
#pragma once

#include "codegen/codegen.h"
#include "codegen/tma_desc.h"

namespace fxfuse::codegen {

// The multiprocessors the Hopper tile choice plans for (H100/H200 SXM).
constexpr int kHopperSms = 132;

// Whether a decode batch (one matrix of 64 to 256 rows) fills the machine with 64x128 tiles whose
// rows are mostly real (measured: config_table.cpp, kSmallBatchMinTiles).
bool decodeBatchFillsSms(const ProblemShape& s);
// The split-K cluster size the heuristic takes for this shape; 1: none.
int splitKFor(const ProblemShape& s);
// The share of the tile slots' work that is real: the real outputs over the area of the tile's
// rounds of SMs, times the tile's throughput. 1: every slot of every round busy at 128x256's rate.
double tileWorkShare(const ProblemShape& s, const sm90::GemmConfig& g);

}  // namespace fxfuse::codegen
