// Spec dtypes ↔ torch scalar types.
#pragma once

#include <c10/core/ScalarType.h>
#include <c10/util/Exception.h>

#include "spec/chain_spec.h"

namespace fxfuse::runtime {

inline c10::ScalarType toScalarType(spec::DType d) {
  switch (d) {
    case spec::DType::Bool: return c10::kBool;
    case spec::DType::I8: return c10::kChar;
    case spec::DType::U8: return c10::kByte;
    case spec::DType::I32: return c10::kInt;
    case spec::DType::I64: return c10::kLong;
    case spec::DType::F16: return c10::kHalf;
    case spec::DType::BF16: return c10::kBFloat16;
    case spec::DType::F32: return c10::kFloat;
    case spec::DType::F64: return c10::kDouble;
    case spec::DType::F8E4M3: return c10::kFloat8_e4m3fn;
    case spec::DType::F8E5M2: return c10::kFloat8_e5m2;
  }
  TORCH_INTERNAL_ASSERT(false, "unknown spec dtype ", static_cast<int>(d));
}

}  // namespace fxfuse::runtime
