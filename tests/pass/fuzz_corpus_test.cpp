// Replays the IR parser fuzz corpus (fuzz/corpus/ir_parser, crashers included once found)
// through the fuzz target's entry point, so every past finding stays a regression test
// without clang or libFuzzer.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <gtest/gtest.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

TEST(IrParserFuzzCorpus, EveryInputKeepsTheProperties) {
  namespace fs = std::filesystem;
  int replayed = 0;
  for (const auto& entry : fs::directory_iterator(FXFUSE_FUZZ_CORPUS_DIR)) {
    std::ifstream in(entry.path(), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    SCOPED_TRACE(entry.path().string());
    EXPECT_EQ(LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()), 0);
    ++replayed;
  }
  EXPECT_GT(replayed, 10);
}

}  // namespace
