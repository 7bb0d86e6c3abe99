// Matcher units: anchors, view letters, broadcasting, prologue folding.
#include <gtest/gtest.h>

#include "pass/aten_ops.h"
#include "pass/chain_builder.h"
#include "pass/gemm_anchor.h"
#include "pass/ir_text.h"
#include "pass/operand_prologue.h"

namespace fxfuse::pass {
namespace {

ir::Graph parse(const std::string& body) {
  ir::ParseError err;
  auto g = ir::parseGraph("graph {\n" + body + "}\n", &err);
  EXPECT_TRUE(g) << err.str();
  return g.value_or(ir::Graph{});
}

TEST(GemmAnchor, AddmmWithPermutedWeightAndBetaAlpha) {
  ir::Graph g = parse(R"(
  %x : bf16[64,256]{256,1}@cuda:0 = placeholder
  %w : bf16[512,256]{256,1}@cuda:0 = placeholder
  %b : bf16[512]{1}@cuda:0 = placeholder
  %p : bf16[256,512]{1,256}@cuda:0 = aten.permute.default(%w, [1, 0])
  %mm : bf16[64,512]{512,1}@cuda:0 = aten.addmm.default(%b, %x, %p, beta=0.5, alpha=2)
  output (%mm)
)");
  GraphIndex index(g);
  std::string why;
  auto m = matchGemm(index, 4, &why);
  ASSERT_TRUE(m) << why;
  EXPECT_EQ(m->anchorKind, "addmm");
  EXPECT_EQ(m->aLetters, "mk");
  EXPECT_EQ(m->bLetters, "kn");
  EXPECT_EQ(m->beta, 0.5);
  EXPECT_EQ(m->alpha, 2.0);
  EXPECT_TRUE(m->bias);
  EXPECT_EQ(m->outLetters, "mn");
  EXPECT_EQ(m->k, ir::Dim::concrete(256));
  EXPECT_EQ(m->n, ir::Dim::concrete(512));
}

TEST(GemmAnchor, ThreeDLinearViewsAreTransparent) {
  ir::Graph g = parse(R"(
  %x : bf16[4,16,256]{4096,256,1}@cuda:0 = placeholder
  %w : bf16[256,512]{512,1}@cuda:0 = placeholder
  %v : bf16[64,256]{256,1}@cuda:0 = aten.reshape.default(%x, [64, 256])
  %mm : bf16[64,512]{512,1}@cuda:0 = aten.mm.default(%v, %w)
  %o : bf16[4,16,512]{8192,512,1}@cuda:0 = aten.reshape.default(%mm, [4, 16, 512])
  output (%o)
)");
  GraphIndex index(g);
  std::string why;
  auto m = matchGemm(index, 3, &why);
  ASSERT_TRUE(m) << why;
  EXPECT_EQ(m->a.s, "x");
  EXPECT_EQ(m->aLetters, "mmk");
  EXPECT_EQ(m->root, 4);
  EXPECT_EQ(m->outLetters, "mmn");
}

TEST(GemmAnchor, ThreeDInputWithoutOutputViewStaysTwoD) {
  ir::Graph g = parse(R"(
  %x : bf16[4,16,256]{4096,256,1}@cuda:0 = placeholder
  %w : bf16[256,512]{512,1}@cuda:0 = placeholder
  %v : bf16[64,256]{256,1}@cuda:0 = aten.reshape.default(%x, [64, 256])
  %mm : bf16[64,512]{512,1}@cuda:0 = aten.mm.default(%v, %w)
  output (%mm)
)");
  GraphIndex index(g);
  std::string why;
  auto m = matchGemm(index, 3, &why);
  ASSERT_TRUE(m) << why;
  EXPECT_EQ(m->a.s, "v");
  EXPECT_EQ(m->root, 3);
}

TEST(GemmAnchor, BmmAndLinear) {
  ir::Graph g = parse(R"(
  %a : f16[2,64,32]{2048,32,1}@cuda:0 = placeholder
  %b : f16[2,32,64]{2048,64,1}@cuda:0 = placeholder
  %w : f16[64,32]{32,1}@cuda:0 = placeholder
  %bmm : f16[2,64,64]{4096,64,1}@cuda:0 = aten.bmm.default(%a, %b)
  %lin : f16[2,64,64]{4096,64,1}@cuda:0 = aten.linear.default(%a, %w)
  output (%bmm, %lin)
)");
  GraphIndex index(g);
  std::string why;
  auto bmm = matchGemm(index, 3, &why);
  ASSERT_TRUE(bmm) << why;
  EXPECT_EQ(bmm->kind, spec::GemmKind::Bmm);
  EXPECT_EQ(bmm->outLetters, "bmn");
  auto lin = matchGemm(index, 4, &why);
  ASSERT_TRUE(lin) << why;
  EXPECT_EQ(lin->kind, spec::GemmKind::Mm);
  EXPECT_EQ(lin->aLetters, "mmk");
  EXPECT_EQ(lin->bLetters, "nk");
  EXPECT_FALSE(lin->bias);
}

TEST(AtenOps, BroadcastLetters) {
  using ir::Dim;
  std::vector<Dim> out{Dim::sym("s0"), Dim::concrete(512)};
  std::string l;
  EXPECT_TRUE(broadcastLetters({Dim::concrete(512)}, out, "mn", &l));
  EXPECT_EQ(l, "n");
  EXPECT_TRUE(broadcastLetters({Dim::sym("s0"), Dim::concrete(1)}, out, "mn", &l));
  EXPECT_EQ(l, "m1");
  EXPECT_TRUE(broadcastLetters({}, out, "mn", &l));
  EXPECT_EQ(l, "");
  EXPECT_FALSE(broadcastLetters({Dim::concrete(7)}, out, "mn", &l));
  EXPECT_FALSE(broadcastLetters({Dim::concrete(2), Dim::sym("s0"), Dim::concrete(512)}, out, "mn", &l));
}

TEST(AtenOps, MutationAndConvertRecognition) {
  ir::Graph g = parse(R"(
  %x : bf16[4]{1}@cuda:0 = placeholder
  %a : bf16[4]{1}@cuda:0 = aten.add_.Tensor(%x, %x)
  %c : bf16[4]{1}@cuda:0 = aten.copy_.default(%x, %a)
  %t : f32[4]{1}@cuda:0 = aten._to_copy.default(%x, dtype=f32)
  %d : f32[4]{1}@cuda:0 = aten._to_copy.default(%x, dtype=f32, device=device(cpu))
  %f : (f32[4]) = higher_order.auto_functionalized(%x)
  %r : bf16[4]{1}@cuda:0 = aten.relu.default(%x)
  output (%r)
)");
  EXPECT_TRUE(isMutating(g.nodes[1]));
  EXPECT_TRUE(isMutating(g.nodes[2]));
  EXPECT_FALSE(isMutating(g.nodes[3]));
  EXPECT_TRUE(isMutating(g.nodes[5]));
  EXPECT_FALSE(isMutating(g.nodes[6]));
  EXPECT_EQ(convertTarget(g.nodes[3]), spec::DType::F32);
  EXPECT_FALSE(convertTarget(g.nodes[4]));
}

TEST(OperandPrologue, Int8WeightOnlyDequantFolds) {
  // The exact post-grad form of an int8 weight-only linear.
  ir::Graph g = parse(R"(
  %w : i8[512,256]{256,1}@cuda:0 = placeholder
  %s : bf16[512]{1}@cuda:0 = placeholder
  %c : bf16[512,256]{256,1}@cuda:0 = prims.convert_element_type.default(%w, bf16)
  %u : bf16[512,1]{1,1}@cuda:0 = aten.unsqueeze.default(%s, 1)
  %m : bf16[512,256]{256,1}@cuda:0 = aten.mul.Tensor(%c, %u)
  %p : bf16[256,512]{1,256}@cuda:0 = aten.permute.default(%m, [1, 0])
  output (%p)
)");
  GraphIndex index(g);
  ChainBuilder builder(spec::GemmKind::Mm);
  std::vector<bool> claimed(g.nodes.size(), false);
  OperandPrologue prologue(index, builder, claimed);
  PrologueResult r = prologue.build(ir::Arg::value("p"), "kn", spec::Space::B);
  EXPECT_EQ(r.ops, (std::vector<std::string>{"convert", "mul"}));
  ASSERT_EQ(r.leaves.size(), 2u);
  EXPECT_EQ(r.leaves[0].letters, "nk");
  EXPECT_EQ(r.leaves[1].letters, "n");
  EXPECT_EQ(builder.slotNodes(), (std::vector<std::string>{"w", "s"}));
  EXPECT_EQ(builder.dtypeOf(r.value), spec::DType::BF16);
}

}  // namespace
}  // namespace fxfuse::pass
