// Options of one pass run (docs/interfaces.md), read from JSON by pass_options.cpp.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace fxfuse::pass {

struct PassOptions {
  int minK = 1;                 // "min_k": smaller K is not_profitable
  int minM = 1;                 // "min_m": a smaller M (rows, per matrix; where known) is not_profitable
  int minN = 1;                 // "min_n": smaller N is not_profitable
  bool prologue = true;         // "prologue": false leaves the ops before the GEMM outside (views still fold)
  bool epilogue = true;         // "epilogue": false leaves the ops after the GEMM outside
  bool allowFp32 = true;        // "allow_fp32"
  std::string arch = "sm_90";   // "arch": recorded for codegen
  bool extraOutputs = true;     // "extra_outputs": else a value used outside ends the region
  bool allowCpu = true;         // "allow_cpu": CPU graphs fuse too (reference testing)
  bool requireAligned = false;  // "require_aligned": misaligned K/N rows are rejected
  int maxInputs = 16;           // kernel ABI limits (FxParams::in / out)
  int maxOutputs = 4;
  // "only_profitable": a CUDA chain for which the op would find no fast kernel (it would run
  // the chain unfused plus its own overhead) is rejected as not_profitable, except against eager
  // where the op's unfused path beats eager's separate kernels (pass/profitability.h).
  bool onlyProfitable = false;
  // "nvrtc": false when the machine has no NVRTC: CUDA chains are rejected nvrtc_unavailable
  // (the op could only evaluate them with ATen, slower than leaving them to Inductor).
  bool nvrtc = true;
  // "size_hints": "s0=128;(s0*s1)=512": the sizes symbolic dims (as the IR writes them) had
  // when the graph was traced; only_profitable judges a symbolic M at its hint.
  std::map<std::string, int64_t> sizeHints;
  // "baseline": "eager" or "inductor", what runs a chain left unfused (codegen::Baseline);
  // only_profitable fuses a chain only where its kernel beats that.
  std::string baseline = "eager";
  // "unrounded_groups": "name,name,...": nodes of one eager op that the graph holds as several steps whose 16-bit
  // intermediates eager's kernel does not round (the torch.compile backend names them:
  // python/fxfuse/decomposed_groups.py); an epilogue ends before them, leaving them to Inductor, which computes
  // them unrounded as eager does.
  std::set<std::string> unroundedGroups;
};

// Parses a flat JSON object; unknown keys are returned in `warnings`. False with `error`
// set on malformed JSON or a value of the wrong type.
bool parsePassOptions(const std::string& json, PassOptions* options, std::vector<std::string>* warnings,
                      std::string* error);

}  // namespace fxfuse::pass
