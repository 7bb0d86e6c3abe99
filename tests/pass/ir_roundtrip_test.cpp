// The IR text form: building, printing, parsing, and `parse(print(g)) == g`.
#include <cmath>

#include <gtest/gtest.h>

#include "pass/ir_text.h"

namespace fxfuse::ir {
namespace {

const char* kExample = R"(graph {
  %arg0 : bf16[s0,4096]{4096,1}@cuda:0 = placeholder
  %arg1 : bf16[4096,4096]{4096,1}@cuda:0 = placeholder
  %arg2 : bf16[4096]{1}@cuda:0 = placeholder
  %permute : bf16[4096,4096]{1,4096}@cuda:0 = aten.permute.default(%arg1, [1, 0])
  %addmm : bf16[s0,4096]{4096,1}@cuda:0 = aten.addmm.default(%arg2, %arg0, %permute)
  %convert : f32[s0,4096]{4096,1}@cuda:0 = prims.convert_element_type.default(%addmm, f32)
  %mul : f32[s0,4096]{4096,1}@cuda:0 = aten.mul.Tensor(%convert, 0.5)
  %sym : sym = aten.sym_size.int(%arg0, 0)
  output (%mul, %sym)
}
)";

Graph parseOk(const std::string& text) {
  ParseError err;
  std::optional<Graph> g = parseGraph(text, &err);
  EXPECT_TRUE(g.has_value()) << err.str();
  return g.value_or(Graph{});
}

// An exported program's integer buffers, their contents stated (docs/ir.md: GPTQ's shift table and g_idx).
TEST(IrText, KnownValuesRoundTrip) {
  const std::string text = R"(graph {
  %wf : i32[1,8]{8,1}@cpu = placeholder values [0, 4, 8, 12, 16, 20, 24, -28]
  %g_idx : i32[256]{1}@cpu = placeholder kgroups 128
  %c : i64[2]{1}@cpu = get_attr "c" values [9223372036854775807, -9223372036854775807]
  %plain : i32[2]{1}@cpu = placeholder
  output (%wf, %g_idx, %c, %plain)
}
)";
  const Graph g = parseOk(text);
  ASSERT_EQ(g.nodes.size(), 4u);
  EXPECT_EQ(g.nodes[0].known.kind, KnownValues::Kind::List);
  EXPECT_EQ(g.nodes[0].known.list, (std::vector<int64_t>{0, 4, 8, 12, 16, 20, 24, -28}));
  EXPECT_EQ(g.nodes[1].known.kind, KnownValues::Kind::KGroups);
  EXPECT_EQ(g.nodes[1].known.group, 128);
  EXPECT_EQ(g.nodes[2].op, Node::Op::GetAttr);
  EXPECT_EQ(g.nodes[2].known.list[0], INT64_MAX);
  EXPECT_EQ(g.nodes[3].known.kind, KnownValues::Kind::None);
  EXPECT_EQ(printGraph(g), text);
  EXPECT_EQ(parseOk(printGraph(g)), g);
  Graph other = g;
  other.nodes[1].known.group = 64;  // a different fact is a different graph
  EXPECT_FALSE(other == g);
}

TEST(IrText, ParsesTheDocsExample) {
  Graph g = parseOk(kExample);
  ASSERT_EQ(g.nodes.size(), 8u);
  const Node& addmm = g.nodes[4];
  EXPECT_EQ(addmm.target, "aten.addmm.default");
  EXPECT_EQ(addmm.type.tensor.dtype, spec::DType::BF16);
  EXPECT_TRUE(addmm.type.tensor.sizes[0].symbolic);
  EXPECT_EQ(addmm.type.tensor.sizes[0].text, "s0");
  EXPECT_EQ(addmm.type.tensor.device, "cuda:0");
  EXPECT_EQ(g.nodes[6].args[1].kind, Arg::Kind::Float);
  EXPECT_EQ(g.nodes[7].type.kind, Type::Kind::Sym);
  EXPECT_EQ(g.outputs.size(), 2u);
}

TEST(IrText, PrintIsCanonicalAndRoundTrips) {
  Graph g = parseOk(kExample);
  EXPECT_EQ(printGraph(g), kExample);
  EXPECT_EQ(parseOk(printGraph(g)), g);
}

TEST(IrText, RoundTripsEveryArgumentKind) {
  const char* text = R"(graph {
  %x : f16[(s0*4096),1]{1,(s0*4096)}@cpu = placeholder
  %y : (bf16[2], sym, none, ?, ()) = placeholder
  %a : ? = get_attr "layer.weight \"q\"\n"
  %c : f32[] = my.op(%x, -3, 2.5, 1.0000000000000001e+300, -0.0, inf, -inf, nan, true, false, none, "s\\t", i8, f8e4m3, device(cuda:1), enum(contiguous_format), sym(s0), sym((s0*2)), [], [1, [2, [%x]]], complex64, key=[1.0, none])
  %d : complex64[3]{1} = placeholder
  output (%c, [%x, %y], none)
}
)";
  Graph g = parseOk(text);
  EXPECT_EQ(printGraph(g), text);
  EXPECT_EQ(parseOk(printGraph(g)), g);
  EXPECT_TRUE(std::signbit(g.nodes[3].args[4].f));
  EXPECT_TRUE(std::isnan(g.nodes[3].args[7].f));
  EXPECT_EQ(g.nodes[3].args[20].kind, Arg::Kind::Name);
  EXPECT_EQ(g.nodes[4].type.tensor.otherDtype, "complex64");
}

TEST(IrText, FloatsRoundTripExactly) {
  for (double v : {0.1, 1.0 / 3.0, 0.044714999999999998, 1e-320, 123456789.0, -2.5e-7, 1e22}) {
    std::string s = printFloat(v);
    Graph g = parseOk("graph {\n  %x : f32[] = f(" + s + ")\n  output (%x)\n}\n");
    EXPECT_EQ(g.nodes[0].args[0].kind, Arg::Kind::Float) << s;
    EXPECT_EQ(g.nodes[0].args[0].f, v) << s;
  }
  EXPECT_EQ(printFloat(2.0), "2.0");
  EXPECT_EQ(printFloat(1e22), "1e+22");
}

TEST(IrText, BuiltGraphRoundTrips) {
  Graph g;
  Node x;
  x.name = "x";
  x.op = Node::Op::Placeholder;
  x.type.kind = Type::Kind::Tensor;
  x.type.tensor.dtype = spec::DType::BF16;
  x.type.tensor.sizes = {Dim::sym("s0"), Dim::concrete(64)};
  x.type.tensor.hasStrides = true;
  x.type.tensor.strides = {Dim::concrete(64), Dim::concrete(1)};
  x.type.tensor.device = "cuda:0";
  Node r;
  r.name = "relu";
  r.type = x.type;
  r.target = "aten.relu.default";
  r.args = {Arg::value("x")};
  r.kwargs = {NamedArg{"approximate", Arg::string("tanh")}};
  g.nodes = {x, r};
  g.outputs = {Arg::value("relu")};
  EXPECT_EQ(parseOk(printGraph(g)), g);
}

TEST(IrText, CommentsAndBlankLinesAreIgnored) {
  Graph g = parseOk("# header\ngraph { # open\n\n  %x : f32[2] = placeholder # a comment\n  output (%x)\n}\n# end\n");
  EXPECT_EQ(g.nodes.size(), 1u);
}

}  // namespace
}  // namespace fxfuse::ir
