// Which region values the fused op returns. A value is an output when something outside the
// region reads it. With extra outputs allowed, up to `maxOutputs` such values are returned;
// past the limit, or with extra outputs off, the region ends at the earliest value read
// outside (its descendants leave the region). Each decision is written to `notes`.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "pass/gemm_anchor.h"
#include "pass/pass_options.h"

namespace fxfuse::pass {

struct OutputChoice {
  std::vector<int> nodes;    // the (possibly shrunk) epilogue nodes
  std::vector<int> outputs;  // output node ids, topological
  std::vector<std::string> notes;
  std::vector<std::string> cuts;  // the notes of the decisions that shrank the region (the output limit, extra_outputs)
};

// Whether `node` is read outside `region`: by the graph's output or another node, export's metadata check beside a
// `.to()` aside (the rewrite drops it with the value it checks: aten_ops.h isMetadataAssert).
bool usedOutside(const GraphIndex& index, int node, const std::set<int>& region);

OutputChoice chooseOutputs(const GraphIndex& index, const GemmMatch& match, std::vector<int> nodes,
                           const PassOptions& options);

}  // namespace fxfuse::pass
