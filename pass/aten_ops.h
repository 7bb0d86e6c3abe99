// What the pass knows about individual ATen/prims targets: which ones mutate, which are
// dtype conversions, which are views, and how a view maps logical dim letters
// ('b','m','k','n','1', one per tensor dim) from its result back to its input.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "pass/graph_index.h"

namespace fxfuse::pass {

// `aten.add_.Tensor`, `aten.copy_.default`, `aten.mul.out(x, y, out=r)`,
// `higher_order.auto_functionalized`, … : a node that writes to one of its arguments. Nothing is
// fused across such a write.
bool isMutating(const ir::Node& node);

// The node whose storage the value of node `id` may share: followed back through views (slice,
// select, view, transpose, expand, …), the ops that may return their input itself (contiguous,
// to, reshape), getitem of a split / chunk / unbind, in-place ops (they return their first
// argument) and out= overloads (they return `out`). A write to any value of the same root may
// change what the chain reads (`y[:, :6].mul_(0)` writes y).
int aliasRoot(const GraphIndex& index, int id);

// Whether the mutating node `writer` may write where any of `nodes` lives: one of its tensor
// operands shares an alias root with one of them (conservative: every operand counts as written).
bool writesAliasOf(const GraphIndex& index, int writer, const std::vector<int>& nodes);

// prims.convert_element_type.default(x, dt), aten._to_copy.default(x, dtype=dt),
// aten.to.dtype(x, dt): the target dtype; nullopt for anything else (or a copy that also
// changes device, layout or memory format).
std::optional<ir::DType> convertTarget(const ir::Node& node);

// A number given as an argument (Int, Float or Bool) that a double holds exactly.
std::optional<double> numberArg(const ir::Arg& arg);
std::optional<int64_t> intArg(const ir::Arg& arg);

// `aten.index.Tensor(x, [none, .., none, idx])`: a gather along one dim by one index tensor. That dim (the list's last
// entry's), or nullopt for any other node.
std::optional<size_t> gatherDim(const ir::Node& n);
std::optional<std::vector<int64_t>> intListArg(const ir::Arg& arg);

// Letters of an operand of shape `operand` broadcast against a result of shape `result`
// whose dims carry `resultLetters` (right-aligned). A size-1 operand dim facing a larger
// result dim becomes '1'. A size-1 operand dim facing a size-1 result dim is ambiguous: with
// `keepRoles` (the GEMM operands themselves, and values of the full result shape) it keeps
// the result's letter, so that a problem dim of size 1 (B=1, M=1, N=1) is still named by its
// role; without it (an extra input that broadcasts: a scale, a zero point, a bias) it becomes
// '1', except that the 'm' dims keep their letter when the operand spans every 'm' dim of
// the result (so an input has all of the flattened M's dims or none).
bool broadcastLetters(const std::vector<ir::Dim>& operand, const std::vector<ir::Dim>& result,
                      const std::string& resultLetters, std::string* operandLetters,
                      bool keepRoles = true);

// For a layout or broadcasting view node (permute, t, transpose, unsqueeze, squeeze, expand,
// view/reshape/_unsafe_view that only adds or drops size-1 dims, clone, alias): the letters
// of its input given the letters of its result. False when the node is not such a view, or
// when it reorders the 'm' dims (several m flatten into M in the tensor's own dim order).
// `keepRoles` as for broadcastLetters: with it, a size-1 dim that a reshape/unsqueeze/squeeze
// keeps is matched to the result's size-1 dim in the same place between the non-1 dims (right
// aligned) and keeps its letter; without it, every size-1 input dim becomes '1'.
bool viewInputLetters(const GraphIndex& index, int view, const std::string& resultLetters,
                      std::string* inputLetters, bool keepRoles = true);

// How many 'm' letters `letters` has.
size_t countM(const std::string& letters);

// `aten._assert_tensor_metadata`: torch.export's check of a value's dtype, device and layout beside each
// `.to()`. It reads nothing the fused op changes: a value read only by it is no output of a chain, and
// the rewrite drops it with the value (it had cost an extra output per `.to()`, session 49).
bool isMetadataAssert(const ir::Node& node);

// The reshape family: aten.view.default, aten.reshape.default, aten._unsafe_view.default, aten.flatten.using_ints,
// aten.unflatten.int (each read by its input and output sizes only).
bool isReshape(const ir::Node& node);

// The ops the chain passes through that return (a view of) their operand's storage: the reshape family, alias,
// detach, and dropout, whose eval form returns its input itself (elementwise_lowering.cpp identity).
bool returnsAliasOfOperand(const ir::Node& node);

}  // namespace fxfuse::pass
