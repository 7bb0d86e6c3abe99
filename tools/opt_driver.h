// What fxfuse-opt prints for one IR text, as a library so tests/pass's text-file runner
// checks exactly the tool's output without spawning it.
#pragma once

#include <string>

namespace fxfuse::tools {

struct OptFlags {
  bool printSpec = false;    // --print-spec: each rewrite's spec, raw
  bool printCuda = false;    // --print-cuda: generated CUDA per rewrite (needs codegen)
  bool reportJson = false;   // --report-json: the JSON result of run_pass instead of text
  bool printIr = true;       // --no-ir turns the rewritten graph off
  std::string optionsJson;   // --options '{"extra_outputs": false}'
};

// Never throws; a malformed input prints "error: <line>:<col>: <message>". `ok` is false then.
std::string runOpt(const std::string& irText, const OptFlags& flags, bool* ok);

}  // namespace fxfuse::tools
