// End to end through runPass: the emitted spec parses back with parseSpec and prints the
// same (canonical), the report names a reason for every GEMM, the JSON has the documented keys.
#include <gtest/gtest.h>

#include "pass/ir_text.h"
#include "pass/run_pass.h"

namespace fxfuse::pass {
namespace {

const char* kGeluTanhLinear = R"(graph {
  %arg0_1 : bf16[64,256]{256,1}@cuda:0 = placeholder
  %arg1_1 : bf16[512,256]{256,1}@cuda:0 = placeholder
  %arg2_1 : bf16[512]{1}@cuda:0 = placeholder
  %permute : bf16[256,512]{1,256}@cuda:0 = aten.permute.default(%arg1_1, [1, 0])
  %addmm : bf16[64,512]{512,1}@cuda:0 = aten.addmm.default(%arg2_1, %arg0_1, %permute)
  %gelu : bf16[64,512]{512,1}@cuda:0 = aten.gelu.default(%addmm, approximate="tanh")
  output (%gelu)
}
)";

PassResult run(const std::string& text, PassOptions options = {}) {
  ir::ParseError err;
  auto g = ir::parseGraph(text, &err);
  EXPECT_TRUE(g) << err.str();
  return runPass(g.value_or(ir::Graph{}), options);
}

TEST(SpecEmission, GeluTanhLinearMatchesTheDocsShape) {
  PassResult r = run(kGeluTanhLinear);
  ASSERT_EQ(r.rewrites.size(), 1u);
  EXPECT_EQ(r.rewrites[0].spec,
            "fxfuse.chain v1\n"
            "gemm mm\n"
            "%0 = input 0 bf16 [m,k]\n"
            "%1 = input 1 bf16 [n,k]\n"
            "%2 = mm %0 %1 : f32\n"
            "%3 = input 2 bf16 [n]\n"
            "%4 = add %2 %3 : bf16 addmm\n"  // eager's addmm computed it, in one call
            "%5 = gelu_tanh %4 : bf16\n"
            "output %5\n");
  spec::ChainSpec parsed = spec::parseSpec(r.rewrites[0].spec);
  EXPECT_EQ(spec::printSpec(parsed), r.rewrites[0].spec);
  EXPECT_EQ(r.rewrites[0].inputs, (std::vector<std::string>{"arg0_1", "arg1_1", "arg2_1"}));
  EXPECT_EQ(r.rewrites[0].replaced, (std::vector<std::string>{"permute", "addmm", "gelu"}));
  EXPECT_EQ(r.rewrites[0].outputs, (std::vector<std::string>{"gelu"}));
  EXPECT_EQ(r.counters.at("chains_fused"), 1);
}

TEST(SpecEmission, RewrittenGraphKeepsOutputNamesAndParses) {
  PassResult r = run(kGeluTanhLinear);
  std::string text = ir::printGraph(r.rewritten);
  EXPECT_NE(text.find("%fxfuse_chain_0 : (bf16[64,512]{512,1}@cuda:0) = fxfuse.gemm_chain.default([%arg0_1, %arg1_1, %arg2_1], \"fxfuse.chain v1\\ngemm mm\\n"),
            std::string::npos) << text;
  EXPECT_NE(text.find("%gelu : bf16[64,512]{512,1}@cuda:0 = operator.getitem(%fxfuse_chain_0, 0)"), std::string::npos);
  EXPECT_EQ(text.find("permute"), std::string::npos) << "dead permute removed";
  ir::ParseError err;
  auto again = ir::parseGraph(text, &err);
  ASSERT_TRUE(again) << err.str();
  EXPECT_EQ(*again, r.rewritten);
}

TEST(SpecEmission, PassIsDeterministic) {
  EXPECT_EQ(runPassJson(kGeluTanhLinear, ""), runPassJson(kGeluTanhLinear, "{}"));
}

TEST(SpecEmission, BareGemmIsReportedNotFused) {
  std::string text = kGeluTanhLinear;
  text.replace(text.find("  %gelu"), text.find("  output") - text.find("  %gelu"), "");
  text.replace(text.find("(%gelu)"), 7, "(%addmm)");
  PassResult r = run(text);
  ASSERT_EQ(r.report.size(), 1u);
  EXPECT_FALSE(r.report[0].fused);
  EXPECT_EQ(r.report[0].reason, "no_epilogue_no_prologue");
  EXPECT_EQ(r.counters.at("reject.no_epilogue_no_prologue"), 1);
  EXPECT_EQ(r.rewritten, *ir::parseGraph(text, nullptr));
}

TEST(RunPassJson, HasTheDocumentedKeys) {
  std::string json = runPassJson(kGeluTanhLinear, R"({"min_k": 1, "allow_fp32": true, "arch": "sm_90", "extra_outputs": true, "bogus": 1})");
  for (const char* key : {"\"rewrites\": [{\"id\": 0", "\"replaced\": [\"permute\", \"addmm\", \"gelu\"]",
                          "\"inputs\": [\"arg0_1\", \"arg1_1\", \"arg2_1\"]", "\"outputs\": [\"gelu\"]",
                          "\"spec\": \"fxfuse.chain v1\\ngemm mm\\n", "\"report\": [{\"gemm\": \"addmm\", \"status\": \"fused\", \"rewrite\": 0",
                          "\"counters\": {\"chains_fused\": 1, \"gemms_seen\": 1}", "\"rewritten_ir\": \"graph {\\n",
                          "unknown option \\\"bogus\\\" ignored"})
    EXPECT_NE(json.find(key), std::string::npos) << key << "\n" << json;
}

TEST(RunPassJson, ErrorsAreJsonNotExceptions) {
  std::string json = runPassJson("graph {\n  %x f32[]\n}", "");
  EXPECT_EQ(json.rfind("{\"error\": \"2:6: expected ':' after value name\"", 0), 0u) << json;
  json = runPassJson(kGeluTanhLinear, "{\"min_k\": \"x\"}");
  EXPECT_EQ(json.rfind("{\"error\": \"option \\\"min_k\\\" must be a non-negative integer\"", 0), 0u) << json;
  json = runPassJson(kGeluTanhLinear, "{");
  EXPECT_EQ(json.rfind("{\"error\": \"options JSON", 0), 0u) << json;
}

}  // namespace
}  // namespace fxfuse::pass
