#include "pass/region_outputs.h"

#include <algorithm>
#include <set>

#include "pass/aten_ops.h"
#include "pass/epilogue_region.h"

namespace fxfuse::pass {

bool usedOutside(const GraphIndex& index, int node, const std::set<int>& region) {
  if (index.usedByGraphOutput(node)) return true;
  for (int u : index.users(node))
    if (!region.count(u) && !isMetadataAssert(index.node(u))) return true;
  return false;
}

namespace {

bool hasRegionUser(const GraphIndex& index, int node, const std::set<int>& region) {
  for (int u : index.users(node))
    if (region.count(u)) return true;
  return false;
}

// Drops every node of `nodes` computed from `value` (directly or transitively).
std::vector<int> withoutDescendants(const GraphIndex& index, const std::vector<int>& nodes, int value) {
  std::set<int> cut{value};
  std::vector<int> kept;
  for (int id : nodes) {
    std::vector<int> ops = index.operands(id);
    bool below = std::any_of(ops.begin(), ops.end(), [&](int p) { return cut.count(p) > 0; });
    if (below) {
      cut.insert(id);
    } else {
      kept.push_back(id);
    }
  }
  return kept;
}

// Region nodes nobody reads (left behind by a cut) are dropped, last first.
std::vector<int> withoutDeadEnds(const GraphIndex& index, const GemmMatch& match, std::vector<int> nodes) {
  bool changed = true;
  while (changed) {
    changed = false;
    std::set<int> region = regionSet(match, nodes);
    for (size_t i = nodes.size(); i-- > 0;) {
      int id = nodes[i];
      if (!usedOutside(index, id, region) && !hasRegionUser(index, id, region)) {
        nodes.erase(nodes.begin() + static_cast<long>(i));
        changed = true;
        break;
      }
    }
  }
  return nodes;
}

}  // namespace

OutputChoice chooseOutputs(const GraphIndex& index, const GemmMatch& match, std::vector<int> nodes,
                           const PassOptions& options) {
  OutputChoice c;
  while (true) {
    nodes = withoutDeadEnds(index, match, nodes);
    std::set<int> region = regionSet(match, nodes);
    std::vector<int> values{match.root};
    values.insert(values.end(), nodes.begin(), nodes.end());
    std::vector<int> outputs, inner;  // inner: outputs that other region nodes also read
    for (int v : values) {
      if (!usedOutside(index, v, region)) continue;
      outputs.push_back(v);
      if (hasRegionUser(index, v, region)) inner.push_back(v);
    }
    if (static_cast<int>(outputs.size()) > options.maxOutputs) {
      // Past the output limit the latest output leaves the region (with what it feeds);
      // its region operands become outputs in turn, and the loop reconsiders.
      int last = outputs.back();
      c.cuts.push_back("%" + index.node(last).name + " left outside the region: more than " +
                       std::to_string(options.maxOutputs) + " outputs");
      c.notes.push_back(c.cuts.back());
      nodes.erase(std::find(nodes.begin(), nodes.end(), last));
      nodes = withoutDescendants(index, nodes, last);
      continue;
    }
    if (!inner.empty() && !options.extraOutputs) {
      int cut = inner.front();
      c.cuts.push_back("%" + index.node(cut).name +
                       " is also used outside the region; the region ends there (extra_outputs is off)");
      c.notes.push_back(c.cuts.back());
      nodes = withoutDescendants(index, nodes, cut);
      continue;
    }
    for (int v : inner)
      c.notes.push_back("%" + index.node(v).name + " is also used outside the region: extra output");
    c.nodes = nodes;
    c.outputs = outputs;
    return c;
  }
}

}  // namespace fxfuse::pass
