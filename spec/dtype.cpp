// DType helpers: names as in docs/spec.md, byte sizes, floating-ness.
#include "spec/chain_spec.h"

#include <cmath>

namespace fxfuse::spec {
namespace {

struct DTypeInfo {
  DType dtype;
  const char* name;
  int bytes;
  bool floating;
};

// One row per dtype; every other helper reads this table.
constexpr DTypeInfo kDTypes[] = {
    {DType::Bool, "bool", 1, false},     {DType::I8, "i8", 1, false},
    {DType::U8, "u8", 1, false},         {DType::I32, "i32", 4, false},
    {DType::I64, "i64", 8, false},       {DType::F16, "f16", 2, true},
    {DType::BF16, "bf16", 2, true},      {DType::F32, "f32", 4, true},
    {DType::F64, "f64", 8, true},        {DType::F8E4M3, "f8e4m3", 1, true},
    {DType::F8E5M2, "f8e5m2", 1, true},
};

const DTypeInfo& info(DType d) {
  for (const DTypeInfo& i : kDTypes)
    if (i.dtype == d) return i;
  throw std::logic_error("fxfuse internal error: DType without a table row (please report a bug)");
}

}  // namespace

const char* dtypeName(DType d) { return info(d).name; }

bool parseDType(const std::string& s, DType* out) {
  for (const DTypeInfo& i : kDTypes) {
    if (s == i.name) {
      if (out) *out = i.dtype;
      return true;
    }
  }
  return false;
}

int dtypeBytes(DType d) { return info(d).bytes; }

bool isFloating(DType d) { return info(d).floating; }
bool isHalfFloat(DType d) { return d == DType::BF16 || d == DType::F16; }

double heldAs(double v, DType d) {
  if (d == DType::Bool) return v != 0 ? 1.0 : 0.0;  // NaN too is true
  if (isFloating(d) || !std::isfinite(v)) return v;
  const double t = std::trunc(v);
  auto wrap = [t](double modulus, double lowest) { return lowest + std::fmod(std::fmod(t - lowest, modulus) + modulus, modulus); };
  switch (d) {
    case DType::I8: return wrap(256.0, -128.0);
    case DType::U8: return wrap(256.0, 0.0);
    case DType::I32: return wrap(4294967296.0, -2147483648.0);
    default: return t;  // I64: a double holds it only to 2^53, where the pass keeps such constants out
  }
}

}  // namespace fxfuse::spec
