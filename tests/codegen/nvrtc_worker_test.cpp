// The NVRTC worker (codegen/nvrtc_worker.h) with the real NVRTC: its wire format refuses every
// truncated message, and a kernel compiled in the worker is the same cubin, PTX and log as one
// compiled in this process. Its crash, hang and start failures: nvrtc_worker_crash_test.cpp.
#include <gtest/gtest.h>

#include <cstdlib>
#include <regex>

#include "codegen/codegen.h"
#include "codegen/nvrtc_worker.h"
#include "test_util.h"

namespace fxfuse::codegen {
namespace {

WorkerRequest sampleRequest() {
  WorkerRequest r;
  r.library = "/usr/lib/libnvrtc.so.13";
  r.name = "k";
  r.code = std::string("extern \"C\" __global__ void k() {}\n") + '\0' + "binary\xff";
  r.options = {"--gpu-architecture=sm_90a", "", "-DX=1"};
  r.want_ptx = true;
  return r;
}

TEST(NvrtcWorkerWire, RequestRoundTrips) {
  const WorkerRequest r = sampleRequest();
  WorkerRequest back;
  ASSERT_TRUE(decodeRequest(encodeRequest(r), &back));
  EXPECT_EQ(back.library, r.library);
  EXPECT_EQ(back.name, r.name);
  EXPECT_EQ(back.code, r.code);
  EXPECT_EQ(back.options, r.options);
  EXPECT_TRUE(back.want_ptx);
}

TEST(NvrtcWorkerWire, AnswerRoundTrips) {
  WorkerAnswer a;
  a.result = -6;
  a.result_name = "NVRTC_ERROR_COMPILATION";
  a.log = "log";
  a.cubin = std::string("\x7f" "ELF\0\1", 6);
  a.ptx = "ptx";
  a.failure = "why";
  WorkerAnswer back;
  ASSERT_TRUE(decodeAnswer(encodeAnswer(a), &back));
  EXPECT_EQ(back.result, -6);
  EXPECT_EQ(back.result_name, a.result_name);
  EXPECT_EQ(back.log, a.log);
  EXPECT_EQ(back.cubin, a.cubin);
  EXPECT_EQ(back.ptx, a.ptx);
  EXPECT_EQ(back.failure, a.failure);
}

// A worker that died mid-write leaves a prefix: no prefix, and no message with bytes after it, decodes.
TEST(NvrtcWorkerWire, EveryTruncationAndTrailingBytesAreRefused) {
  const std::string request = encodeRequest(sampleRequest());
  WorkerAnswer a;
  a.log = "some log";
  a.cubin = "cubin";
  const std::string answer = encodeAnswer(a);
  WorkerRequest r;
  WorkerAnswer back;
  for (size_t n = 0; n < request.size(); ++n) EXPECT_FALSE(decodeRequest(request.substr(0, n), &r)) << n;
  for (size_t n = 0; n < answer.size(); ++n) EXPECT_FALSE(decodeAnswer(answer.substr(0, n), &back)) << n;
  EXPECT_FALSE(decodeRequest(request + "x", &r));
  EXPECT_FALSE(decodeAnswer(answer + "x", &back));
  EXPECT_FALSE(decodeAnswer(request, &back));  // the other message's tag
}

// A request whose option count no message of its size could hold is refused before anything is
// allocated (a count of 2^40 would ask for terabytes of empty strings).
TEST(NvrtcWorkerWire, AnImpossibleOptionCountIsRefused) {
  WorkerRequest r = sampleRequest();
  r.options.clear();
  std::string bytes = encodeRequest(r);
  bytes.resize(bytes.size() - 9);  // the option count "0": its 8-byte length and the digit
  const std::string count = "1099511627776";
  for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<char>((count.size() >> (8 * i)) & 0xff));
  bytes += count + std::string(64, 'x');
  WorkerRequest back;
  EXPECT_FALSE(decodeRequest(bytes, &back));
}

TEST(NvrtcWorker, IsBuilt) {
  const std::string worker = nvrtcWorkerPath();
  ASSERT_FALSE(worker.empty()) << "fxfuse-nvrtc-worker not found (built by codegen/CMakeLists.txt)";
}

// The same generated kernel, compiled through the worker (the default) and in this process.
TEST(NvrtcWorker, CompilesTheSameCubinAsInProcess) {
  REQUIRE_NVRTC();
  ASSERT_FALSE(nvrtcWorkerPath().empty());
  const spec::ChainSpec s = test::biasGeluTanh();
  const KernelSource src = generate(s, KernelConfig{"sm80_mma", 128, 128, 32, 2, 256});
  ::unsetenv("FXFUSE_COMPILE_IN_PROCESS");  // the worker, whatever the caller's environment
  const Cubin worker = test::compileForStatistics(src, "sm_80", /*want_ptx=*/true);
  ::setenv("FXFUSE_COMPILE_IN_PROCESS", "1", 1);
  const Cubin here = test::compileForStatistics(src, "sm_80", /*want_ptx=*/true);
  ::unsetenv("FXFUSE_COMPILE_IN_PROCESS");
  EXPECT_FALSE(worker.in_process);
  EXPECT_TRUE(here.in_process);
  EXPECT_GT(worker.image.size(), 1000u);
  EXPECT_EQ(worker.image, here.image);
  EXPECT_EQ(worker.ptx, here.ptx);
  // the logs differ only in ptxas's "Compile time = N ms"
  const auto untimed = [](const std::string& log) { return std::regex_replace(log, std::regex("Compile time = .*"), ""); };
  EXPECT_EQ(untimed(worker.log), untimed(here.log));
  EXPECT_NE(worker.log.find("Used "), std::string::npos) << worker.log;
}

// A compile error through the worker is the same CompileError, with NVRTC's log and the source.
TEST(NvrtcWorker, ReportsCompileErrorsWithTheLog) {
  REQUIRE_NVRTC();
  try {
    compileNvrtc(test::bareKernel("broken", " undeclared_name(); "), "sm_80");
    FAIL() << "compiled";
  } catch (const CompileError& e) {
    EXPECT_NE(e.log.find("undeclared_name"), std::string::npos) << e.log;
    EXPECT_NE(std::string(e.what()).find("NVRTC_ERROR_COMPILATION"), std::string::npos) << e.what();
  }
}

TEST(NvrtcWorker, RejectsABadTimeout) {
  REQUIRE_NVRTC();
  ::setenv("FXFUSE_COMPILE_TIMEOUT_S", "soon", 1);
  EXPECT_THROW(compileNvrtc(test::bareKernel("k"), "sm_80"), CodegenError);
  ::unsetenv("FXFUSE_COMPILE_TIMEOUT_S");
}

}  // namespace
}  // namespace fxfuse::codegen
