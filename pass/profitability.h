// Whether fusing a planned chain pays (PassOptions::onlyProfitable). On CUDA the op runs a chain
// as a fused kernel only where codegen has a fast variant for its problem; anywhere else it
// would evaluate the chain with ATen, i.e. unfused plus the op's own overhead. Such a chain is
// left in the graph (Inductor compiles it) and its GEMM is reported not_profitable: a rewrite
// never makes a model slower.
#pragma once

#include <optional>

#include "pass/gemm_anchor.h"
#include "pass/graph_index.h"
#include "pass/legality.h"
#include "pass/pass_options.h"
#include "spec/chain_spec.h"

namespace fxfuse::pass {

// nullopt (keep the chain) when profitability is not asked, the graph is not on CUDA, a
// symbolic M or batch dim has no size hint, or codegen cannot answer; the op then decides per
// call. (Symbolic K and N never get here: legality rejects them as dynamic_k_or_n.)
std::optional<Rejection> checkProfitable(const GraphIndex& index, const GemmMatch& match,
                                         const spec::ChainSpec& spec, const PassOptions& options);

}  // namespace fxfuse::pass
