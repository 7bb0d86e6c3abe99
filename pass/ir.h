// The graph IR: a small SSA graph mirroring an FX graph after AOT autograd (or an
// ExportedProgram's graph). Text form: docs/ir.md (ir_text.h reads and writes it).
// Plain data; the pass builds indices over it (graph_index.h) rather than storing pointers,
// so a Graph copies and compares by value (tests rely on `parse(print(g)) == g`).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "spec/chain_spec.h"

namespace fxfuse::ir {

using spec::DType;

// Dtype names, sizes and kinds come from the spec library (spec::dtypeName, parseDType).

// One size or stride: a concrete integer, or symbolic text (`s0`, or `(s0*4096)` verbatim).
struct Dim {
  bool symbolic = false;
  int64_t value = 0;
  std::string text;  // only when symbolic

  static Dim concrete(int64_t v) { return Dim{false, v, {}}; }
  static Dim sym(std::string t) { return Dim{true, 0, std::move(t)}; }
  bool is(int64_t v) const { return !symbolic && value == v; }
  std::string str() const;
  bool operator==(const Dim& o) const {
    return symbolic == o.symbolic && (symbolic ? text == o.text : value == o.value);
  }
  bool operator!=(const Dim& o) const { return !(*this == o); }
};

struct TensorType {
  DType dtype = DType::F32;
  std::string otherDtype;   // a dtype outside the spec table (`complex64`): kept to reject it
  std::vector<Dim> sizes;
  bool hasStrides = false;  // `{…}` missing means strides unknown
  std::vector<Dim> strides;
  std::string device;       // empty: unknown
  bool onCuda() const { return device.rfind("cuda", 0) == 0; }  // "cuda" or "cuda:N"
  // Whether a kernel launched for a value on `o`'s device can read this one: the same device ("cuda" is
  // "cuda:0"), or either unknown. Eager's ops mix a 0-d CPU tensor with CUDA tensors; a kernel cannot.
  bool sameDeviceAs(const TensorType& o) const;
  bool operator==(const TensorType& o) const {
    return dtype == o.dtype && otherDtype == o.otherDtype && sizes == o.sizes && hasStrides == o.hasStrides &&
           strides == o.strides && device == o.device;
  }
};

struct Type {
  enum class Kind { Unknown, Tensor, Tuple, Sym, None };
  Kind kind = Kind::Unknown;
  TensorType tensor;        // Kind::Tensor
  std::vector<Type> elems;  // Kind::Tuple
  bool isTensor() const { return kind == Kind::Tensor; }
  bool operator==(const Type& o) const {
    return kind == o.kind && (kind != Kind::Tensor || tensor == o.tensor) && elems == o.elems;
  }
};

// A node argument.
struct Arg {
  // Name: a bare identifier that is not a known dtype (the exporter writes dtypes outside the
  // spec table, e.g. `complex64`, that way).
  enum class Kind { Value, Int, Float, Bool, None, String, DType, Device, Enum, Sym, List, Name };
  Kind kind = Kind::None;
  int64_t i = 0;
  double f = 0.0;
  bool b = false;
  DType dtype = DType::F32;
  std::string s;           // Value: node name; String; Device; Enum; Sym: dim text; Name
  std::vector<Arg> list;   // List

  static Arg value(std::string name);
  static Arg integer(int64_t v);
  static Arg real(double v);
  static Arg boolean(bool v);
  static Arg none() { return Arg{}; }
  static Arg string(std::string v);
  static Arg dtypeArg(DType d);
  static Arg listOf(std::vector<Arg> items);

  bool isValue() const { return kind == Kind::Value; }
  bool isNumber() const { return kind == Kind::Int || kind == Kind::Float || kind == Kind::Bool; }
  double number() const { return kind == Kind::Float ? f : kind == Kind::Int ? double(i) : b; }
  // A number that number() returns exactly: chain specs store constants as doubles, which hold the
  // integers to 2^53 (a larger one, 2**60 + 1, would reach the kernel rounded).
  bool isExactNumber() const {
    constexpr int64_t kExactInDouble = int64_t(1) << 53;
    return isNumber() && (kind != Kind::Int || (i >= -kExactInDouble && i <= kExactInDouble));
  }
  bool operator==(const Arg& o) const;
  bool operator!=(const Arg& o) const { return !(*this == o); }
};

struct NamedArg {
  std::string name;
  Arg value;
  bool operator==(const NamedArg& o) const { return name == o.name && value == o.value; }
};

// What the graph's caller knows of a placeholder's or get_attr's contents (an ExportedProgram's integer buffer or
// constant, docs/ir.md): the pass folds on it (GPTQ's shift table and g_idx, pass/word_unpack.h, pass/k_groups.h),
// and the chain's `expect` line makes the op check it at each call (a buffer may be loaded with other values).
struct KnownValues {
  enum class Kind { None, List, KGroups };
  Kind kind = Kind::None;
  std::vector<int64_t> list;  // List: every element, row-major (a small tensor)
  int64_t group = 0;          // KGroups: a 1-D tensor whose element i is i / group (k's group)
  bool operator==(const KnownValues& o) const { return kind == o.kind && list == o.list && group == o.group; }
};

struct Node {
  enum class Op { Placeholder, GetAttr, Call };
  std::string name;
  Type type;
  Op op = Op::Call;
  std::string target;  // Call: `aten.mm.default`; GetAttr: the attribute path
  std::vector<Arg> args;
  std::vector<NamedArg> kwargs;
  KnownValues known;   // Placeholder / GetAttr only

  const Arg* kwarg(std::string_view key) const;
  bool isCall(std::string_view t) const { return op == Op::Call && target == t; }
  bool operator==(const Node& o) const {
    return name == o.name && type == o.type && op == o.op && target == o.target &&
           args == o.args && kwargs == o.kwargs && known == o.known;
  }
};

struct Graph {
  std::vector<Node> nodes;   // topological order
  std::vector<Arg> outputs;  // the `output (...)` line
  bool operator==(const Graph& o) const { return nodes == o.nodes && outputs == o.outputs; }
};

// Calls `fn(name)` for every value referenced by `arg` (recursing into lists).
template <typename Fn>
void forEachValueRef(const Arg& arg, Fn&& fn) {
  if (arg.kind == Arg::Kind::Value) fn(arg.s);
  for (const Arg& a : arg.list) forEachValueRef(a, fn);
}
template <typename Fn>
void forEachValueRef(const Node& node, Fn&& fn) {
  for (const Arg& a : node.args) forEachValueRef(a, fn);
  for (const NamedArg& a : node.kwargs) forEachValueRef(a.value, fn);
}

}  // namespace fxfuse::ir
