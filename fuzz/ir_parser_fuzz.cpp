// libFuzzer target for the IR parser. Properties checked on every input:
//   - parseGraph never crashes, throws or recurses without bound (ASan/UBSan catch UB);
//   - a parsed graph prints, and the printed text parses back to an equal graph;
//   - the whole pass runs on any parsed graph and returns JSON, never throwing, with default
//     options and with the profitability check on (both baselines: it asks codegen for kernels).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <string>

#include "pass/ir_text.h"
#include "pass/run_pass.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  fxfuse::ir::ParseError error;
  std::optional<fxfuse::ir::Graph> graph = fxfuse::ir::parseGraph(text, &error);
  if (!graph) {
    if (error.line < 1 || error.column < 1 || error.message.empty()) std::abort();
    return 0;
  }
  std::string printed = fxfuse::ir::printGraph(*graph);
  fxfuse::ir::ParseError again;
  std::optional<fxfuse::ir::Graph> reparsed = fxfuse::ir::parseGraph(printed, &again);
  if (!reparsed || !(*reparsed == *graph)) {
    std::fprintf(stderr, "round trip failed: %s\n%s\n", again.str().c_str(), printed.c_str());
    std::abort();
  }
  for (const char* options : {"", R"({"only_profitable": true, "baseline": "inductor", "size_hints": "s0=8"})",
                              R"({"only_profitable": true, "arch": "sm_80"})"}) {
    std::string json = fxfuse::runPassJson(text, options);
    if (json.empty() || json[0] != '{') std::abort();
  }
  return 0;
}
