#include "pass/graph_index.h"

#include <algorithm>

namespace fxfuse::pass {

GraphIndex::GraphIndex(const ir::Graph& graph)
    : graph_(graph), users_(graph.nodes.size()), usedByOutput_(graph.nodes.size(), false) {
  for (int i = 0; i < size(); ++i) byName_.emplace(graph.nodes[i].name, i);
  for (int i = 0; i < size(); ++i) {
    for (int p : operands(i)) users_[p].push_back(i);  // i ascends, so users stay sorted
  }
  for (const ir::Arg& out : graph.outputs) {
    ir::forEachValueRef(out, [&](const std::string& name) {
      int p = find(name);
      if (p >= 0) usedByOutput_[p] = true;
    });
  }
}

int GraphIndex::find(const std::string& name) const {
  auto it = byName_.find(name);
  return it == byName_.end() ? -1 : it->second;
}

std::vector<int> GraphIndex::operands(int id) const {
  std::vector<int> out;
  ir::forEachValueRef(graph_.nodes[id], [&](const std::string& name) {
    int p = find(name);
    if (p >= 0) out.push_back(p);
  });
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

const ir::TensorType* GraphIndex::tensor(int id) const {
  if (id < 0 || id >= size()) return nullptr;
  const ir::Type& t = graph_.nodes[id].type;
  return t.isTensor() && t.tensor.otherDtype.empty() ? &t.tensor : nullptr;
}

}  // namespace fxfuse::pass
