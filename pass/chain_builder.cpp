#include "pass/chain_builder.h"

#include <algorithm>

namespace fxfuse::pass {

std::string ChainBuilder::dimsText(const std::string& letters) {
  std::string out = "[";
  for (size_t i = 0; i < letters.size(); ++i) {
    if (i) out += ',';
    out += letters[i];
  }
  return out + "]";
}

int ChainBuilder::input(const std::string& node, spec::DType dtype, const std::string& letters,
                        spec::Space space, const std::vector<int>& order) {
  // A spec declares each slot with one dims list: a tensor read in two layouts (x @ w + x with K == N:
  // [m,k] and [m,n]) takes a slot per layout, and the op receives it twice (so too per order of 4-bit values).
  auto [it, added] = slotOf_.emplace(node + '\x1f' + letters + spec::formatOrder(order), static_cast<int>(slots_.size()));
  if (added) slots_.push_back(node);
  int slot = it->second;
  auto key = std::make_tuple(slot, letters, static_cast<int>(space));
  auto found = inputValue_.find(key);
  if (found != inputValue_.end()) return found->second;
  spec::Value v;
  v.kind = spec::ValueKind::Input;
  v.dtype = dtype;
  v.slot = slot;
  v.dims = letters;
  v.order = order;
  v.space = space;
  spec_.values.push_back(v);
  int id = static_cast<int>(spec_.values.size()) - 1;
  inputValue_.emplace(key, id);
  return id;
}

int ChainBuilder::constant(double c, spec::DType dtype) {
  spec::Value v;
  v.kind = spec::ValueKind::Const;
  v.dtype = dtype;
  // the value a tensor of `dtype` holds: full((), 2.5, dtype=int64) is 2, where the kernels and the CPU
  // reference read the constant as a number (hunt A, session 53)
  v.constant = spec::heldAs(c, dtype);
  spec_.values.push_back(v);
  return static_cast<int>(spec_.values.size()) - 1;
}

int ChainBuilder::tensorConstant(double c, spec::DType dtype) {
  const int id = constant(c, dtype);
  tensorConstants_.insert(id);
  return id;
}

int ChainBuilder::op(const std::string& name, std::vector<int> operands, spec::DType dtype) {
  spec::Value v;
  v.kind = spec::ValueKind::Op;
  v.dtype = dtype;
  v.op = name;
  v.operands = std::move(operands);
  spec_.values.push_back(v);
  return static_cast<int>(spec_.values.size()) - 1;
}

int ChainBuilder::mm(int a, int b, spec::DType dtype) {
  spec::Value v;
  v.kind = spec::ValueKind::Mm;
  v.dtype = dtype;
  v.op = "mm";
  v.operands = {a, b};
  spec_.values.push_back(v);
  return static_cast<int>(spec_.values.size()) - 1;
}

int ChainBuilder::boundValue(const std::string& node) const {
  auto it = bound_.find(node);
  return it == bound_.end() ? -1 : it->second;
}

int ChainBuilder::slotsWith(const std::vector<std::string>& nodes) const {
  int n = numSlots();
  std::vector<std::string> extra;
  for (const std::string& s : nodes) {
    if (std::find(slots_.begin(), slots_.end(), s) == slots_.end() &&
        std::find(extra.begin(), extra.end(), s) == extra.end()) {
      extra.push_back(s);
      ++n;
    }
  }
  return n;
}

void ChainBuilder::expect(const std::string& node, spec::Expect fact) {
  for (const auto& [name, e] : expects_)
    if (name == node && e.kind == fact.kind && e.dtype == fact.dtype && e.sizes == fact.sizes && e.values == fact.values)
      return;
  expects_.emplace_back(node, std::move(fact));
}

spec::ChainSpec ChainBuilder::finalSpec() const {
  spec::ChainSpec s = spec_;
  for (const auto& [name, e] : expects_) {
    s.expects.push_back(e);
    s.expects.back().slot = numSlots() + static_cast<int>(s.expects.size()) - 1;
  }
  return s;
}

std::vector<std::string> ChainBuilder::opInputNodes() const {
  std::vector<std::string> nodes = slots_;
  for (const auto& [name, e] : expects_) nodes.push_back(name);
  return nodes;
}

}  // namespace fxfuse::pass
