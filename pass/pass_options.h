// Options of one pass run (docs/interfaces.md), read from JSON by pass_options.cpp.
#pragma once

#include <string>
#include <vector>

namespace fxfuse::pass {

struct PassOptions {
  int minK = 1;                 // "min_k": smaller K is not_profitable
  bool allowFp32 = true;        // "allow_fp32"
  std::string arch = "sm_90";   // "arch": recorded for codegen
  bool extraOutputs = true;     // "extra_outputs": else a value used outside ends the region
  bool allowCpu = true;         // "allow_cpu": CPU graphs fuse too (reference testing)
  bool requireAligned = false;  // "require_aligned": misaligned K/N rows are rejected
  int maxInputs = 16;           // kernel ABI limits (FxParams::in / out)
  int maxOutputs = 4;
};

// Parses a flat JSON object; unknown keys are returned in `warnings`. False with `error`
// set on malformed JSON or a value of the wrong type.
bool parsePassOptions(const std::string& json, PassOptions* options, std::vector<std::string>* warnings,
                      std::string* error);

}  // namespace fxfuse::pass
