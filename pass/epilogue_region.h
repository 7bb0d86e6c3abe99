// The epilogue: the largest region of elementwise ops fed by the GEMM result, grown in
// topological order. A node joins when it is in the lowering table, has the output shape,
// reads at least one region value, and every other operand is an extra input the kernel can
// read (a scalar, or a tensor broadcastable to the output that does not depend on the
// region) within the input-slot limit. Growth stops at a write to anything the chain reads.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "pass/chain_builder.h"
#include "pass/elementwise_lowering.h"
#include "pass/gemm_anchor.h"
#include "pass/pass_options.h"

namespace fxfuse::pass {

// Resolves an epilogue operand: a region value, or an extra input read through its
// broadcasting views (unsqueeze/expand/view), or a 0-d `full` as a const.
class EpilogueOperands : public OperandResolver {
 public:
  EpilogueOperands(const GraphIndex& index, const GemmMatch& match, ChainBuilder& builder,
                   const std::set<int>& region)
      : index_(index), match_(match), builder_(builder), region_(region) {}
  int tensor(const ir::Arg& arg) override;
  const std::vector<int>& absorbedViews() const { return views_; }
  const std::string& whyNot() const { return why_; }

 private:
  bool dependsOnRegion(int node) const;
  const GraphIndex& index_;
  const GemmMatch& match_;
  ChainBuilder& builder_;
  const std::set<int>& region_;
  std::vector<int> views_;
  std::string why_;
};

struct EpilogueGrowth {
  std::vector<int> nodes;          // region nodes after the root, topological
  std::vector<std::string> notes;  // why growth stopped early, when it did
  bool mutationOfResult = false;   // the GEMM result itself is written in place
  // The first node reading the chain that no lowering takes (an op without a chain form, or one whose result is not
  // of the output's shape), in words: the reason a chain with no epilogue names (it read "a bare GEMM" alone).
  std::string firstUnlowered;
  // Nodes of `nodes` that emitted no op (aliasing or copying ops bound to their operand's value): eager runs no
  // arithmetic kernel for them, so they count neither as an epilogue nor as eager's kernels.
  std::set<int> passThrough;
};

// `builder` holds the prologue and mm, with the root bound; it is left holding the
// epilogue of the grown region.
EpilogueGrowth growEpilogue(const GraphIndex& index, const GemmMatch& match, ChainBuilder& builder,
                            const std::vector<bool>& claimed, const PassOptions& options);

// Emits `nodes` (a region chosen earlier) into `builder`; the views absorbed on the way are
// appended to `views`. False only on an internal inconsistency.
bool emitEpilogue(const GraphIndex& index, const GemmMatch& match, ChainBuilder& builder,
                  const std::vector<int>& nodes, std::vector<int>* views);

// The set every epilogue check is relative to: anchor, its transparent views, root, nodes.
std::set<int> regionSet(const GemmMatch& match, const std::vector<int>& nodes);

}  // namespace fxfuse::pass
