#include <fstream>
#include <iostream>
#include "codegen/codegen.h"
#include "codegen/config_table.h"
#include "codegen/hooks.h"
#include "spec/chain_spec.h"
using namespace fxfuse;
// usage: gen specfile out.cu bm bn bk stages wgmma
int main(int argc, char** argv) {
  std::ifstream f(argv[1]); std::string text((std::istreambuf_iterator<char>(f)), {});
  spec::ChainSpec s = spec::parseSpec(text);
  codegen::KernelConfig c{"gemv", atoi(argv[3]), atoi(argv[4]), atoi(argv[5]), atoi(argv[6]), 128};
  c.max_cluster = 8;
  c.wgmma = atoi(argv[7]) != 0;
  c.nibbles = codegen::analyzeB(s).nibbles;  // (session 62: the config names packed int4 weights)
  spec::validateSpec(s);
  auto b = codegen::analyzeB(s);
  std::cerr << "nibbles " << b.nibbles << " kmajor " << b.kmajor << " zero " << b.zero << " group " << b.scale_group << "\n";
  codegen::KernelSource src = codegen::generate(s, c);
  std::ofstream o(argv[2]);
  o << src.code << "\n#define GEN_SMEM " << src.smem_bytes << "\n#define GEN_NAME " << src.name << "\n";
  std::cerr << "smem " << src.smem_bytes << " name " << src.name << " ctas " << codegen::gemvCtasPerSm(c) << "\n";
}
