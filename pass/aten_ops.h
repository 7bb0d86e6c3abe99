// What the pass knows about individual ATen/prims targets: which ones mutate, which are
// dtype conversions, which are views, and how a view maps logical dim letters
// ('b','m','k','n','1', one per tensor dim) from its result back to its input.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "pass/graph_index.h"

namespace fxfuse::pass {

// `aten.add_.Tensor`, `aten.copy_.default`, `higher_order.auto_functionalized`, … : a node
// that writes to one of its arguments. Nothing is fused across such a write.
bool isMutating(const ir::Node& node);

// prims.convert_element_type.default(x, dt), aten._to_copy.default(x, dtype=dt),
// aten.to.dtype(x, dt): the target dtype; nullopt for anything else (or a copy that also
// changes device, layout or memory format).
std::optional<ir::DType> convertTarget(const ir::Node& node);

// A number given as an argument (Int, Float or Bool).
std::optional<double> numberArg(const ir::Arg& arg);
std::optional<int64_t> intArg(const ir::Arg& arg);
std::optional<std::vector<int64_t>> intListArg(const ir::Arg& arg);

// Letters of an operand of shape `operand` broadcast against a result of shape `result`
// whose dims carry `resultLetters` (right-aligned; size-1 dims become '1').
bool broadcastLetters(const std::vector<ir::Dim>& operand, const std::vector<ir::Dim>& result,
                      const std::string& resultLetters, std::string* operandLetters);

// For a layout or broadcasting view node (permute, t, transpose, unsqueeze, squeeze, expand,
// view/reshape/_unsafe_view that only adds or drops size-1 dims, clone, alias): the letters
// of its input given the letters of its result. False when the node is not such a view.
bool viewInputLetters(const GraphIndex& index, int view, const std::string& resultLetters,
                      std::string* inputLetters);

// The reshape family: aten.view.default, aten.reshape.default, aten._unsafe_view.default.
bool isReshape(const ir::Node& node);

}  // namespace fxfuse::pass
