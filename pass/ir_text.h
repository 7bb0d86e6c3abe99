// Reading and writing the graph IR text form (docs/ir.md). `parseGraph(printGraph(g)) == g`.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "pass/ir.h"

namespace fxfuse::ir {

// A user error in IR text: where it is and what is wrong. `str()` is "line:col: message".
struct ParseError {
  int line = 0;
  int column = 0;
  std::string message;
  std::string str() const;
};

// Never throws on malformed text and never recurses without bound: nesting deeper than
// kMaxNesting is an error. Checks SSA: every referenced value is defined earlier, once.
constexpr int kMaxNesting = 64;
std::optional<Graph> parseGraph(std::string_view text, ParseError* error);

std::string printGraph(const Graph& graph);
std::string printType(const Type& type);
std::string printArg(const Arg& arg);
// `%.17g`, then `.0` when the text would read as an integer; `inf`, `-inf`, `nan`.
std::string printFloat(double v);
std::string quoteString(std::string_view s);

}  // namespace fxfuse::ir
