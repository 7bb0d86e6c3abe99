// Whether fusing a planned chain pays (PassOptions::onlyProfitable). On CUDA the op runs a chain
// as a fused kernel only where codegen has a fast variant for its problem; anywhere else it runs
// it unfused (cuBLAS + one generated epilogue kernel, or the ATen evaluator where that path does
// not apply) plus the op's own overhead. Such a chain is left in the graph (Inductor or eager
// runs it) and its GEMM is reported not_profitable: a rewrite never makes a model slower.
// Against eager, a chain whose epilogue eager runs as several kernels is kept even so, for the
// op's unfused path, which runs it as one.
#pragma once

#include <optional>
#include <string>

#include "pass/gemm_anchor.h"
#include "pass/graph_index.h"
#include "pass/legality.h"
#include "pass/pass_options.h"
#include "spec/chain_spec.h"

namespace fxfuse::pass {

struct Profitability {
  std::optional<Rejection> rejection;  // the chain stays in the graph
  // Kept (no rejection) for the op's unfused path: why, in words for the report's notes.
  std::optional<std::string> unfusedPath;
};

// No rejection (keep the chain) when profitability is not asked, the graph is not on CUDA, a
// symbolic M or batch dim has no size hint, or codegen cannot answer; the op then decides per
// call. (Symbolic K and N never get here: legality rejects them as dynamic_k_or_n.)
// Against eager, a chain without a fused kernel faster than eager is still kept where the op's
// unfused path was measured faster (profitability.cpp unfusedPathBeatsEager: no prologue, a
// 16-bit product, sm_90, eager running at least codegen::kEagerKernelsTheUnfusedPathBeats elementwise
// kernels after the GEMM; `eagerKernels`: the region's nodes, each one ATen kernel over the
// output); `unfusedPath` says so.
Profitability checkProfitable(const GraphIndex& index, const GemmMatch& match, const spec::ChainSpec& spec,
                              const PassOptions& options, int eagerKernels);

}  // namespace fxfuse::pass
