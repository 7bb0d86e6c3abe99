#include "runtime/kernel_choice.h"

#include <mutex>
#include <unordered_map>

#include "runtime/kernel_cache.h"
#include "runtime/runtime_stats.h"

namespace fxfuse::runtime {
namespace {

struct Choices {
  std::mutex mutex;
  // address of the CachedSpec (spec cache entries live for the process, so it is stable and
  // unique) + "|" + problem + "|" + gpu -> choice set here or read from disk ("" = set to the
  // heuristic). A disk miss is not remembered: dynamic shapes plan many problems, each once
  // per call site, and a failed open costs microseconds; the map holds only choices made.
  std::unordered_map<std::string, std::string> map;
};

Choices& choices() {
  static auto* c = new Choices();  // leaked: ops may run during static destruction
  return *c;
}

std::string memoryKey(const CachedSpec& spec, const std::string& problem, const std::string& gpu) {
  return std::to_string(reinterpret_cast<uintptr_t>(&spec)) + "|" + problem + "|" + gpu;
}

}  // namespace

std::string problemClass(const codegen::ProblemShape& p) {
  return std::to_string(p.B) + "," + std::to_string(p.M) + "," + std::to_string(p.N) + "," + std::to_string(p.K) +
         "," + (p.a_kmajor ? "1" : "0") + "," + (p.b_kmajor ? "1" : "0") + "," + std::to_string(p.align_bytes_a) +
         "," + std::to_string(p.align_bytes_b) +
         // only when it is not 16, so that the keys of chains without a residual stay as they were
         (p.align_bytes_residual < 16 ? ",r" + std::to_string(p.align_bytes_residual) : "") +
         (p.align_bytes_columns < 16 ? ",c" + std::to_string(p.align_bytes_columns) : "");
}

// How a stored choice was measured (python/fxfuse/autotune.py), part of its key: bumped when the
// measurement changes, so that a choice measured the old way is measured again. 6: SLOW_FACTOR judged
// by each candidate's fastest of autotune.SLOW_WARMUP_REPS warm-up calls, not by one (session 58); 5: candidates
// more than autotune.SLOW_FACTOR times slower than the fastest are not timed among the others
// (session 28); 4: the candidates timed with their calls interleaved, each call site planned again
// untimed after its choice is set (session 27); 3: every
// candidate compiled before any is timed (session 26); 2: time_ms flushes L2 before each timed
// call (session 13); 1: it did not.
constexpr int kChoiceMeasurement = 6;

std::string choiceCacheKey(const std::string& specText, const std::string& problem, const std::string& gpu) {
  return cacheKey(specText,
                  std::string("kernel-choice/m") + std::to_string(kChoiceMeasurement) + "/" + libraryVersion() + "/" + gpu,
                  problem);
}

std::string lookupKernelChoice(const CachedSpec& spec, const std::string& problem, const std::string& gpu) {
  Choices& c = choices();
  const std::string key = memoryKey(spec, problem, gpu);
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    auto it = c.map.find(key);
    if (it != c.map.end()) return it->second;
  }
  // Read outside the lock; a corrupt or missing entry means "no choice" (the heuristic).
  std::string stored;
  if (diskCache().load(choiceCacheKey(spec.text, problem, gpu), &stored) != DiskCache::Lookup::Hit) return {};
  std::lock_guard<std::mutex> lock(c.mutex);
  return c.map.emplace(key, stored).first->second;  // a choice set meanwhile wins
}

bool recordKernelChoice(const CachedSpec& spec, const std::string& problem, const std::string& gpu,
                        const std::string& choice, bool persist) {
  {
    Choices& c = choices();
    std::lock_guard<std::mutex> lock(c.mutex);
    c.map[memoryKey(spec, problem, gpu)] = choice;
  }
  if (!persist || choice.empty()) return true;
  return diskCache().store(choiceCacheKey(spec.text, problem, gpu), choice);
}

}  // namespace fxfuse::runtime
