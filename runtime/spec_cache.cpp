#include "runtime/spec_cache.h"

namespace fxfuse::runtime {
namespace {

struct SpecCache {
  std::mutex mutex;
  std::unordered_map<std::string, std::shared_ptr<const CachedSpec>> map;
};

SpecCache& cache() {
  static auto* c = new SpecCache();  // leaked: ops may run during static destruction
  return *c;
}

}  // namespace

std::shared_ptr<const CachedSpec> getCachedSpec(const std::string& text) {
  SpecCache& c = cache();
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    auto it = c.map.find(text);
    if (it != c.map.end()) return it->second;
  }
  // Parse outside the lock: two threads may parse the same text once each; the first insert
  // wins and both get equal specs.
  auto entry = std::make_shared<CachedSpec>();
  entry->text = text;
  entry->spec = spec::parseSpec(text);
  std::lock_guard<std::mutex> lock(c.mutex);
  return c.map.emplace(text, std::move(entry)).first->second;
}

std::string dimLetters(const std::string& dims) {
  std::string letters;
  for (char c : dims)
    if (c == 'b' || c == 'm' || c == 'k' || c == 'n' || c == '1') letters.push_back(c);
  return letters;
}

size_t cachedSpecCount() {
  SpecCache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  return c.map.size();
}

}  // namespace fxfuse::runtime
