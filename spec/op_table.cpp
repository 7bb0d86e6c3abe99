// The elementwise ops a spec may name and how many operands each takes (docs/spec.md).
// codegen/pointwise_table.cpp gives each of these a CUDA expression; a test keeps the two
// tables in step, so adding an op means one row here and one row there.
#include <cstring>

#include "spec/chain_spec.h"

namespace fxfuse::spec {
namespace {

struct OpInfo {
  const char* name;
  int arity;
  bool comparison;  // result dtype must be bool
};

constexpr OpInfo kOps[] = {
    // unary
    {"neg", 1, false}, {"abs", 1, false}, {"reciprocal", 1, false}, {"sqrt", 1, false},
    {"rsqrt", 1, false}, {"exp", 1, false}, {"log", 1, false}, {"tanh", 1, false},
    {"erf", 1, false}, {"sigmoid", 1, false}, {"sin", 1, false}, {"cos", 1, false},
    {"relu", 1, false}, {"gelu", 1, false}, {"gelu_tanh", 1, false}, {"silu", 1, false},
    {"hardswish", 1, false}, {"convert", 1, false}, {"log1p", 1, false}, {"expm1", 1, false},
    {"sign", 1, false}, {"round", 1, false}, {"floor", 1, false}, {"ceil", 1, false}, {"trunc", 1, false},
    // binary
    {"add", 2, false}, {"sub", 2, false}, {"mul", 2, false}, {"div", 2, false},
    {"maximum", 2, false}, {"minimum", 2, false}, {"pow", 2, false},
    {"lt", 2, true}, {"le", 2, true}, {"gt", 2, true}, {"ge", 2, true},
    {"eq", 2, true}, {"ne", 2, true}, {"leaky_relu", 2, false},
    // ternary
    {"where", 3, false}, {"clamp", 3, false}, {"hardtanh", 3, false},
};

const OpInfo* find(const std::string& op) {
  for (const OpInfo& o : kOps)
    if (op == o.name) return &o;
  return nullptr;
}

}  // namespace

int opArity(const std::string& op) {
  const OpInfo* o = find(op);
  return o ? o->arity : -1;
}

bool isComparisonOp(const std::string& op) {
  const OpInfo* o = find(op);
  return o && o->comparison;
}

std::vector<std::string> allOpNames() {
  std::vector<std::string> names;
  for (const OpInfo& o : kOps) names.emplace_back(o.name);
  return names;
}

}  // namespace fxfuse::spec
