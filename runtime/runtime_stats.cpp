#include "runtime/runtime_stats.h"

namespace fxfuse::runtime {

RuntimeStats& stats() {
  static auto* s = new RuntimeStats();  // leaked: may be bumped during static destruction
  return *s;
}

std::vector<std::pair<std::string, int64_t>> RuntimeStats::snapshot() const {
  return {
      {"cpu_calls", cpuCalls.load()},
      {"launches", launches.load()},
      {"fallbacks", fallbacks.load()},
      {"aten_dispatch", atenDispatch.load()},
      {"cluster_launches", clusterLaunches.load()},
      {"pdl_launches", pdlLaunches.load()},
      {"pdl_launch_refusals", pdlLaunchRefusals.load()},
      {"hopper_split_k_launches", hopperSplitKLaunches.load()},
      {"hopper_overlap_launches", hopperOverlapLaunches.load()},
      {"pointwise_launches", pointwiseLaunches.load()},
      {"call_cache_hits", callCacheHits.load()},
      {"kernels_compiled", kernelsCompiled.load()},
      {"compiler_crashes", compilerCrashes.load()},
      {"compiles_in_process", compilesInProcess.load()},
      {"memory_hits", memoryHits.load()},
      {"disk_hits", diskHits.load()},
      {"disk_misses", diskMisses.load()},
      {"disk_rebuilds", diskRebuilds.load()},
      {"disk_writes", diskWrites.load()},
      {"disk_write_failures", diskWriteFailures.load()},
      {"unsafe_register_fallbacks", unsafeRegisterFallbacks.load()},
      {"background_compiles", backgroundCompiles.load()},
      {"background_compile_calls", backgroundCompileCalls.load()},
      {"expect_reads", expectReads.load()},
  };
}

void RuntimeStats::reset() {
  for (auto* c : {&cpuCalls, &launches, &fallbacks, &atenDispatch, &clusterLaunches, &pdlLaunches, &pdlLaunchRefusals,
                  &hopperSplitKLaunches, &hopperOverlapLaunches,
                  &pointwiseLaunches, &callCacheHits, &kernelsCompiled, &compilerCrashes, &compilesInProcess, &memoryHits, &diskHits, &diskMisses,
                  &diskRebuilds, &diskWrites, &diskWriteFailures, &unsafeRegisterFallbacks,
                  &backgroundCompiles, &backgroundCompileCalls, &expectReads})
    c->store(0);
}

}  // namespace fxfuse::runtime
