// parseSpec: the text of docs/spec.md into a validated ChainSpec. Any malformed input ends
// in SpecError("line L: message"); nothing here indexes without a bounds check.
#include <cerrno>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "spec/chain_spec.h"
#include "spec/validate_impl.h"

namespace fxfuse::spec {
namespace {

[[noreturn]] void failAt(int line, const std::string& msg) {
  throw SpecError("line " + std::to_string(line) + ": " + msg);
}

std::vector<std::string> splitTokens(const std::string& line) {
  std::vector<std::string> toks;
  std::istringstream in(line);
  for (std::string t; in >> t;) toks.push_back(t);
  return toks;
}

// "%12" -> 12; any other spelling is an error.
int parseRef(const std::string& tok, int line) {
  if (tok.size() < 2 || tok[0] != '%') failAt(line, "expected a value reference like %3, got '" + tok + "'");
  int v = 0;
  for (size_t i = 1; i < tok.size(); ++i) {
    if (tok[i] < '0' || tok[i] > '9') failAt(line, "bad value reference '" + tok + "'");
    if (v > 100000000) failAt(line, "value reference '" + tok + "' is too large");
    v = v * 10 + (tok[i] - '0');
  }
  return v;
}

int parseInt(const std::string& tok, int line, const char* what) {
  if (tok.empty() || tok.size() > 9) failAt(line, std::string("bad ") + what + " '" + tok + "'");
  for (char c : tok)
    if (c < '0' || c > '9') failAt(line, std::string("bad ") + what + " '" + tok + "'");
  return std::stoi(tok);
}

DType parseDTypeAt(const std::string& tok, int line) {
  DType d;
  if (!parseDType(tok, &d)) failAt(line, "unknown dtype '" + tok + "'");
  return d;
}

double parseNumber(const std::string& tok, int line) {
  const char* begin = tok.c_str();
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(begin, &end);
  if (tok.empty() || end != begin + tok.size()) failAt(line, "bad number '" + tok + "'");
  return v;
}

// "[m,k]" -> "mk", "[]" -> "".
std::string parseDims(const std::string& tok, int line) {
  if (tok.size() < 2 || tok.front() != '[' || tok.back() != ']')
    failAt(line, "expected dims like [m,k], got '" + tok + "'");
  std::string inner = tok.substr(1, tok.size() - 2), dims;
  for (size_t i = 0; i < inner.size(); ++i) {
    bool wantLetter = i % 2 == 0;
    if (wantLetter ? inner[i] == ',' : inner[i] != ',') failAt(line, "malformed dims '" + tok + "'");
    if (wantLetter) dims += inner[i];
  }
  if (!inner.empty() && inner.back() == ',') failAt(line, "malformed dims '" + tok + "'");
  return dims;
}

// "-12" -> -12 (any int64; "+" and spaces are not numbers here).
int64_t parseInt64(const std::string& tok, int line) {
  const size_t digits = tok.size() - (!tok.empty() && tok[0] == '-');
  bool ok = digits >= 1 && digits <= 19;
  for (size_t i = tok.size() - digits; ok && i < tok.size(); ++i) ok = tok[i] >= '0' && tok[i] <= '9';
  errno = 0;
  const long long v = ok ? std::strtoll(tok.c_str(), nullptr, 10) : 0;
  if (!ok || errno == ERANGE) failAt(line, "bad integer '" + tok + "' (expected a 64-bit integer)");
  return v;
}

// "[1,8]" -> {1, 8}, "[]" -> {}.
std::vector<int64_t> parseSizes(const std::string& tok, int line) {
  if (tok.size() < 2 || tok.front() != '[' || tok.back() != ']')
    failAt(line, "expected sizes like [1,8] or [], got '" + tok + "'");
  std::vector<int64_t> sizes;
  const std::string inner = tok.substr(1, tok.size() - 2);
  if (inner.empty()) return sizes;
  std::istringstream in(inner + ",");
  // (an empty size, "[1,,8]" or "[8,]", is a bad size '')
  for (std::string size; std::getline(in, size, ',');) sizes.push_back(parseInt(size, line, "size"));
  return sizes;
}

// "expect <slot> <dtype> [<sizes>] values <v0> <v1> ..." or "expect <slot> <dtype> [k] kgroups" into e.
void parseExpect(const std::vector<std::string>& t, int line, Expect& e) {
  if (t.size() < 5 || (t[4] != "values" && t[4] != "kgroups"))
    failAt(line, "expected 'expect <slot> <dtype> [<sizes>] values <v0> ...' or 'expect <slot> <dtype> [k] kgroups'");
  e.slot = parseInt(t[1], line, "slot");
  e.dtype = parseDTypeAt(t[2], line);
  if (t[4] == "kgroups") {
    if (t.size() != 5 || t[3] != "[k]") failAt(line, "expected 'expect <slot> <dtype> [k] kgroups'");
    e.kind = Expect::Kind::KGroups;
    return;
  }
  e.kind = Expect::Kind::Values;
  e.sizes = parseSizes(t[3], line);
  for (size_t i = 5; i < t.size(); ++i) e.values.push_back(parseInt64(t[i], line));
}

// Parses the right-hand side of "%i = ..." into v.
void parseValue(const std::vector<std::string>& t, int line, Value& v) {
  if (t.size() < 3) failAt(line, "expected '%i = <op> ...'");
  const std::string& head = t[2];
  if (head == "input") {
    if (t.size() < 6 || (t.size() > 6 && (t[6] != "order" || t.size() == 7)))
      failAt(line, "expected '%i = input <slot> <dtype> [<dims>] [order <j> ...]'");
    v.kind = ValueKind::Input;
    v.slot = parseInt(t[3], line, "slot");
    v.dtype = parseDTypeAt(t[4], line);
    v.dims = parseDims(t[5], line);
    for (size_t i = 7; i < t.size(); ++i) v.order.push_back(parseInt(t[i], line, "order"));
    return;
  }
  if (head == "const") {
    if (t.size() != 6 || t[4] != ":") failAt(line, "expected '%i = const <number> : <dtype>'");
    v.kind = ValueKind::Const;
    v.dtype = parseDTypeAt(t[5], line);
    v.constant = heldAs(parseNumber(t[3], line), v.dtype);  // also in programs rewritten before session 53
    return;
  }
  // "<op> %a ... : <dtype>", then `addmm` where eager computed the value in one addmm call (Value::addmmResult)
  size_t end = t.size();  // past the dtype
  if (end >= 6 && t[end - 3] == ":") {
    if (t.back() != "addmm") failAt(line, "unknown mark '" + t.back() + "' after the dtype (expected addmm)");
    v.addmmResult = true;
    --end;
  }
  if (end < 5 || t[end - 2] != ":") failAt(line, "expected '%i = " + head + " %a ... : <dtype> [addmm]'");
  v.kind = head == "mm" ? ValueKind::Mm : ValueKind::Op;
  v.op = head;
  if (v.kind == ValueKind::Op && opArity(head) < 0) failAt(line, "unknown op '" + head + "'");
  for (size_t i = 3; i + 2 < end; ++i) v.operands.push_back(parseRef(t[i], line));
  v.dtype = parseDTypeAt(t[end - 1], line);
}

}  // namespace

ChainSpec parseSpec(const std::string& text) {
  ChainSpec spec;
  std::vector<int> valueLine, expectLine, outputLine;
  int stage = 0;  // 0: version, 1: gemm, 2: values, 3: expects, 4: outputs
  int lineNo = 0;
  std::istringstream in(text);
  for (std::string raw; std::getline(in, raw);) {
    ++lineNo;
    if (!raw.empty() && raw.back() == '\r') raw.pop_back();
    std::vector<std::string> t = splitTokens(raw);
    if (t.empty()) continue;  // blank lines carry no meaning
    if (stage == 0) {
      if (t.size() != 2 || t[0] != "fxfuse.chain") failAt(lineNo, "expected 'fxfuse.chain v1'");
      if (t[1] != "v1") failAt(lineNo, "unsupported spec version '" + t[1] + "' (this build reads v1)");
      stage = 1;
    } else if (stage == 1) {
      if ((t.size() != 2 && t.size() != 4) || t[0] != "gemm" || (t[1] != "mm" && t[1] != "bmm") ||
          (t.size() == 4 && t[2] != "kgroup"))
        failAt(lineNo, "expected 'gemm mm' or 'gemm bmm', then optionally 'kgroup <size>'");
      spec.gemm = t[1] == "bmm" ? GemmKind::Bmm : GemmKind::Mm;
      if (t.size() == 4) {
        spec.kGroup = parseInt(t[3], lineNo, "kgroup size");
        if (spec.kGroup < 1 || spec.kGroup > kMaxKGroup)
          failAt(lineNo, "kgroup size " + t[3] + " is outside 1.." + std::to_string(kMaxKGroup));
      }
      stage = 2;
    } else if (t[0] == "output") {
      if (t.size() != 2) failAt(lineNo, "expected 'output %i'");
      int o = parseRef(t[1], lineNo);
      if (o >= static_cast<int>(spec.values.size())) failAt(lineNo, "output %" + std::to_string(o) + " is not a value");
      spec.outputs.push_back(o);
      outputLine.push_back(lineNo);
      stage = 4;
    } else if (t[0] == "expect") {
      if (stage == 4) failAt(lineNo, "expect line after the output lines");
      Expect e;
      parseExpect(t, lineNo, e);
      spec.expects.push_back(std::move(e));
      expectLine.push_back(lineNo);
      stage = 3;
    } else {
      if (stage == 4) failAt(lineNo, "value line after the output lines");
      if (stage == 3) failAt(lineNo, "value line after an expect line (the expect lines follow the value lines)");
      if (t.size() < 2 || t[1] != "=") failAt(lineNo, "expected '%i = ...' or 'output %i'");
      int id = parseRef(t[0], lineNo);
      if (id != static_cast<int>(spec.values.size()))
        failAt(lineNo, "expected %" + std::to_string(spec.values.size()) + " (values are numbered in order)");
      Value v;
      parseValue(t, lineNo, v);
      for (int o : v.operands)
        if (o >= id) failAt(lineNo, "operand %" + std::to_string(o) + " is not an earlier value");
      spec.values.push_back(std::move(v));
      valueLine.push_back(lineNo);
    }
  }
  if (stage < 2) failAt(lineNo + 1, stage == 0 ? "empty spec (expected 'fxfuse.chain v1')" : "missing 'gemm' line");
  validateWith(spec, [&](Loc at, const std::string& msg) {
    if (at.value >= 0) failAt(valueLine.at(at.value), msg);
    if (at.output >= 0) failAt(outputLine.at(at.output), msg);
    if (at.expect >= 0) failAt(expectLine.at(at.expect), msg);
    failAt(lineNo, msg);
  });
  return spec;
}

}  // namespace fxfuse::spec
