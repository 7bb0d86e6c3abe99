// libFuzzer target for the chain-spec parser (docs/spec.md, spec/chain_spec.h).
//
// Properties checked on every input:
//   1. parseSpec either returns a spec or throws SpecError; any other exception, a crash, a
//      hang or a sanitizer report is a bug.
//   2. A parsed spec is a fixed point of the canonical form: s1 = printSpec(parse(text))
//      parses again (no throw), prints to the same s1, and the two ChainSpecs are equal
//      field by field (kind, dtype, slot, dims, constant bit pattern modulo NaN, op,
//      operands, the addmm mark, derived space, outputs, gemm kind).
//   3. validateSpec accepts what parseSpec accepted, and the read-only helpers
//      (numInputSlots, mmIndex, valueLetters, opArity, isComparisonOp) do not fault.
//
// Build (clang): see tests/reliability/FUZZING.md, e.g.
//   clang++ -std=c++17 -g -O1 -fsanitize=fuzzer,address,undefined -I. \
//     fuzz/spec_parser_fuzz.cpp spec/*.cpp -o build-fuzz/spec_parser_fuzz
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>

#include "spec/chain_spec.h"

namespace {

using fxfuse::spec::ChainSpec;
using fxfuse::spec::SpecError;
using fxfuse::spec::Value;

[[noreturn]] void bug(const char* what, const std::string& a, const std::string& b = {}) {
  std::fprintf(stderr, "spec_parser_fuzz: %s\n--- first ---\n%s\n--- second ---\n%s\n", what, a.c_str(),
               b.c_str());
  std::abort();
}

bool sameConstant(double x, double y) {
  if (std::isnan(x) || std::isnan(y)) return std::isnan(x) && std::isnan(y);
  return std::memcmp(&x, &y, sizeof x) == 0;  // distinguishes -0.0 from 0.0
}

bool sameValue(const Value& a, const Value& b) {
  return a.kind == b.kind && a.dtype == b.dtype && a.slot == b.slot && a.dims == b.dims &&
         sameConstant(a.constant, b.constant) && a.op == b.op && a.operands == b.operands &&
         a.addmmResult == b.addmmResult && a.space == b.space;
}

bool sameSpec(const ChainSpec& a, const ChainSpec& b) {
  if (a.gemm != b.gemm || a.outputs != b.outputs || a.values.size() != b.values.size()) return false;
  for (size_t i = 0; i < a.values.size(); ++i)
    if (!sameValue(a.values[i], b.values[i])) return false;
  return true;
}

void exerciseHelpers(const ChainSpec& spec, const std::string& text) {
  int mm = spec.mmIndex();
  if (mm < 0 || spec.values[mm].kind != fxfuse::spec::ValueKind::Mm) bug("parsed spec without mm", text);
  int slots = spec.numInputSlots();
  if (slots < 0) bug("negative numInputSlots", text);
  // valueLetters is linear per call; keep the total quadratic work bounded.
  if (spec.values.size() <= 256) {
    for (size_t i = 0; i < spec.values.size(); ++i) {
      std::string l = fxfuse::spec::valueLetters(spec, static_cast<int>(i));
      if (l.find_first_not_of("bmkn") != std::string::npos) bug("valueLetters outside bmkn", text, l);
    }
  }
  for (const Value& v : spec.values) {
    if (v.kind == fxfuse::spec::ValueKind::Op) {
      if (fxfuse::spec::opArity(v.op) != static_cast<int>(v.operands.size())) bug("arity mismatch accepted", text);
      if (fxfuse::spec::isComparisonOp(v.op) && v.dtype != fxfuse::spec::DType::Bool)
        bug("comparison with a non-bool result accepted", text);
    }
    (void)fxfuse::spec::dtypeName(v.dtype);
    (void)fxfuse::spec::spaceName(v.space);
  }
  for (int o : spec.outputs)
    if (o < 0 || o >= static_cast<int>(spec.values.size())) bug("output out of range accepted", text);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  ChainSpec spec;
  try {
    spec = fxfuse::spec::parseSpec(text);
  } catch (const SpecError& e) {
    // Expected for malformed input. The message must name a line ("line L: ...").
    if (std::strncmp(e.what(), "line ", 5) != 0) bug("SpecError without 'line L:'", text, e.what());
    return 0;
  } catch (const std::exception& e) {
    bug("parseSpec threw something other than SpecError", text, e.what());
  } catch (...) {
    bug("parseSpec threw a non-std exception", text);
  }

  exerciseHelpers(spec, text);

  std::string printed, reprinted;
  ChainSpec again;
  try {
    printed = fxfuse::spec::printSpec(spec);
    again = fxfuse::spec::parseSpec(printed);
    reprinted = fxfuse::spec::printSpec(again);
  } catch (const std::exception& e) {
    bug("canonical text of an accepted spec does not parse", printed.empty() ? text : printed, e.what());
  }
  if (printed != reprinted) bug("print(parse(print(s))) != print(s)", printed, reprinted);
  if (!sameSpec(spec, again)) bug("parse(print(s)) differs from s", text, printed);

  try {
    ChainSpec copy = spec;
    fxfuse::spec::validateSpec(copy);
    if (!sameSpec(copy, spec)) bug("validateSpec changed a parsed spec", printed);
  } catch (const std::exception& e) {
    bug("validateSpec rejects a spec that parseSpec accepted", printed, e.what());
  }
  return 0;
}
