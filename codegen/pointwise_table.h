// How each spec value becomes CUDA: the op table (op → fp32 expression) and the per-dtype
// rounding, load and store helpers of device/fx_prelude.cuh.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "spec/chain_spec.h"

namespace fxfuse::codegen {

// One operand as the expression sees it: a variable or literal, and its value when it is a
// spec const (some ops specialize on constants: clamp's nan bound, pow's exponent).
struct PointwiseArg {
  std::string expr;
  std::optional<double> constant;
};

// The fp32 CUDA expression computing `op` (before rounding to the result dtype).
// Throws CodegenError for an op the table lacks.
std::string pointwiseExpr(const std::string& op, const std::vector<PointwiseArg>& args);
bool hasPointwiseExpr(const std::string& op);

// C++ type holding a value of dtype d inside a hook: "bool" or "float".
const char* valueCType(spec::DType d);
// Storage element type in memory: "__nv_bfloat16", "signed char", …
const char* storageCType(spec::DType d);
// fx_round_<dtype>(expr): an fp32 result rounded to d, held as valueCType(d).
std::string roundTo(spec::DType d, const std::string& expr);
// Prelude helper names: fx_ld_<dtype>, fx_st_<dtype>.
std::string loadFn(spec::DType d);
std::string storeFn(spec::DType d);
// An fp32 literal equal to (float)v: "0.5f", "-3.0f", "__int_as_float(0x7f800000)".
std::string floatLiteral(double v);

}  // namespace fxfuse::codegen
