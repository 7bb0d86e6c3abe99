// Read-only indices over a Graph: node by name, producers, users, graph-output uses.
// Built once per pass run; node ids are positions in Graph::nodes (topological order).
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "pass/ir.h"

namespace fxfuse::pass {

class GraphIndex {
 public:
  explicit GraphIndex(const ir::Graph& graph);

  const ir::Graph& graph() const { return graph_; }
  int size() const { return static_cast<int>(graph_.nodes.size()); }
  const ir::Node& node(int id) const { return graph_.nodes[id]; }
  // -1 when no node has that name.
  int find(const std::string& name) const;
  // The node an argument refers to, or -1 when it is not a value reference.
  int producer(const ir::Arg& arg) const { return arg.isValue() ? find(arg.s) : -1; }
  // Distinct user node ids, ascending.
  const std::vector<int>& users(int id) const { return users_[id]; }
  bool usedByGraphOutput(int id) const { return usedByOutput_[id]; }
  // Distinct producer node ids of a node's arguments, ascending.
  std::vector<int> operands(int id) const;
  // The tensor type of a node, or nullptr when it is not a known tensor.
  const ir::TensorType* tensor(int id) const;

 private:
  const ir::Graph& graph_;
  std::unordered_map<std::string, int> byName_;
  std::vector<std::vector<int>> users_;
  std::vector<bool> usedByOutput_;
};

}  // namespace fxfuse::pass
