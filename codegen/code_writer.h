// A small writer for generated CUDA: indentation, blocks and fmt format strings, so the
// generator reads like the code it emits instead of string concatenation.
#pragma once

#include <fmt/format.h>

#include <string>
#include <utility>

namespace fxfuse::codegen {

class CodeWriter {
 public:
  // One line at the current indentation: w.line("float {} = {};", name, expr).
  template <typename... Args>
  void line(fmt::format_string<Args...> f, Args&&... args) {
    raw(fmt::format(f, std::forward<Args>(args)...));
  }
  // A line whose text is already formatted.
  void raw(const std::string& text);
  void blank();
  // Several lines (e.g. an embedded file) copied verbatim, not indented.
  void verbatim(const std::string& text);

  // "head {" ... "}" with the body indented; tail goes after the brace ("};", "} while…").
  class Block {
   public:
    Block(CodeWriter& w, std::string tail) : w_(w), tail_(std::move(tail)) {}
    Block(Block&& other) noexcept : w_(other.w_), tail_(std::move(other.tail_)), open_(other.open_) {
      other.open_ = false;
    }
    ~Block() { close(); }
    void close();
    // "} else {": closes this body and opens the next one at the same depth.
    template <typename... Args>
    void chain(fmt::format_string<Args...> f, Args&&... args) {
      --w_.indent_;
      w_.raw("} " + fmt::format(f, std::forward<Args>(args)...) + " {");
      ++w_.indent_;
    }

   private:
    CodeWriter& w_;
    std::string tail_;
    bool open_ = true;
  };
  template <typename... Args>
  [[nodiscard]] Block block(fmt::format_string<Args...> f, Args&&... args) {
    raw(fmt::format(f, std::forward<Args>(args)...) + " {");
    ++indent_;
    return Block(*this, "}");
  }
  // For struct/lambda bodies that end in "};".
  template <typename... Args>
  [[nodiscard]] Block blockSemi(fmt::format_string<Args...> f, Args&&... args) {
    raw(fmt::format(f, std::forward<Args>(args)...) + " {");
    ++indent_;
    return Block(*this, "};");
  }

  const std::string& str() const { return out_; }

 private:
  std::string out_;
  int indent_ = 0;
};

}  // namespace fxfuse::codegen
