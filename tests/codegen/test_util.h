// Helpers shared by the codegen tests: reading spec files from tests/codegen/specs, compiling a
// kernel afresh for its ptxas statistics.
#pragma once

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <dirent.h>

#include "codegen/codegen.h"
#include "codegen/embedded_sources.h"
#include "spec/chain_spec.h"

namespace fxfuse::codegen::test {

inline std::string testDir() { return FXFUSE_CODEGEN_TEST_DIR; }

inline std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Names (without .spec) of every spec under tests/codegen/specs, sorted.
inline std::vector<std::string> specNames() {
  std::vector<std::string> names;
  if (DIR* d = ::opendir((testDir() + "/specs").c_str())) {
    while (dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n.size() > 5 && n.substr(n.size() - 5) == ".spec") names.push_back(n.substr(0, n.size() - 5));
    }
    ::closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

inline spec::ChainSpec loadSpec(const std::string& name) {
  return spec::parseSpec(readFile(testDir() + "/specs/" + name + ".spec"));
}

// FXFUSE_NO_NVRTC=1: this machine has no NVRTC on purpose (its compile tests skip).
inline bool nvrtcOptedOut() {
  const char* v = std::getenv("FXFUSE_NO_NVRTC");
  return v && std::string(v) == "1";
}

// In a test that compiles: a missing NVRTC is a failure, not a skip, unless nvrtcOptedOut.
#define REQUIRE_NVRTC()                                                                          \
  do {                                                                                           \
    if (::fxfuse::codegen::test::nvrtcOptedOut()) GTEST_SKIP() << "FXFUSE_NO_NVRTC=1";           \
    ASSERT_FALSE(::fxfuse::codegen::findNvrtc().empty())                                         \
        << "libnvrtc not found (the dlopen search of codegen/nvrtc_library.cpp); set "           \
           "FXFUSE_NVRTC_PATH or FXFUSE_NO_NVRTC=1";                                             \
  } while (0)

// Whether this build embeds the Hopper template (tests of its tiles skip without it).
inline bool hopperBuiltIn() { return codegen::embeddedFile("kernels/sm90_wgmma_gemm.cuh") != nullptr; }

// bias + GELU(tanh) on a [k,n] weight: an expensive epilogue the Hopper rule measured (epilogueRefusal).
inline spec::ChainSpec biasGeluTanh() {
  return spec::parseSpec(
      "fxfuse.chain v1\ngemm mm\n%0 = input 0 bf16 [m,k]\n%1 = input 1 bf16 [k,n]\n%2 = mm %0 %1 : f32\n"
      "%3 = input 2 bf16 [n]\n%4 = add %2 %3 : bf16\n%5 = gelu_tanh %4 : bf16\noutput %5\n");
}

// A kernel of its own source: `extern "C" __global__ void NAME() { BODY }` (the NVRTC worker's tests).
inline KernelSource bareKernel(const std::string& name, const std::string& body = "") {
  KernelSource src;
  src.name = name;
  src.code = "extern \"C\" __global__ void " + name + "() {" + body + "}\n";
  return src;
}

// `src` compiled by NVRTC so that its log holds ptxas's register and spill statistics: on the GPU
// machine NVRTC (12.9+) answered kernels the GPU tests had built from the driver's cache, with an
// empty log (Run BD calls 3-4; session 43 found the cause), so these compiles bypass it.
inline Cubin compileForStatistics(const KernelSource& src, const std::string& arch, bool want_ptx = false) {
  return compileNvrtc(src, arch, {}, want_ptx, /*want_ptxas_statistics=*/true);
}

// The largest "N bytes spill stores/loads" of a ptxas -v log (every function of the kernel); -1
// where the log has no statistics.
inline int maxSpillBytes(const std::string& log) {
  static const std::regex spill("([0-9]+) bytes spill (stores|loads)");
  int most = -1;
  for (auto it = std::sregex_iterator(log.begin(), log.end(), spill); it != std::sregex_iterator(); ++it)
    most = std::max(most, std::stoi((*it)[1].str()));
  return most;
}

// The registers per thread ptxas allocated the kernel (its first "Used N registers"); -1 if none.
inline int registersUsed(const std::string& log) {
  static const std::regex used("Used ([0-9]+) registers");
  std::smatch m;
  return std::regex_search(log, m, used) ? std::stoi(m[1].str()) : -1;
}

}  // namespace fxfuse::codegen::test
