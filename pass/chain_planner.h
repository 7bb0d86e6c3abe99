// Plans one chain around one GEMM: match the anchor, fold operand prologues, check legality,
// grow the epilogue, choose outputs, and emit the spec. Either a FusionPlan or a named
// rejection; never both, never neither.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "pass/graph_index.h"
#include "pass/legality.h"
#include "pass/pass_options.h"

namespace fxfuse::pass {

struct FusionPlan {
  std::vector<int> replaced;        // nodes the op replaces (outputs included), topological
  std::vector<std::string> inputs;  // op inputs, slot order
  std::vector<int> outputs;         // one per spec `output` line
  spec::ChainSpec spec;
  std::string specText;
  std::string chain;                // "addmm+bias → gelu_tanh → convert"
  // Kept only for the op's unfused path (cuBLAS + one epilogue kernel; pass/profitability.h):
  // no fused kernel beats eager for it, but eager runs its epilogue as several kernels.
  bool unfusedPath = false;
};

struct GemmOutcome {
  std::string gemm;                 // the anchor's node name
  std::optional<FusionPlan> plan;
  Rejection rejection;              // when !plan
  std::vector<std::string> notes;
  // the prologue ops left outside ("B's prologue stops at %v (aten.view.default): ..."), also among the notes: the
  // report line of a fused chain names them
  std::vector<std::string> prologueStops;
};

// `claimed[i]`: node i already belongs to an earlier plan.
GemmOutcome planChain(const GraphIndex& index, int anchor, const std::vector<bool>& claimed,
                      const PassOptions& options);

}  // namespace fxfuse::pass
