#pragma once

#include "pass/ir.h"

namespace fxfuse::pass {

// Whether a tensor's strides, as the graph gives them, are the contiguous (row-major) ones. Some eager ops compute
// differently by layout: at::linear calls addmm (the product and bias rounded once) for a contiguous input of three
// or more dims, and matmul then add (the product rounded first) for any other (gemm_anchor.cpp).
enum class Contiguity { Contiguous, NotContiguous, Unknown };

// Unknown where the strides are absent or symbolic in a form this does not compare: each stride must equal the
// product of the sizes after it (dims of size 1 excepted), written as the IR writes a product of sizes (a number
// times symbol names in name order, python/fxfuse/ir_export.py format_dim). A size that is a sum (`s0+1`) or
// another expression than a product leaves the dims before it Unknown.
Contiguity contiguity(const ir::TensorType& t);

}  // namespace fxfuse::pass
