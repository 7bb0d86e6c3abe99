#include "pass/common_dtype.h"

#include <algorithm>
#include <optional>

namespace fxfuse::pass {
namespace {

// The parts of a value torch.result_type weighs: its category (bool < integer < floating) and its tier (a tensor
// with dims, then a 0-d tensor, then a number).
int category(spec::DType d) { return d == spec::DType::Bool ? 0 : spec::isFloating(d) ? 2 : 1; }

int tier(const ChainBuilder& builder, int id) {
  const spec::Value& v = builder.spec().values[id];
  if (v.kind == spec::ValueKind::Const) return builder.isTensorConstant(id) ? 1 : 2;
  return v.kind == spec::ValueKind::Input && v.dims.empty() ? 1 : 0;
}

// Eager's common dtype of a comparison's operands, where it is 16-bit: the highest category among them, its type
// from the highest tier holding that category, the types within that tier promoted (bf16 beside f16 is f32, as is
// a float number alone: the default dtype). Numbers were typed by their caller; only their category counts.
std::optional<spec::DType> comparisonCommon16(const ChainBuilder& builder, const std::vector<int>& operands,
                                               size_t first) {
  int topCategory = -1, topTier = 3;
  for (size_t i = first; i < operands.size(); ++i)
    topCategory = std::max(topCategory, category(builder.dtypeOf(operands[i])));
  for (size_t i = first; i < operands.size(); ++i)
    if (category(builder.dtypeOf(operands[i])) == topCategory) topTier = std::min(topTier, tier(builder, operands[i]));
  if (topTier == 2) return std::nullopt;
  std::optional<spec::DType> common;
  for (size_t i = first; i < operands.size(); ++i) {
    const int id = operands[i];
    if (category(builder.dtypeOf(id)) != topCategory || tier(builder, id) != topTier) continue;
    if (common && *common != builder.dtypeOf(id)) return std::nullopt;
    common = builder.dtypeOf(id);
  }
  if (!common || !spec::isHalfFloat(*common)) return std::nullopt;
  return common;
}

}  // namespace

void convertToCommonDtype(ChainBuilder& builder, const ir::TensorType& result, std::vector<int>* operands,
                          CpuScalars cpuScalars, size_t first) {
  // A 16-bit result is the common dtype; a comparison's (a bool result) is its operands'. Any other result is
  // wider than 16 bits, and so is the common dtype: nothing is rounded to a 16-bit type.
  std::optional<spec::DType> common;
  if (spec::isHalfFloat(result.dtype)) common = result.dtype;
  else if (result.dtype == spec::DType::Bool) common = comparisonCommon16(builder, *operands, first);
  if (!common) return;
  const bool scalarsConverted = result.device != "cpu" || cpuScalars == CpuScalars::Converted;
  for (size_t i = first; i < operands->size(); ++i) {
    const int id = (*operands)[i];
    const spec::Value& v = builder.spec().values[id];
    if (v.dtype == *common) continue;
    const bool tensorConstant = builder.isTensorConstant(id);
    if (v.kind == spec::ValueKind::Const && !tensorConstant) continue;  // a number: typed by the caller
    const bool oneElement = tensorConstant || spec::isOneElementInput(v);
    // A float with dims is of the common type: with a 16-bit common type, one of another type would have made it
    // wider. Only a 0-d float (an input or a tensor constant) is rounded to it.
    const bool zeroDim = tensorConstant || (v.kind == spec::ValueKind::Input && v.dims.empty());
    if (spec::isFloating(v.dtype) && !zeroDim) continue;
    if (oneElement && !scalarsConverted) continue;
    (*operands)[i] = builder.op("convert", {id}, *common);
  }
}

}  // namespace fxfuse::pass
