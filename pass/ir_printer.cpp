#include <cmath>
#include <cstdio>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "pass/ir_text.h"

namespace fxfuse::ir {
namespace {

std::string joinDims(const std::vector<Dim>& dims) {
  std::string out;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) out += ',';
    out += dims[i].str();
  }
  return out;
}

template <typename T, typename Fn>
std::string join(const std::vector<T>& items, Fn&& print) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += ", ";
    out += print(items[i]);
  }
  return out;
}

std::string printArgs(const Node& node) {
  std::string out = join(node.args, printArg);
  for (const NamedArg& kw : node.kwargs) {
    if (!out.empty()) out += ", ";
    out += kw.name + "=" + printArg(kw.value);
  }
  return out;
}

}  // namespace

std::string printFloat(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string quoteString(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string printArg(const Arg& a) {
  switch (a.kind) {
    case Arg::Kind::Value: return "%" + a.s;
    case Arg::Kind::Int: return std::to_string(a.i);
    case Arg::Kind::Float: return printFloat(a.f);
    case Arg::Kind::Bool: return a.b ? "true" : "false";
    case Arg::Kind::None: return "none";
    case Arg::Kind::String: return quoteString(a.s);
    case Arg::Kind::DType: return spec::dtypeName(a.dtype);
    case Arg::Kind::Device: return "device(" + a.s + ")";
    case Arg::Kind::Enum: return "enum(" + a.s + ")";
    case Arg::Kind::Sym: return "sym(" + a.s + ")";
    case Arg::Kind::List: return "[" + join(a.list, printArg) + "]";
    case Arg::Kind::Name: return a.s;
  }
  return "none";
}

std::string printType(const Type& t) {
  switch (t.kind) {
    case Type::Kind::Unknown: return "?";
    case Type::Kind::Sym: return "sym";
    case Type::Kind::None: return "none";
    case Type::Kind::Tuple: return "(" + join(t.elems, printType) + ")";
    case Type::Kind::Tensor: {
      const TensorType& tt = t.tensor;
      const char* dtype = tt.otherDtype.empty() ? spec::dtypeName(tt.dtype) : tt.otherDtype.c_str();
      std::string out = fmt::format("{}[{}]", dtype, joinDims(tt.sizes));
      if (tt.hasStrides) out += "{" + joinDims(tt.strides) + "}";
      if (!tt.device.empty()) out += "@" + tt.device;
      return out;
    }
  }
  return "?";
}

namespace {

std::string printKnownValues(const KnownValues& k) {
  switch (k.kind) {
    case KnownValues::Kind::List: return fmt::format(" values [{}]", fmt::join(k.list, ", "));
    case KnownValues::Kind::KGroups: return fmt::format(" kgroups {}", k.group);
    case KnownValues::Kind::None: break;
  }
  return "";
}

}  // namespace

std::string printGraph(const Graph& g) {
  std::string out = "graph {\n";
  for (const Node& n : g.nodes) {
    std::string rhs;
    switch (n.op) {
      case Node::Op::Placeholder: rhs = "placeholder" + printKnownValues(n.known); break;
      case Node::Op::GetAttr: rhs = "get_attr " + quoteString(n.target) + printKnownValues(n.known); break;
      case Node::Op::Call: rhs = fmt::format("{}({})", n.target, printArgs(n)); break;
    }
    out += fmt::format("  %{} : {} = {}\n", n.name, printType(n.type), rhs);
  }
  out += fmt::format("  output ({})\n}}\n", join(g.outputs, printArg));
  return out;
}

}  // namespace fxfuse::ir
