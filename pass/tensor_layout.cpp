#include "pass/tensor_layout.h"

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

namespace fxfuse::pass {
namespace {

// A product of sizes: an integer times symbol names (a symbolic size that is not a plain name has no place here).
struct Product {
  int64_t coefficient = 1;
  std::vector<std::string> names;

  // false where d is not a product of numbers and names (a sum `(s0+1)`, a power, a division)
  bool times(const ir::Dim& d) {
    if (!d.symbolic) {
      coefficient *= d.value;
      return true;
    }
    const bool parenthesized = d.text.size() > 2 && d.text.front() == '(' && d.text.back() == ')';
    const std::string text = parenthesized ? d.text.substr(1, d.text.size() - 2) : d.text;
    size_t start = 0;
    while (start <= text.size()) {
      const size_t end = std::min(text.find('*', start), text.size());
      const std::string factor = text.substr(start, end - start);
      if (factor.empty()) return false;  // `**` or a stray `*`
      if (std::all_of(factor.begin(), factor.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        coefficient *= std::stoll(factor);
      } else if (std::all_of(factor.begin(), factor.end(),
                             [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }) &&
                 !std::isdigit(static_cast<unsigned char>(factor.front()))) {
        names.insert(std::upper_bound(names.begin(), names.end(), factor), factor);
      } else {
        return false;
      }
      start = end + 1;
    }
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
