#include "tools/opt_driver.h"

#include <fmt/format.h>

#include "pass/ir_text.h"
#include "pass/run_pass.h"
#include "codegen/codegen.h"
#include "spec/chain_spec.h"

namespace fxfuse::tools {
namespace {

// --print-cuda: the kernel for a representative large problem (4096 rows, K = N = 4096) on
// Hopper; the runtime picks the variant per call, so other shapes may use another template.
std::string generateCuda(const std::string& specText) {
  try {
    spec::ChainSpec chain = spec::parseSpec(specText);
    codegen::ProblemShape shape;
    shape.M = shape.N = shape.K = 4096;
    codegen::KernelConfig config = codegen::chooseConfig(chain, shape, 90);
    return codegen::generate(chain, config).code + "\n";
  } catch (const std::exception& e) {
    return fmt::format("// --print-cuda: {}\n", e.what());
  }
}

std::string textReport(const pass::PassResult& r) {
  std::string out;
  for (const pass::ReportEntry& e : r.report) {
    if (e.fused) {
      out += fmt::format("// gemm %{}: fused #{}: {}\n", e.gemm, e.rewrite, e.chain);
    } else {
      out += fmt::format("// gemm %{}: not fused: {} ({})\n", e.gemm, e.reason, e.detail);
    }
    for (const std::string& note : e.notes) out += fmt::format("//   note: {}\n", note);
  }
  out += "// counters:";
  for (const auto& [name, count] : r.counters) out += fmt::format(" {}={}", name, count);
  return out + "\n";
}

}  // namespace

std::string runOpt(const std::string& irText, const OptFlags& flags, bool* ok) {
  *ok = false;
  pass::PassOptions options;
  std::vector<std::string> warnings;
  std::string error;
  if (!pass::parsePassOptions(flags.optionsJson, &options, &warnings, &error)) return "error: " + error + "\n";
  if (flags.reportJson) {
    std::string json = runPassJson(irText, flags.optionsJson);
    *ok = json.rfind("{\"error\"", 0) != 0;
    return json + "\n";
  }
  ir::ParseError perr;
  std::optional<ir::Graph> graph = ir::parseGraph(irText, &perr);
  if (!graph) return "error: " + perr.str() + "\n";
  pass::PassResult result = pass::runPass(*graph, options);
  std::string out;
  for (const std::string& w : warnings) out += "// warning: " + w + "\n";
  if (flags.printIr) out += ir::printGraph(result.rewritten);
  for (const pass::RewriteRecord& rw : result.rewrites) {
    if (flags.printSpec) out += fmt::format("// spec #{} (%{}):\n{}", rw.id, rw.opNode, rw.spec);
    if (flags.printCuda) out += generateCuda(rw.spec);
  }
  out += textReport(result);
  *ok = true;
  return out;
}

}  // namespace fxfuse::tools
