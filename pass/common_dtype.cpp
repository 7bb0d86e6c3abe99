#include "pass/common_dtype.h"

#include <optional>

namespace fxfuse::pass {

bool dimensioned16(const spec::ChainSpec& spec, int id) {
  const spec::Value& v = spec.values[id];
  const bool hasDims = v.kind == spec::ValueKind::Op || v.kind == spec::ValueKind::Mm ||
                       (v.kind == spec::ValueKind::Input && !v.dims.empty());
  return hasDims && spec::isHalfFloat(v.dtype);
}

void convertToCommonDtype(ChainBuilder& builder, const ir::TensorType& result, std::vector<int>* operands,
                          CpuScalars cpuScalars, size_t first) {
  const spec::ChainSpec& spec = builder.spec();
  std::optional<spec::DType> common;
  if (spec::isHalfFloat(result.dtype)) common = result.dtype;
  for (size_t i = first; i < operands->size() && !common; ++i)  // a comparison: its 16-bit operand's type
    if (dimensioned16(spec, (*operands)[i])) common = builder.dtypeOf((*operands)[i]);
  if (!common) return;
  const bool scalarsConverted = result.device != "cpu" || cpuScalars == CpuScalars::Rounded;
  for (size_t i = first; i < operands->size(); ++i) {
    const spec::Value& v = spec.values[(*operands)[i]];
    if (v.kind == spec::ValueKind::Const || v.dtype == *common) continue;
    const bool oneElement = spec::isOneElementInput(v);
    // a float with dims of another type would have been the common type (bf16 beside f16 is f32)
    if (spec::isFloating(v.dtype) && !(oneElement && v.dims.empty())) continue;
    if (oneElement && !scalarsConverted) continue;
    (*operands)[i] = builder.op("convert", {(*operands)[i]}, *common);
  }
}

}  // namespace fxfuse::pass
