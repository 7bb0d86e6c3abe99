#include "pass/tensor_layout.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

namespace fxfuse::pass {
namespace {

// A product of sizes: an integer times symbol names (a symbolic size that is not a plain name has no place here).
struct Product {
  int64_t coefficient = 1;
  std::vector<std::string> names;

  bool times(const ir::Dim& d) {
    if (!d.symbolic) {
      coefficient *= d.value;
      return true;
    }
    const bool plainName = !d.text.empty() && d.text.front() != '(';
    if (!plainName) return false;
    names.insert(std::upper_bound(names.begin(), names.end(), d.text), d.text);
    return true;
  }
  // As sympy prints it and format_dim wraps it: `4096`, `s0`, `(4096*s1)`, `(s0*s1)`.
  ir::Dim dim() const {
    if (names.empty()) return ir::Dim::concrete(coefficient);
    std::string text = coefficient == 1 ? "" : std::to_string(coefficient) + "*";
    for (size_t i = 0; i < names.size(); ++i) text += (i ? "*" : "") + names[i];
    return ir::Dim::sym(coefficient == 1 && names.size() == 1 ? text : "(" + text + ")");
  }
};

}  // namespace

Contiguity contiguity(const ir::TensorType& t) {
  if (!t.hasStrides || t.strides.size() != t.sizes.size()) return Contiguity::Unknown;
  Product expected;        // the contiguous stride of the dim at hand: the product of the sizes after it
  bool known = true;       // false past a size that is a symbolic expression
  bool mismatch = false;   // a symbolic stride written otherwise than `expected`: maybe the same number
  for (size_t i = t.sizes.size(); i-- > 0;) {
    const ir::Dim& size = t.sizes[i];
    if (size.is(1)) continue;  // any stride: the dim has one index
    if (!known) return Contiguity::Unknown;
    const ir::Dim want = expected.dim();
    if (t.strides[i] != want) {
      if (!want.symbolic && !t.strides[i].symbolic) return Contiguity::NotContiguous;
      mismatch = true;
    }
    known = expected.times(size);
  }
  return mismatch ? Contiguity::Unknown : Contiguity::Contiguous;
}

}  // namespace fxfuse::pass
