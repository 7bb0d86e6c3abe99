// Applies fusion plans to a graph:
//   %a = …; %mm = aten.mm(…); %r = aten.relu(%mm); use(%r)
// becomes
//   %fxfuse_chain_0 : (bf16[…]) = fxfuse.gemm_chain.default([%x, %w], "fxfuse.chain v1\n…")
//   %r : bf16[…] = operator.getitem(%fxfuse_chain_0, 0); use(%r)
// Each getitem keeps the name of the output it stands for, so outside users need no edit.
// Nodes that only fed replaced nodes and are now unused are removed.
#pragma once

#include <string>
#include <vector>

#include "pass/chain_planner.h"

namespace fxfuse::pass {

// `names[i]` is the name chosen for plan i's op node ("fxfuse_chain_<i>", made unique).
ir::Graph applyPlans(const GraphIndex& index, const std::vector<const FusionPlan*>& plans,
                     std::vector<std::string>* names);

}  // namespace fxfuse::pass
