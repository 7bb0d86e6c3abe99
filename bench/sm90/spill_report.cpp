// spill_report: registers and spills (ptxas -v, through the same NVRTC compile the op runs) of
// every Hopper candidate kernel (codegen::candidateConfigsForSize at 4096^3, sm_90a) of each
// spec given, as Markdown table rows. Needs NVRTC, no GPU. Build and run from the repo root
// against a build tree (bench/sm90/SPILLS.md has the command):
//   g++ -O1 -std=gnu++17 -DFMT_HEADER_ONLY=1 -I. bench/sm90/spill_report.cpp \
//       build-py/codegen/libfxfuse_codegen.a build-py/spec/libfxfuse_spec.a -ldl -o /tmp/spill_report
//   /tmp/spill_report bench/sm90/spill_specs/*.spec tests/codegen/specs/f16_residual_silu_two_outputs.spec
#include <fstream>
#include <iostream>
#include <regex>
#include <sstream>
#include <string>

#include "bench/sm90/read_file.h"
#include "codegen/codegen.h"

namespace {

std::string baseName(const std::string& path) {
  std::string n = path.substr(path.find_last_of('/') + 1);
  return n.substr(0, n.rfind(".spec"));
}

// The kernel's own lines of the ptxas log: the entry function's properties (the out-of-line
// edge-tile function is reported after it, under its own "Function properties" line).
struct Stats {
  std::string regs = "?", stack = "?", stores = "?", loads = "?", edge = "?";
};

Stats parseLog(const std::string& log) {
  Stats st;
  static const std::regex props(R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  static const std::regex regs(R"(Used (\d+) registers)");
  std::istringstream in(log);
  bool entry = false, kernelDone = false;
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (line.find("Function properties for") != std::string::npos) {
      entry = line.find("fx_sm90_edge_pair") == std::string::npos;
      continue;
    }
    if (std::regex_search(line, m, props)) {
      if (entry && !kernelDone) {
        st.stack = m[1];
        st.stores = m[2];
        st.loads = m[3];
      } else if (!entry) {
        st.edge = std::string(m[2]) + "/" + std::string(m[3]);
      }
    } else if (entry && std::regex_search(line, m, regs)) {
      st.regs = m[1];
      kernelDone = true;
    }
  }
  return st;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace fxfuse;
  std::cout << "| epilogue | tile | regs | spill stores (B) | spill loads (B) | stack (B) | edge fn st/ld |\n"
            << "|---|---|---|---|---|---|---|\n";
  for (int i = 1; i < argc; ++i) {
    const spec::ChainSpec s = spec::parseSpec(readFile(argv[i]));
    for (const codegen::KernelConfig& k : codegen::candidateConfigsForSize(s, 4096, 4096, 4096, 1, 90)) {
      if (k.variant != "sm90_wgmma") continue;
      // the log's statistics need a real compile (NVRTC 12.9+ may answer from the driver's cache)
      const codegen::Cubin c =
          codegen::compileNvrtc(codegen::generate(s, k), "sm_90a", {}, false, /*want_ptxas_statistics=*/true);
      const Stats st = parseLog(c.log);
      std::string tile = codegen::describeConfig(k).substr(std::string("sm90_wgmma ").size());
      std::cout << "| " << baseName(argv[i]) << " | " << tile << " | " << st.regs << " | " << st.stores << " | "
                << st.loads << " | " << st.stack << " | " << st.edge << " |" << std::endl;
    }
  }
}
