// Measured kernel choices (runtime/kernel_choice.h): per spec, problem class and GPU, set in
// this process or read back from the disk cache by a process that never measured.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "runtime/kernel_cache.h"
#include "runtime/kernel_choice.h"
#include "test_dir.h"

namespace fxfuse::runtime {
namespace {

namespace fs = std::filesystem;

const char* kSpec =
    "fxfuse.chain v1\ngemm mm\n%0 = input 0 bf16 [m,k]\n%1 = input 1 bf16 [k,n]\n%2 = mm %0 %1 : f32\n"
    "%3 = relu %2 : bf16\noutput %3\n";
const char* kGpu = "NVIDIA H200/sm90/132";
const char* kTile = "sm90_wgmma 64x256x64 s5 t384 pingpong";

class KernelChoiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::freshTestDir("fxfuse_choice_test_");
    oldDir_ = diskCache().directory();
    diskCache().setDirectory(dir_.string());
  }
  void TearDown() override {
    diskCache().setDirectory(oldDir_);
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  // A spec entry as another process would hold it: same text, its own CachedSpec (the
  // in-memory choices are per entry, so a fresh one reads the disk). Never freed, like the
  // spec cache's entries, whose addresses key the in-memory choices.
  static const CachedSpec* freshEntry() {
    auto* s = new CachedSpec();
    s->text = kSpec;
    s->spec = spec::parseSpec(s->text);
    return s;
  }
  fs::path dir_;
  std::string oldDir_;
};

codegen::ProblemShape problem(long long M, int alignA = 16) {
  codegen::ProblemShape p;
  p.M = M;
  p.N = 4096;
  p.K = 1024;
  p.align_bytes_a = alignA;
  return p;
}

TEST_F(KernelChoiceTest, ProblemClassNamesWhatSelectsAKernel) {
  EXPECT_EQ(problemClass(problem(4096)), "1,4096,4096,1024,1,0,16,16");
  EXPECT_NE(problemClass(problem(4096)), problemClass(problem(4096, 8)));  // alignment counts
  codegen::ProblemShape residual8 = problem(4096);
  residual8.align_bytes_residual = 8;  // a residual the Hopper kernel cannot stage
  EXPECT_EQ(problemClass(residual8), "1,4096,4096,1024,1,0,16,16,r8");
  residual8.align_bytes_columns = 2;  // and a bias the fast path cannot pair
  EXPECT_EQ(problemClass(residual8), "1,4096,4096,1024,1,0,16,16,r8,c2");
}

TEST_F(KernelChoiceTest, NoneMadeMeansTheHeuristic) {
  const auto s = freshEntry();
  EXPECT_EQ(lookupKernelChoice(*s, problemClass(problem(4096)), kGpu), "");
}

TEST_F(KernelChoiceTest, SetInMemoryOnlyIsNotSeenByAnotherProcess) {
  const auto a = freshEntry(), b = freshEntry();
  ASSERT_TRUE(recordKernelChoice(*a, problemClass(problem(4096)), kGpu, kTile, /*persist=*/false));
  EXPECT_EQ(lookupKernelChoice(*a, problemClass(problem(4096)), kGpu), kTile);
  EXPECT_EQ(lookupKernelChoice(*b, problemClass(problem(4096)), kGpu), "");
}

TEST_F(KernelChoiceTest, PersistedChoiceIsReadBackForTheSameProblemAndGpuOnly) {
  const auto a = freshEntry();
  ASSERT_TRUE(recordKernelChoice(*a, problemClass(problem(4096)), kGpu, kAtenChoice, /*persist=*/true));
  const auto b = freshEntry();
  EXPECT_EQ(lookupKernelChoice(*b, problemClass(problem(4096)), kGpu), kAtenChoice);
  EXPECT_EQ(lookupKernelChoice(*b, problemClass(problem(2048)), kGpu), "");
  EXPECT_EQ(lookupKernelChoice(*b, problemClass(problem(4096)), "NVIDIA H100/sm90/132"), "");
  // "" in this process means the heuristic, whatever the disk says
  ASSERT_TRUE(recordKernelChoice(*b, problemClass(problem(4096)), kGpu, "", /*persist=*/true));
  EXPECT_EQ(lookupKernelChoice(*b, problemClass(problem(4096)), kGpu), "");
  const auto c = freshEntry();
  EXPECT_EQ(lookupKernelChoice(*c, problemClass(problem(4096)), kGpu), kAtenChoice);
}

TEST_F(KernelChoiceTest, CorruptEntryMeansNoChoice) {
  const auto a = freshEntry();
  const std::string problemText = problemClass(problem(4096));
  ASSERT_TRUE(recordKernelChoice(*a, problemText, kGpu, kTile, /*persist=*/true));
  const std::string path = diskCache().entryPath(choiceCacheKey(kSpec, problemText, kGpu));
  ASSERT_TRUE(fs::exists(path));
  std::fstream(path, std::ios::in | std::ios::out | std::ios::binary).seekp(70).put('#');  // payload byte
  const auto b = freshEntry();
  EXPECT_EQ(lookupKernelChoice(*b, problemText, kGpu), "");
}

}  // namespace
}  // namespace fxfuse::runtime
