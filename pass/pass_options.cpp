// A flat JSON object reader for the pass options: {"key": true|false|number|"string"|null}.
#include "pass/pass_options.h"

#include <cctype>
#include <cstdlib>
#include <regex>
#include <string>

namespace fxfuse::pass {
namespace {

class FlatJson {
 public:
  explicit FlatJson(const std::string& s) : s_(s) {}

  // Calls `onValue(key, kind, text)` per member; kind: 'b' bool, 'n' number, 's' string, 'z' null.
  template <typename Fn>
  bool parse(Fn&& onValue, std::string* error) {
    skip();
    if (pos_ == s_.size()) return true;  // empty options = defaults
    if (!eat('{')) return fail("expected '{'", error);
    skip();
    if (eat('}')) return end(error);
    while (true) {
      std::string key;
      if (!string(&key)) return fail("expected a string key", error);
      if (!eat(':')) return fail("expected ':'", error);
      char kind;
      std::string text;
      if (!value(&kind, &text)) return fail("expected true, false, null, a number or a string", error);
      if (!onValue(key, kind, text, error)) return false;
      if (eat(',')) continue;
      if (eat('}')) return end(error);
      return fail("expected ',' or '}'", error);
    }
  }

 private:
  void skip() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\t' || s_[pos_] == '\r')) ++pos_;
  }
  bool eat(char c) {
    skip();
    if (pos_ < s_.size() && s_[pos_] == c) return ++pos_, true;
    return false;
  }
  bool word(const char* w) {
    size_t n = std::char_traits<char>::length(w);
    if (s_.compare(pos_, n, w) != 0) return false;
    pos_ += n;
    return true;
  }
  bool string(std::string* out) {
    if (!eat('"')) return false;
    while (pos_ < s_.size() && s_[pos_] != '"') {
      if (s_[pos_] == '\\') {
        if (++pos_ >= s_.size()) return false;
      }
      out->push_back(s_[pos_++]);
    }
    return pos_ < s_.size() && ++pos_;
  }
  bool value(char* kind, std::string* text) {
    skip();
    if (word("true")) return *kind = 'b', *text = "true", true;
    if (word("false")) return *kind = 'b', *text = "false", true;
    if (word("null")) return *kind = 'z', true;
    if (pos_ < s_.size() && s_[pos_] == '"') return *kind = 's', string(text);
    size_t start = pos_;
    while (pos_ < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '-' ||
                                s_[pos_] == '+' || s_[pos_] == '.' || s_[pos_] == 'e' || s_[pos_] == 'E'))
      ++pos_;
    *kind = 'n';
    *text = s_.substr(start, pos_ - start);
    return !text->empty();
  }
  bool end(std::string* error) {
    skip();
    return pos_ == s_.size() || fail("unexpected text after the object", error);
  }
  bool fail(const char* msg, std::string* error) {
    *error = "options JSON, offset " + std::to_string(pos_) + ": " + msg;
    return false;
  }
  const std::string& s_;
  size_t pos_ = 0;
};

}  // namespace

bool parsePassOptions(const std::string& json, PassOptions* o, std::vector<std::string>* warnings,
                      std::string* error) {
  auto onValue = [&](const std::string& key, char kind, const std::string& text, std::string* err) {
    auto wrong = [&](const char* want) {
      *err = "option \"" + key + "\" must be " + want;
      return false;
    };
    auto setBool = [&](bool* field) {
      if (kind != 'b') return wrong("true or false");
      *field = text == "true";
      return true;
    };
    auto setInt = [&](int* field) {
      char* end = nullptr;
      long v = std::strtol(text.c_str(), &end, 10);
      if (kind != 'n' || *end != '\0' || v < 0 || v > (1 << 30)) return wrong("a non-negative integer");
      *field = static_cast<int>(v);
      return true;
    };
    if (key == "min_k") return setInt(&o->minK);
    // fxfuse.Options sends these four; unknown here, they were ignored with a warning (session 50)
    if (key == "min_m") return setInt(&o->minM);
    if (key == "min_n") return setInt(&o->minN);
    if (key == "prologue") return setBool(&o->prologue);
    if (key == "epilogue") return setBool(&o->epilogue);
    if (key == "allow_fp32") return setBool(&o->allowFp32);
    if (key == "extra_outputs") return setBool(&o->extraOutputs);
    if (key == "allow_cpu") return setBool(&o->allowCpu);
    if (key == "require_aligned") return setBool(&o->requireAligned);
    if (key == "only_profitable") return setBool(&o->onlyProfitable);
    if (key == "nvrtc") return setBool(&o->nvrtc);
    if (key == "size_hints") {
      if (kind != 's') return wrong("a string \"dim=size;dim=size\"");
      size_t start = 0;
      while (start < text.size()) {
        size_t end = text.find(';', start);
        if (end == std::string::npos) end = text.size();
        const std::string item = text.substr(start, end - start);
        const size_t eq = item.rfind('=');
        char* stop = nullptr;
        const long long v = eq == std::string::npos ? -1 : std::strtoll(item.c_str() + eq + 1, &stop, 10);
        if (eq == std::string::npos || eq == 0 || *stop != '\0' || v < 0)
          return wrong("a string \"dim=size;dim=size\" with non-negative sizes");
        o->sizeHints[item.substr(0, eq)] = v;
        start = end + 1;
      }
      return true;
    }
    if (key == "unrounded_groups") {
      if (kind != 's') return wrong("a string \"name,name\"");
      for (size_t start = 0; start < text.size();) {
        size_t end = text.find(',', start);
        if (end == std::string::npos) end = text.size();
        if (end > start) o->unroundedGroups.insert(text.substr(start, end - start));
        start = end + 1;
      }
      return true;
    }
    if (key == "baseline") {
      if (kind != 's' || (text != "eager" && text != "inductor")) return wrong("\"eager\" or \"inductor\"");
      o->baseline = text;
      return true;
    }
    if (key == "arch") {
      // "sm_", two or three digits, an optional feature letter (sm_90a): a typo ("bogus", "90") would
      // otherwise plan for no known GPU and fuse nothing, silently
      static const std::regex kArch("sm_[0-9]{2,3}[af]?");
      if (kind != 's' || !std::regex_match(text, kArch)) return wrong("a GPU architecture such as \"sm_90\"");
      o->arch = text;
      return true;
    }
    warnings->push_back("unknown option \"" + key + "\" ignored");
    return true;
  };
  return FlatJson(json).parse(onValue, error);
}

}  // namespace fxfuse::pass
