// Folds the prologue of a GEMM operand into the chain: dtype conversions (i8/fp8/f16/bf16/
// f32 -> the GEMM dtype), scales (mul/div by per-tensor, per-row or per-column tensors),
// zero points (sub), and the layout/broadcast views between them (permute, t, transpose,
// unsqueeze, expand, size-1 reshapes). What remains at the leaves becomes op inputs.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "pass/chain_builder.h"
#include "pass/graph_index.h"
#include "pass/k_groups.h"
#include "pass/nibble_unpack.h"

namespace fxfuse::pass {

struct OperandLeaf {
  int node = -1;
  std::string letters;
};

struct PrologueResult {
  int value = -1;                  // the spec value fed to mm
  std::vector<int> absorbed;       // graph nodes folded in (views and ops)
  std::vector<std::string> ops;    // spec ops emitted ("convert", "mul"): empty = no prologue
  std::vector<OperandLeaf> leaves; // nodes bound to input slots
  // The first node of the operand's prologue that is an op the prologue folds (a conversion, a scale, a zero point,
  // a view) and was left outside, with why ("%w_1 (aten.view.default): a reshape that splits or merges the
  // operand's dims"); empty where the prologue ended at a value no prologue op computes. The report names it on a
  // GEMM refused as bare (hunts of session 59: a group-wise dequantization had read "a bare GEMM").
  std::string stop;
};

class OperandPrologue {
 public:
  // `claimed[i]`: node i belongs to an earlier chain and must stay a leaf.
  // `ops`: false (the "prologue" option off) folds only the layout views; converts, scales and zero
  // points stay outside the chain.
  // `unrounded`: nodes that are steps of one eager op whose 16-bit intermediates eager does not round
  // (PassOptions::unroundedGroups): no op of theirs is folded.
  // `sharedStayBuffers`: a 16-bit value other nodes also read is not folded (the Inductor baseline: left in the
  // graph for them only, it is no longer a buffer, and Inductor fusing it into its readers skips its rounding).
  OperandPrologue(const GraphIndex& index, ChainBuilder& builder, const std::vector<bool>& claimed, bool ops = true,
                  const std::set<std::string>* unrounded = nullptr, bool sharedStayBuffers = false)
      : index_(index), builder_(builder), claimed_(claimed), ops_(ops), unrounded_(unrounded),
        sharedStayBuffers_(sharedStayBuffers) {}

  PrologueResult build(const ir::Arg& operand, const std::string& letters, spec::Space space);

 private:
  // `roles`: the value is the operand itself or has its full shape, so its size-1 dims are
  // named by role (b/m/k/n); a broadcasting scale or zero point names them '1'.
  int fold(int node, const std::string& letters, int depth, bool roles);
  int leaf(int node, const std::string& letters);
  // The [N, K/G, G] region of a group-wise dequantization, ended by the reshape `node` back to [N, K]: folded
  // whole, the spec's kgroup set, or `node` left a leaf with why (pass/k_groups.h).
  int foldKGroups(int node, const std::string& letters, const KGroupMerge& merge, int depth, bool roles);
  // A packed int4 weight's unpack ended by the reshape `node` (pass/nibble_unpack.h): the packed tensor read as an
  // input with a 'p' dim in place of k, or `node` left a leaf with why.
  int foldNibbles(int node, const std::string& letters, const NibbleUnpack& unpack, int depth, bool roles);
  // `t[g_idx]` along k: t read at k's group ('g'), the table expected by the op (pass/k_groups.h)
  int foldKGroupIndex(int node, const std::string& letters, const KGroupIndex& table, int depth, bool roles);
  // The spec's `expect` fact for a placeholder / get_attr whose contents the IR states; nullopt where it cannot say.
  std::optional<spec::Expect> expectOf(const ir::Node& table) const;
  // What a fold that may be undone starts from, and its undoing: the first stop the undone fold named is kept where
  // none was named before it (an operand region names its own stop: k_groups.h).
  struct Checkpoint {
    ChainBuilder builder;
    PrologueResult result;
  };
  Checkpoint checkpoint() const { return {builder_, result_}; }
  void restoreKeepingStop(Checkpoint&& c);
  // leaf(), noting in result_.stop (the first only) why a prologue op at `node` was not folded.
  int stopAt(int node, const std::string& letters, const std::string& why);
  // x.to(bf16) etc.: `convert %x : dt` when the source dtype is one the kernel converts.
  bool isFoldableConvert(int node) const;
  bool isFoldableArithmetic(int node) const;
  // An integer sub or add isFoldableArithmetic takes, emitted at f32 where its values are within 256 (exact there and
  // in 16 bits).
  bool computedInF32(int node) const;
  // The integer or float arithmetic `node` (isFoldableArithmetic's, or an unpack's add of a number) on the folded
  // operands: at f32 where computedInF32, else at the node's dtype with its operands converted to it.
  int emitArithmetic(int node, std::vector<int> operands);
  // A slice (or a split's piece) of a converted or scaled value: the chain cannot read part of what it computes.
  bool slicesAComputedValue(const ir::Node& n) const;
  // A reshape (through other reshapes) of a converted or scaled value.
  bool reshapesAComputedValue(const ir::Node& n) const;

  const GraphIndex& index_;
  ChainBuilder& builder_;
  const std::vector<bool>& claimed_;
  bool ops_ = true;
  const std::set<std::string>* unrounded_ = nullptr;
  bool sharedStayBuffers_ = false;
  spec::Space space_ = spec::Space::A;
  size_t operandMs_ = 0;  // 'm' dims of the operand: an A-space input has all or none
  const ir::TensorType* operandType_ = nullptr;  // the GEMM's operand: every input must be on its device
  std::vector<int> pendingOrder_;  // foldNibbles: the order of 4-bit values its packed tensor's leaf input takes
  PrologueResult result_;
};

}  // namespace fxfuse::pass
