// GEMM anchors: the ATen matrix products a chain is built around, normalized to one shape:
// A operand, B operand (with the letters naming each of their dims), optional bias with
// beta/alpha, and the node whose value is the product in the op's output shape.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pass/graph_index.h"

namespace fxfuse::pass {

struct GemmMatch {
  int anchor = -1;                  // the GEMM node
  std::string anchorKind;           // "mm", "addmm", "bmm", "baddbmm", "linear", "matmul"
  spec::GemmKind kind = spec::GemmKind::Mm;
  ir::Arg a, b;                     // the operands as the GEMM reads them
  std::string aLetters, bLetters;   // per dim of a / b: 'b','m','k','n'
  std::optional<ir::Arg> bias;      // addmm / baddbmm / linear
  double alpha = 1.0, beta = 1.0;
  // The node holding the product in the op's output shape: the anchor, or for a 3-D linear
  // (`view(x,[B*S,K])` -> mm -> `view(out,[B,S,N])`) the view after it.
  int root = -1;
  std::vector<int> transparentViews;  // the two views of a 3-D linear, absorbed (the second is the root)
  std::vector<ir::Dim> outShape;
  std::string outLetters;           // "mn", "mmn", "bmn", …
  ir::Dim k, n;
  // linear where eager's at::linear calls matmul and then adds the bias (an input of three or more dims that is
  // not contiguous): the product rounded to the output's type before the bias, not once with it as addmm does
  bool biasAfterRoundedProduct = false;
};

// The one list of GEMM op names: the pass's, and Python's through fxfuse._C.is_gemm_op (the report's
// subgraph entries). A target is an ATen op's name, "aten.mm.default".
bool isGemmAnchorTarget(std::string_view target);
// For a matrix product the pass does not match (torch._int_mm, torch._scaled_mm, packed-weight and
// matrix-vector forms, the anchors' other overloads): what it is, in words, so that the report names it;
// "" for any other target. Not einsum (otherGemmOp reads its equation) or dot, a reduction.
std::string otherGemmTarget(std::string_view target);
// Either: a matrix product the report names (fused, or unsupported_gemm_op).
bool isGemmTarget(std::string_view target);

bool isGemmAnchor(const ir::Node& node);
// The node's otherGemmTarget; also an einsum that contracts two operands (export keeps it whole) and the node
// Inductor's weight-only int8 pattern leaves (a Python target, "...woq_int8").
std::string otherGemmOp(const ir::Node& node);

// nullopt with `why` set when the anchor's shapes are not a form the chain spec expresses
// (unknown meta, 1-D operands, broadcasting matmul).
std::optional<GemmMatch> matchGemm(const GraphIndex& index, int anchor, std::string* why);

}  // namespace fxfuse::pass
