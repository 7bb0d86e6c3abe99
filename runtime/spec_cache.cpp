#include "runtime/spec_cache.h"

namespace fxfuse::runtime {
namespace {

struct SpecCache {
  std::mutex mutex;
  // Keys view entry->text (entries are never freed), so lookups take a string_view.
  std::unordered_map<std::string_view, std::shared_ptr<const CachedSpec>> map;
};

SpecCache& cache() {
  static auto* c = new SpecCache();  // leaked: ops may run during static destruction
  return *c;
}

}  // namespace

std::shared_ptr<const CachedSpec> getCachedSpec(std::string_view text) {
  SpecCache& c = cache();
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    auto it = c.map.find(text);
    if (it != c.map.end()) return it->second;
  }
  // Parse outside the lock: two threads may parse the same text once each; the first insert
  // wins and both get equal specs.
  auto entry = std::make_shared<CachedSpec>();
  entry->text = std::string(text);
  entry->spec = spec::parseSpec(entry->text);
  std::lock_guard<std::mutex> lock(c.mutex);
  const std::string_view key = entry->text;  // views the heap entry: stable while it lives
  return c.map.emplace(key, std::move(entry)).first->second;
}

std::string dimLetters(const std::string& dims) {
  std::string letters;
  for (char c : dims)
    if (std::string_view("bmkngpq1").find(c) != std::string_view::npos) letters.push_back(c);
  return letters;
}

size_t cachedSpecCount() {
  SpecCache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  return c.map.size();
}

}  // namespace fxfuse::runtime
