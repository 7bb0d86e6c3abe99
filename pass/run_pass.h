// The pass entry points. No torch: Python's fxfuse._C.run_pass and the fxfuse-opt tool both
// call runPassJson; C++ tests may call runPass on a parsed graph.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "pass/ir.h"
#include "pass/pass_options.h"

namespace fxfuse {

// IR text (docs/ir.md) and options JSON (docs/interfaces.md; "" = defaults) in, the result
// JSON of docs/interfaces.md out: {"rewrites", "report", "counters", "rewritten_ir"}, plus
// "warnings" (unknown options). Never throws: malformed IR or options give the same keys,
// empty, and "error": "3:17: expected ':' after value name".
std::string runPassJson(const std::string& irText, const std::string& optionsJson);

namespace pass {

struct RewriteRecord {
  int id = 0;
  std::string opNode;                 // the op's node name in rewritten_ir
  std::vector<std::string> replaced;  // FX node names removed (outputs included)
  std::vector<std::string> inputs;    // op inputs, slot order
  std::vector<std::string> outputs;   // one per spec `output` line
  std::string spec;
};

struct ReportEntry {
  std::string gemm;                   // the GEMM node's name
  bool fused = false;
  int rewrite = -1;                   // index into rewrites when fused
  std::string chain;                  // when fused: "addmm+bias → gelu_tanh → convert"
  std::string reason, detail;         // when not: a stable reason name and a human detail
  std::vector<std::string> notes;     // device, extra outputs, where a region ended and why
  std::vector<std::string> prologueStops;  // the prologue ops left outside (also among the notes)
};

struct PassResult {
  std::vector<RewriteRecord> rewrites;
  std::vector<ReportEntry> report;    // one per GEMM, graph order
  std::map<std::string, int64_t> counters;  // gemms_seen, chains_fused, reject.<reason>, …
  ir::Graph rewritten;
};

PassResult runPass(const ir::Graph& graph, const PassOptions& options);

// The JSON object of docs/interfaces.md for a result (rewritten_ir printed with printGraph).
std::string resultToJson(const PassResult& result, const std::vector<std::string>& warnings);

}  // namespace pass
}  // namespace fxfuse
