// Builds a spec::ChainSpec value by value, in the canonical order the pass emits: inputs get
// slots in order of first appearance, an input line is emitted once per (slot, dims, space)
// just before its first use, graph nodes map to the value that computes them.
#pragma once

#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <unordered_map>
#include <vector>

#include "spec/chain_spec.h"

namespace fxfuse::pass {

class ChainBuilder {
 public:
  explicit ChainBuilder(spec::GemmKind kind) { spec_.gemm = kind; }

  // `node` is the graph value bound to the slot; `space` only disambiguates dims that fit
  // several spaces (`[]`, `[n]`), so one input line is emitted per use space.
  // `order`: a 'q' input's order of 4-bit values in an element (spec::Value::order; a slot of its own per order).
  int input(const std::string& node, spec::DType dtype, const std::string& letters, spec::Space space,
            const std::vector<int>& order = {});
  int constant(double v, spec::DType dtype);
  // A 0-d tensor of a known value (`full((), v)`, `scalar_tensor(v)`) on the chain's device, as a constant: unlike a
  // number, eager rounds it to a 16-bit common dtype where it rounds a one-element tensor (common_dtype.h).
  int tensorConstant(double v, spec::DType dtype);
  bool isTensorConstant(int value) const { return tensorConstants_.count(value) > 0; }
  int op(const std::string& name, std::vector<int> operands, spec::DType dtype);
  int mm(int a, int b, spec::DType dtype);
  // `value` is the result of one eager addmm call, the values before it its parts (spec::Value::addmmResult).
  void markAddmmResult(int value) { spec_.values[value].addmmResult = true; }
  void addOutput(int value) { spec_.outputs.push_back(value); }
  // The chain was folded on what `node` holds (GPTQ's shift table, its g_idx): the op also receives it and checks
  // `fact` at each call (the spec's `expect` line; its slot is set by finalSpec). Once per node and fact.
  void expect(const std::string& node, spec::Expect fact);
  // The spec with its expect lines, their slots after every input's: what the planner prints.
  spec::ChainSpec finalSpec() const;
  // The graph values the op takes, in slot order: the inputs', then the expected tensors'.
  std::vector<std::string> opInputNodes() const;
  // The group size of k that inputs with a 'g' dim index (a group-wise dequantization's scale); 0: none yet.
  void setKGroup(int size) { spec_.kGroup = size; }
  int kGroup() const { return spec_.kGroup; }

  // Graph node -> the spec value computing it.
  void bind(const std::string& node, int value) { bound_[node] = value; }
  int boundValue(const std::string& node) const;

  int numSlots() const { return static_cast<int>(slots_.size()); }
  // Slots this builder would have after binding `nodes` (for the input limit, before emitting).
  int slotsWith(const std::vector<std::string>& nodes) const;
  const std::vector<std::string>& slotNodes() const { return slots_; }
  const spec::ChainSpec& spec() const { return spec_; }
  spec::DType dtypeOf(int value) const { return spec_.values[value].dtype; }
  // The spec's printed dims form for a letters string: "mk" -> "[m,k]".
  static std::string dimsText(const std::string& letters);

 private:
  spec::ChainSpec spec_;
  std::vector<std::string> slots_;
  std::unordered_map<std::string, int> slotOf_;  // node, dims letters and order -> slot
  std::map<std::tuple<int, std::string, int>, int> inputValue_;
  std::unordered_map<std::string, int> bound_;
  std::set<int> tensorConstants_;
  std::vector<std::pair<std::string, spec::Expect>> expects_;
};

}  // namespace fxfuse::pass
