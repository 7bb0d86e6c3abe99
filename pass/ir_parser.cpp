// Recursive-descent parser for docs/ir.md. User errors are reported as ParseError with the
// line and column; internally they unwind with a private exception type that never leaves
// parseGraph. Recursion (nested lists, tuple types) is bounded by kMaxNesting.
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <unordered_set>

#include <fmt/format.h>

#include "pass/ir_text.h"

namespace fxfuse::ir {

std::string ParseError::str() const { return fmt::format("{}:{}: {}", line, column, message); }

namespace {

struct Failure {
  ParseError error;
};

bool isNameStart(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; }
bool isDigit(char c) { return c >= '0' && c <= '9'; }
bool isNameChar(char c) { return isNameStart(c) || isDigit(c) || c == '.'; }

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  Graph parseGraph() {
    Graph g;
    expectWord("graph");
    expect('{', "expected '{' after 'graph'");
    while (true) {
      skipSpace();
      if (peek() == '%') {
        g.nodes.push_back(parseNode());
        continue;
      }
      if (peekWord() == "output") break;
      fail("expected a node ('%name : type = ...') or 'output'");
    }
    expectWord("output");
    expect('(', "expected '(' after 'output'");
    skipSpace();
    if (peek() != ')') {
      while (true) {
        g.outputs.push_back(parseArg(0));
        if (!accept(',')) break;
      }
    }
    expect(')', "expected ')' or ',' in output list");
    expect('}', "expected '}' after the output line");
    skipSpace();
    if (pos_ != text_.size()) fail("unexpected text after the graph");
    return g;
  }

 private:
  // ---- lexical helpers -------------------------------------------------------------
  [[noreturn]] void fail(const std::string& msg) { failAt(pos_, msg); }
  [[noreturn]] void failAt(size_t at, const std::string& msg) {
    int line = 1, col = 1;
    for (size_t i = 0; i < at && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    throw Failure{ParseError{line, col, msg}};
  }

  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  bool atEnd() const { return pos_ >= text_.size(); }

  void skipSpace() {
    while (!atEnd()) {
      char c = text_[pos_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++pos_;
      } else if (c == '#') {
        while (!atEnd() && text_[pos_] != '\n') ++pos_;
      } else {
        break;
      }
    }
  }

  bool accept(char c) {
    skipSpace();
    if (peek() != c) return false;
    ++pos_;
    return true;
  }
  void expect(char c, const char* msg) {
    if (!accept(c)) fail(msg);
  }

  std::string_view peekWord() {
    skipSpace();
    size_t end = pos_;
    if (end < text_.size() && isNameStart(text_[end]))
      while (end < text_.size() && isNameChar(text_[end])) ++end;
    return text_.substr(pos_, end - pos_);
  }
  std::string parseName(const char* what) {
    std::string_view w = peekWord();
    if (w.empty()) fail(fmt::format("expected {}", what));
    pos_ += w.size();
    return std::string(w);
  }
  void expectWord(std::string_view word) {
    if (peekWord() != word) fail(fmt::format("expected '{}'", word));
    pos_ += word.size();
  }

  void enter(int depth) {
    if (depth >= kMaxNesting) fail(fmt::format("nesting deeper than {}", kMaxNesting));
  }

  // ---- nodes -----------------------------------------------------------------------
  Node parseNode() {
    Node n;
    size_t nameAt = pos_;
    expect('%', "expected '%'");
    n.name = parseName("a value name after '%'");
    if (defined_.count(n.name)) failAt(nameAt, fmt::format("redefinition of %{}", n.name));
    expect(':', "expected ':' after value name");
    n.type = parseType(0);
    expect('=', "expected '=' after the type");
    std::string_view w = peekWord();
    if (w == "placeholder") {
      pos_ += w.size();
      n.op = Node::Op::Placeholder;
      n.known = parseKnownValues();
    } else if (w == "get_attr") {
      pos_ += w.size();
      n.op = Node::Op::GetAttr;
      skipSpace();
      if (peek() != '"') fail("expected a string after 'get_attr'");
      n.target = parseString();
      n.known = parseKnownValues();
    } else {
      n.op = Node::Op::Call;
      n.target = parseName("'placeholder', 'get_attr' or an op name");
      expect('(', "expected '(' after the op name");
      parseCallArgs(&n);
    }
    // Defined only after its own arguments: a node that reads itself would be a cycle, which
    // an FX graph never has and the pass's use-def walks must never meet (found by fuzzing).
    defined_.insert(n.name);
    return n;
  }

  // `values [1, 2, 3]` or `kgroups 128` after a placeholder or get_attr, or nothing.
  KnownValues parseKnownValues() {
    KnownValues k;
    const std::string_view w = peekWord();
    if (w == "values") {
      pos_ += w.size();
      k.kind = KnownValues::Kind::List;
      expect('[', "expected '[' after 'values'");
      if (!accept(']')) {
        while (true) {
          k.list.push_back(parseKnownInt("an integer in 'values'"));
          if (accept(']')) break;
          expect(',', "expected ',' or ']' in 'values'");
        }
      }
      if (k.list.empty()) fail("'values' needs at least one element");
    } else if (w == "kgroups") {
      pos_ += w.size();
      k.kind = KnownValues::Kind::KGroups;
      k.group = parseKnownInt("a group size after 'kgroups'");
      if (k.group <= 0) fail("the group size after 'kgroups' must be positive");
    }
    return k;
  }

  int64_t parseKnownInt(const char* what) {
    skipSpace();
    const size_t start = pos_;
    if (peek() == '-') ++pos_;
    while (isDigit(peek())) ++pos_;
    int64_t v = 0;
    const auto [end, ec] = std::from_chars(text_.data() + start, text_.data() + pos_, v);
    if (start == pos_ || ec != std::errc() || end != text_.data() + pos_) failAt(start, fmt::format("expected {}", what));
    return v;
  }

  void parseCallArgs(Node* n) {
    skipSpace();
    if (accept(')')) return;
    while (true) {
      skipSpace();
      size_t save = pos_;
      std::string_view w = peekWord();
      if (!w.empty()) {
        pos_ += w.size();
        skipSpace();
        if (peek() == '=') {
          ++pos_;
          n->kwargs.push_back(NamedArg{std::string(w), parseArg(0)});
          if (!accept(',')) break;
          continue;
        }
        pos_ = save;
      }
      if (!n->kwargs.empty()) fail("positional argument after a keyword argument");
      n->args.push_back(parseArg(0));
      if (!accept(',')) break;
    }
    expect(')', "expected ')' or ',' in argument list");
  }

  // ---- types -----------------------------------------------------------------------
  Type parseType(int depth) {
    enter(depth);
    skipSpace();
    Type t;
    if (accept('?')) return t;
    if (accept('(')) {
      t.kind = Type::Kind::Tuple;
      if (accept(')')) return t;
      while (true) {
        t.elems.push_back(parseType(depth + 1));
        if (!accept(',')) break;
      }
      expect(')', "expected ')' or ',' in tuple type");
      return t;
    }
    std::string name = parseName("a type");
    if (name == "sym") {
      t.kind = Type::Kind::Sym;
      return t;
    }
    if (name == "none") {
      t.kind = Type::Kind::None;
      return t;
    }
    t.kind = Type::Kind::Tensor;
    // An unknown dtype name still parses (the pass rejects the node), unless it is a keyword.
    if (!spec::parseDType(name, &t.tensor.dtype)) t.tensor.otherDtype = name;
    expect('[', "expected '[' after the dtype");
    t.tensor.sizes = parseDimList(']');
    skipSpace();
    if (peek() == '{') {
      ++pos_;
      t.tensor.hasStrides = true;
      t.tensor.strides = parseDimList('}');
    }
    skipSpace();
    if (peek() == '@') {
      ++pos_;
      t.tensor.device = parseDevice();
    }
    return t;
  }

  std::vector<Dim> parseDimList(char close) {
    std::vector<Dim> dims;
    if (accept(close)) return dims;
    while (true) {
      dims.push_back(parseDim());
      if (!accept(',')) break;
    }
    if (!accept(close)) fail(fmt::format("expected '{}' or ',' in dimension list", close));
    return dims;
  }

  Dim parseDim() {
    skipSpace();
    char c = peek();
    if (c == '(') return Dim::sym(parseParenText());
    if (isNameStart(c)) return Dim::sym(parseName("a dimension"));
    if (isDigit(c) || c == '-') return Dim::concrete(parseInt());
    fail("expected a dimension (integer, name or '(expr)')");
  }

  // `(` … `)` with balanced parentheses, on one line; returned verbatim with the parens.
  std::string parseParenText() {
    size_t start = pos_;
    int level = 0;
    while (!atEnd()) {
      char c = text_[pos_];
      if (c == '\n') break;
      ++pos_;
      if (c == '(') ++level;
      if (c == ')' && --level == 0) return std::string(text_.substr(start, pos_ - start));
    }
    failAt(start, "unterminated '(' in a symbolic expression");
  }

  std::string parseDevice() {
    std::string dev = parseName("a device name");
    if (peek() == ':') {  // no space allowed inside `cuda:0`
      ++pos_;
      if (!isDigit(peek())) fail("expected a device index after ':'");
      dev += ':' + std::to_string(parseInt());
    }
    return dev;
  }

  // ---- arguments -------------------------------------------------------------------
  Arg parseArg(int depth) {
    enter(depth);
    skipSpace();
    char c = peek();
    size_t at = pos_;
    if (c == '%') {
      ++pos_;
      std::string name = parseName("a value name after '%'");
      if (!defined_.count(name)) failAt(at, fmt::format("use of undefined value %{}", name));
      return Arg::value(std::move(name));
    }
    if (c == '"') return Arg::string(parseString());
    if (c == '[') {
      ++pos_;
      std::vector<Arg> items;
      if (!accept(']')) {
        while (true) {
          items.push_back(parseArg(depth + 1));
          if (!accept(',')) break;
        }
        expect(']', "expected ']' or ',' in list");
      }
      return Arg::listOf(std::move(items));
    }
    if (isDigit(c) || c == '-' || c == '+' || c == '.') return parseNumber();
    std::string_view w = peekWord();
    if (w.empty()) fail("expected an argument");
    pos_ += w.size();
    if (w == "true" || w == "false") return Arg::boolean(w == "true");
    if (w == "none") return Arg::none();
    if (w == "inf") return Arg::real(INFINITY);
    if (w == "nan") return Arg::real(NAN);
    DType d;
    if (spec::parseDType(std::string(w), &d)) return Arg::dtypeArg(d);
    if (w == "device" || w == "enum" || w == "sym") {
      Arg a;
      expect('(', "expected '('");
      if (w == "device") {
        a.kind = Arg::Kind::Device;
        a.s = parseDevice();
      } else if (w == "enum") {
        a.kind = Arg::Kind::Enum;
        a.s = parseName("an enum name");
      } else {
        a.kind = Arg::Kind::Sym;
        a.s = parseDim().str();
      }
      expect(')', "expected ')'");
      return a;
    }
    Arg name;  // a dtype outside the spec table, written bare by the exporter
    name.kind = Arg::Kind::Name;
    name.s = std::string(w);
    return name;
  }

  Arg parseNumber() {
    size_t start = pos_;
    if (peek() == '-' || peek() == '+') ++pos_;
    if (peekWord() == "inf") {
      bool neg = text_[start] == '-';
      pos_ += 3;
      return Arg::real(neg ? -INFINITY : INFINITY);
    }
    bool isFloat = false;
    while (!atEnd()) {
      char c = text_[pos_];
      if (isDigit(c)) {
        ++pos_;
      } else if (c == '.' || c == 'e' || c == 'E') {
        isFloat = true;
        ++pos_;
        if ((c == 'e' || c == 'E') && (peek() == '-' || peek() == '+')) ++pos_;
      } else {
        break;
      }
    }
    std::string tok(text_.substr(start, pos_ - start));
    if (!isFloat) {
      pos_ = start;
      return Arg::integer(parseInt());
    }
    char* end = nullptr;
    double v = std::strtod(tok.c_str(), &end);
    if (tok.empty() || end != tok.c_str() + tok.size()) failAt(start, fmt::format("malformed number '{}'", tok));
    return Arg::real(v);
  }

  int64_t parseInt() {
    size_t start = pos_;
    if (peek() == '-' || peek() == '+') ++pos_;
    while (isDigit(peek())) ++pos_;
    std::string_view tok = text_.substr(start, pos_ - start);
    if (!tok.empty() && tok[0] == '+') tok.remove_prefix(1);
    int64_t v = 0;
    auto [ptr, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), v);
    if (tok.empty() || ec != std::errc() || ptr != tok.data() + tok.size())
      failAt(start, fmt::format("malformed integer '{}'", std::string(text_.substr(start, pos_ - start))));
    return v;
  }

  std::string parseString() {
    size_t start = pos_;
    ++pos_;  // opening quote
    std::string out;
    while (true) {
      if (atEnd()) failAt(start, "unterminated string");
      char c = text_[pos_++];
      if (c == '"') return out;
      if (c != '\\') {
        out += c;
        continue;
      }
      char e = peek();
      if (e == '"' || e == '\\') out += e;
      else if (e == 'n') out += '\n';
      else fail("unknown escape in string (only \\\" \\\\ \\n)");
      ++pos_;
    }
  }

  std::string_view text_;
  size_t pos_ = 0;
  std::unordered_set<std::string> defined_;
};

}  // namespace

std::optional<Graph> parseGraph(std::string_view text, ParseError* error) {
  try {
    return Parser(text).parseGraph();
  } catch (const Failure& f) {
    if (error) *error = f.error;
    return std::nullopt;
  }
}

}  // namespace fxfuse::ir
