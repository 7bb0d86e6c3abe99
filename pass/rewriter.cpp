#include "pass/rewriter.h"

#include <algorithm>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "pass/aten_ops.h"

namespace fxfuse::pass {
namespace {

std::string uniqueName(const GraphIndex& index, int i) {
  std::string base = "fxfuse_chain_" + std::to_string(i), name = base;
  for (int n = 1; index.find(name) >= 0; ++n) name = base + "_" + std::to_string(n);
  return name;
}

// The op node and one getitem per output, placed where the first output was.
std::vector<ir::Node> fusedNodes(const GraphIndex& index, const FusionPlan& plan, const std::string& name) {
  ir::Node op;
  op.name = name;
  op.op = ir::Node::Op::Call;
  op.target = "fxfuse.gemm_chain.default";
  op.type.kind = ir::Type::Kind::Tuple;
  std::vector<ir::Arg> inputs;
  for (const std::string& in : plan.inputs) inputs.push_back(ir::Arg::value(in));
  op.args = {ir::Arg::listOf(inputs), ir::Arg::string(plan.specText)};
  std::vector<ir::Node> out{op};
  for (size_t i = 0; i < plan.outputs.size(); ++i) {
    const ir::Node& orig = index.node(plan.outputs[i]);
    out[0].type.elems.push_back(orig.type);
    ir::Node get;
    get.name = orig.name;
    get.type = orig.type;
    get.target = "operator.getitem";
    get.args = {ir::Arg::value(name), ir::Arg::integer(static_cast<int64_t>(i))};
    out.push_back(get);
  }
  return out;
}

// Stable topological order: original order, except that a node's operands defined later
// (an extra input computed after the first output) are pulled in front of it.
std::vector<ir::Node> topoSorted(std::vector<ir::Node> nodes) {
  std::unordered_map<std::string, size_t> pos;
  for (size_t i = 0; i < nodes.size(); ++i) pos[nodes[i].name] = i;
  std::vector<char> state(nodes.size(), 0);  // 0 new, 1 on stack, 2 emitted
  std::vector<ir::Node> out;
  for (size_t root = 0; root < nodes.size(); ++root) {
    std::vector<size_t> stack{root};
    while (!stack.empty()) {
      size_t i = stack.back();
      if (state[i] == 2) {
        stack.pop_back();
        continue;
      }
      state[i] = 1;
      bool pending = false;
      ir::forEachValueRef(nodes[i], [&](const std::string& ref) {
        auto it = pos.find(ref);
        if (it != pos.end() && state[it->second] == 0 && !pending) {
          stack.push_back(it->second);
          pending = true;
        }
      });
      if (pending) continue;
      stack.pop_back();
      state[i] = 2;
      out.push_back(nodes[i]);
    }
  }
  return out;
}

// Removes nodes left without users by the rewrite (never placeholders, writes, or nodes that
// were already unused before it).
void removeDeadNodes(ir::Graph* g, const std::unordered_set<std::string>& deadBefore) {
  std::unordered_map<std::string, int> uses;
  auto count = [&](const std::string& ref) { ++uses[ref]; };
  for (const ir::Node& n : g->nodes) ir::forEachValueRef(n, count);
  for (const ir::Arg& a : g->outputs) ir::forEachValueRef(a, count);
  std::vector<bool> keep(g->nodes.size(), true);
  for (size_t i = g->nodes.size(); i-- > 0;) {
    const ir::Node& n = g->nodes[i];
    if (n.op != ir::Node::Op::Call || isMutating(n) || uses[n.name] > 0 || deadBefore.count(n.name)) continue;
    keep[i] = false;
    ir::forEachValueRef(n, [&](const std::string& ref) { --uses[ref]; });
  }
  std::vector<ir::Node> kept;
  for (size_t i = 0; i < g->nodes.size(); ++i)
    if (keep[i]) kept.push_back(std::move(g->nodes[i]));
  g->nodes = std::move(kept);
}

}  // namespace

ir::Graph applyPlans(const GraphIndex& index, const std::vector<const FusionPlan*>& plans,
                     std::vector<std::string>* names) {
  std::unordered_set<std::string> deadBefore;
  for (int i = 0; i < index.size(); ++i)
    if (index.users(i).empty() && !index.usedByGraphOutput(i)) deadBefore.insert(index.node(i).name);

  std::set<int> removed;
  std::unordered_map<int, size_t> firstOutput;  // node id -> plan placed before it
  for (size_t p = 0; p < plans.size(); ++p) {
    removed.insert(plans[p]->replaced.begin(), plans[p]->replaced.end());
    firstOutput[*std::min_element(plans[p]->outputs.begin(), plans[p]->outputs.end())] = p;
    names->push_back(uniqueName(index, static_cast<int>(p)));
  }
  ir::Graph g;
  g.outputs = index.graph().outputs;
  for (int i = 0; i < index.size(); ++i) {
    auto at = firstOutput.find(i);
    if (at != firstOutput.end()) {
      for (ir::Node& n : fusedNodes(index, *plans[at->second], (*names)[at->second])) g.nodes.push_back(std::move(n));
    }
    if (removed.count(i)) continue;
    // a metadata check of a value the fused op replaced goes with it (aten_ops.h isMetadataAssert)
    if (isMetadataAssert(index.node(i))) {
      const std::vector<int> checked = index.operands(i);
      if (std::any_of(checked.begin(), checked.end(), [&](int p) { return removed.count(p) > 0; })) continue;
    }
    g.nodes.push_back(index.node(i));
  }
  g.nodes = topoSorted(std::move(g.nodes));
  removeDeadNodes(&g, deadBefore);
  return g;
}

}  // namespace fxfuse::pass
