// A tiny JSON writer (no dependency): objects and arrays nest, commas are automatic, keys
// are written in the order given, so output is deterministic.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fxfuse::pass {

class JsonWriter {
 public:
  JsonWriter& beginObject() { return open('{'); }
  JsonWriter& endObject() { return close('}'); }
  JsonWriter& beginArray() { return open('['); }
  JsonWriter& endArray() { return close(']'); }
  JsonWriter& key(std::string_view k);
  JsonWriter& value(std::string_view s);
  JsonWriter& value(const char* s) { return value(std::string_view(s)); }
  JsonWriter& value(int64_t v);
  JsonWriter& value(int v) { return value(static_cast<int64_t>(v)); }
  JsonWriter& value(bool v);
  JsonWriter& stringArray(const std::vector<std::string>& items);
  const std::string& str() const { return out_; }

  static std::string quote(std::string_view s);

 private:
  JsonWriter& open(char c);
  JsonWriter& close(char c);
  void separate();
  std::string out_;
  std::vector<bool> first_;  // per open container: nothing written yet
  bool afterKey_ = false;
};

}  // namespace fxfuse::pass
