// overlap_offline: the offline (no GPU) measurements of the overlapped epilogue (FX_EPI_OVERLAP,
// bench/RESULTS.md Run BH), through the op's own codegen and NVRTC. Build from the repo root against a
// build tree, as spill_report.cpp:
//   g++ -O1 -std=gnu++17 -DFMT_HEADER_ONLY=1 -I. bench/sm90/overlap_offline.cpp \
//       build/codegen/libfxfuse_codegen.a build/spec/libfxfuse_spec.a -ldl -o /tmp/overlap_offline
// Modes (the planner's knobs, e.g. FXFUSE_SM90_EPILOGUE_OVERLAP=1, come from the environment):
//   source SPEC OUT.cu   the generated source of the planner's first Hopper candidate at 4096^3
//   ptx SPEC DIR         the PTX of every Hopper candidate at 4096^3 into DIR/<i>.ptx (to compare two trees)
//   time SPEC            three cold NVRTC compiles (sm_90a) each of 128x256 at four stages and overlapped
#include <chrono>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "bench/sm90/read_file.h"
#include "codegen/codegen.h"


int main(int argc, char** argv) {
  using namespace fxfuse;
  if (argc != 3 && argc != 4) {
    std::cerr << "usage: overlap_offline source SPEC OUT.cu | ptx SPEC DIR | time SPEC\n";
    return 2;
  }
  const std::string mode = argv[1];
  const spec::ChainSpec s = spec::parseSpec(readFile(argv[2]));
  int i = 0;
  if (mode == "source" || mode == "ptx") {
    for (const codegen::KernelConfig& k : codegen::candidateConfigsForSize(s, 4096, 4096, 4096, 1, 90)) {
      if (k.variant != "sm90_wgmma") continue;
      std::cout << codegen::describeConfig(k) << "\n";
      const codegen::KernelSource src = codegen::generate(s, k);
      if (mode == "source") {
        std::ofstream(argv[3]) << src.code;
        return 0;
      }
      std::ofstream(std::string(argv[3]) + "/" + std::to_string(i++) + ".ptx")
          << codegen::compileNvrtc(src, "sm_90a", {}, true, false).ptx;
    }
    return 0;
  }
  for (const bool overlap : {false, true})
    for (int rep = 0; rep < 3; ++rep) {
      codegen::KernelConfig c{"sm90_wgmma", 128, 256, 64, overlap ? 3 : 4, 384};
      c.epilogue_overlap = overlap;
      codegen::KernelSource src = codegen::generate(s, c);
      src.code += "\n// nonce " + std::to_string(rep) + "\n";  // a cold compile each time
      const auto t0 = std::chrono::steady_clock::now();
      codegen::compileNvrtc(src, "sm_90a", {}, false, true);
      std::cout << codegen::describeConfig(c) << ": "
                << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() << " s\n";
    }
  return 0;
}
