// printSpec: the canonical text form of docs/spec.md. Because the text is a cache key and a
// serialized op argument, every number and token is printed one way only.
#include <cmath>
#include <cstdio>
#include <string>

#include "spec/chain_spec.h"

namespace fxfuse::spec {

// `%.17g` round-trips every double; inf/nan are spelled out so that the C library's
// "-nan" (sign of a NaN is meaningless here) never reaches the text.
std::string formatConstant(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

namespace {

std::string printValue(const ChainSpec& spec, int i) {
  const Value& v = spec.values[i];
  std::string line = "%" + std::to_string(i) + " = ";
  switch (v.kind) {
    case ValueKind::Input: {
      line += "input " + std::to_string(v.slot) + " " + dtypeName(v.dtype) + " [";
      for (size_t d = 0; d < v.dims.size(); ++d) {
        if (d) line += ",";
        line += v.dims[d];
      }
      line += "]";
      if (!v.order.empty()) line += " " + formatOrder(v.order);
      return line;
    }
    case ValueKind::Const:
      return line + "const " + formatConstant(v.constant) + " : " + dtypeName(v.dtype);
    case ValueKind::Op:
    case ValueKind::Mm:
      line += v.kind == ValueKind::Mm ? std::string("mm") : v.op;
      for (int o : v.operands) line += " %" + std::to_string(o);
      // the mark only where set: the text of every other chain, a cache key, stays as it was
      return line + " : " + dtypeName(v.dtype) + (v.addmmResult ? " addmm" : "");
  }
  return line;
}

}  // namespace

std::string formatOrder(const std::vector<int>& order) {
  std::string text = order.empty() ? "" : "order";
  for (int j : order) text += " " + std::to_string(j);
  return text;
}

std::string formatExpect(const Expect& e) {
  std::string line = "expect " + std::to_string(e.slot) + " " + dtypeName(e.dtype);
  if (e.kind == Expect::Kind::KGroups) return line + " [k] kgroups";
  line += " [";
  for (size_t d = 0; d < e.sizes.size(); ++d) line += (d ? "," : "") + std::to_string(e.sizes[d]);
  line += "] values";
  for (int64_t v : e.values) line += " " + std::to_string(v);
  return line;
}

std::string printSpec(const ChainSpec& spec) {
  std::string out = "fxfuse.chain v1\n";
  out += spec.gemm == GemmKind::Bmm ? "gemm bmm" : "gemm mm";
  // printed only with a group: the text of every chain without one, a cache key, stays as it was
  out += spec.kGroup > 0 ? " kgroup " + std::to_string(spec.kGroup) + "\n" : "\n";
  for (size_t i = 0; i < spec.values.size(); ++i) out += printValue(spec, static_cast<int>(i)) + "\n";
  // none in most chains: their text, a cache key, stays as it was
  for (const Expect& e : spec.expects) out += formatExpect(e) + "\n";
  for (int o : spec.outputs) out += "output %" + std::to_string(o) + "\n";
  return out;
}

int ChainSpec::numInputSlots() const {
  int n = 0;
  for (const Value& v : values)
    if (v.kind == ValueKind::Input && v.slot + 1 > n) n = v.slot + 1;
  return n;
}

int ChainSpec::numOpInputs() const { return numInputSlots() + static_cast<int>(expects.size()); }

int ChainSpec::mmIndex() const {
  for (size_t i = 0; i < values.size(); ++i)
    if (values[i].kind == ValueKind::Mm) return static_cast<int>(i);
  return -1;
}

}  // namespace fxfuse::spec
