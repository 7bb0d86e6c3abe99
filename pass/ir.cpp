#include "pass/ir.h"

#include <cmath>
#include <cstring>

namespace fxfuse::ir {
std::string Dim::str() const { return symbolic ? text : std::to_string(value); }

bool TensorType::sameDeviceAs(const TensorType& o) const {
  auto canonical = [](const std::string& d) { return d == "cuda" ? std::string("cuda:0") : d; };
  return device.empty() || o.device.empty() || canonical(device) == canonical(o.device);
}

Arg Arg::value(std::string name) {
  Arg a;
  a.kind = Kind::Value;
  a.s = std::move(name);
  return a;
}
Arg Arg::integer(int64_t v) {
  Arg a;
  a.kind = Kind::Int;
  a.i = v;
  return a;
}
Arg Arg::real(double v) {
  Arg a;
  a.kind = Kind::Float;
  a.f = v;
  return a;
}
Arg Arg::boolean(bool v) {
  Arg a;
  a.kind = Kind::Bool;
  a.b = v;
  return a;
}
Arg Arg::string(std::string v) {
  Arg a;
  a.kind = Kind::String;
  a.s = std::move(v);
  return a;
}
Arg Arg::dtypeArg(DType d) {
  Arg a;
  a.kind = Kind::DType;
  a.dtype = d;
  return a;
}
Arg Arg::listOf(std::vector<Arg> items) {
  Arg a;
  a.kind = Kind::List;
  a.list = std::move(items);
  return a;
}

// Floats compare by bits so that -0.0 != 0.0 round-trips are caught; every NaN is equal
// because the text form has a single `nan`.
static bool sameFloat(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::memcmp(&a, &b, sizeof a) == 0;
}

bool Arg::operator==(const Arg& o) const {
  if (kind != o.kind) return false;
  switch (kind) {
    case Kind::Int: return i == o.i;
    case Kind::Float: return sameFloat(f, o.f);
    case Kind::Bool: return b == o.b;
    case Kind::None: return true;
    case Kind::DType: return dtype == o.dtype;
    case Kind::List: return list == o.list;
    default: return s == o.s;
  }
}

const Arg* Node::kwarg(std::string_view key) const {
  for (const NamedArg& a : kwargs)
    if (a.name == key) return &a.value;
  return nullptr;
}

}  // namespace fxfuse::ir
