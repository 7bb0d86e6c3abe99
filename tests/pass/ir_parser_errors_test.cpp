// Malformed IR text: an error naming line and column, never a crash.
#include <string>

#include <gtest/gtest.h>

#include "pass/ir_text.h"

namespace fxfuse::ir {
namespace {

std::string errorOf(const std::string& text) {
  ParseError err;
  std::optional<Graph> g = parseGraph(text, &err);
  if (g) return "parsed";
  return err.str();
}

TEST(IrParserErrors, NameLineAndColumn) {
  EXPECT_EQ(errorOf("graph {\n  %x f32[2] = placeholder\n  output (%x)\n}"), "2:6: expected ':' after value name");
  EXPECT_EQ(errorOf("graph {\n  %x : f32[2 = placeholder\n}"), "2:14: expected ']' or ',' in dimension list");
  EXPECT_EQ(errorOf("grph {}"), "1:1: expected 'graph'");
  EXPECT_EQ(errorOf("graph {\n  output (%y)\n}"), "2:11: use of undefined value %y");
  EXPECT_EQ(errorOf("graph {\n  %x : f32[] = placeholder\n  %x : f32[] = placeholder\n  output ()\n}"),
            "3:3: redefinition of %x");
  EXPECT_EQ(errorOf("graph {\n  %x : f32[] = f(\"abc)\n  output ()\n}"), "2:18: unterminated string");
  EXPECT_EQ(errorOf("graph {\n  %x : f32[] = f(k=1, 2)\n  output ()\n}"), "2:23: positional argument after a keyword argument");
}

TEST(IrParserErrors, EveryMalformedInputIsAnError) {
  const char* bad[] = {
      "",
      "graph",
      "graph {",
      "graph { output (",
      "graph { output () } trailing",
      "graph { %x : f32[(s0] = placeholder output () }",
      "graph { %x : f32[1]{ = placeholder output () }",
      "graph { %x : f32[1]@ = placeholder output () }",
      "graph { %x : f32[1]@cuda: = placeholder output () }",
      "graph { %x : f32[] = f(1.2.3) output () }",
      "graph { %x : f32[] = f(99999999999999999999) output () }",
      "graph { %x : f32[] = f(\"\\q\") output () }",
      "graph { %x : f32[] = f(device(1)) output () }",
      "graph { %x : f32[] = f(- ) output () }",
      "graph { %x : f32[] = f(%) output () }",
      "graph { %x : (f32[], = placeholder output () }",
      "graph { %x : f32[] = get_attr x output () }",
      "graph { %x : i32[2] = placeholder values [] output () }",
      "graph { %x : i32[2] = placeholder values [1, ] output () }",
      "graph { %x : i32[2] = placeholder values [1 2] output () }",
      "graph { %x : i32[2] = placeholder values 1, 2 output () }",
      "graph { %x : i32[2] = placeholder values [1, 99999999999999999999] output () }",
      "graph { %x : i32[8] = placeholder kgroups 0 output () }",
      "graph { %x : i32[8] = placeholder kgroups -4 output () }",
      "graph { %x : i32[8] = placeholder kgroups output () }",
  };
  for (const char* text : bad) EXPECT_NE(errorOf(text), "parsed") << text;
}

TEST(IrParserErrors, KnownValuesErrorsNameTheirPlace) {
  EXPECT_EQ(errorOf("graph {\n  %x : i32[2] = placeholder values []\n  output ()\n}"),
            "2:38: 'values' needs at least one element");
  EXPECT_EQ(errorOf("graph {\n  %x : i32[8] = placeholder kgroups 0\n  output ()\n}"),
            "2:38: the group size after 'kgroups' must be positive");
}

TEST(IrParserErrors, DeepNestingIsRejectedNotRecursed) {
  std::string list(100000, '[');
  EXPECT_NE(errorOf("graph {\n  %x : f32[] = f(" + list + ")\n  output ()\n}").find("nesting deeper"), std::string::npos);
  std::string tuple(100000, '(');
  EXPECT_NE(errorOf("graph {\n  %x : " + tuple + " = placeholder\n  output ()\n}").find("nesting deeper"),
            std::string::npos);
}

}  // namespace
}  // namespace fxfuse::ir
