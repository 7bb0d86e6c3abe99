// validateSpec: every rule of docs/spec.md that the text grammar alone does not enforce,
// and the derivation of each value's space. The parser runs the same code, so a spec
// built in memory and a parsed one are held to the same rules.
#include <algorithm>
#include <cstdint>
#include <set>
#include <string>

#include "spec/chain_spec.h"
#include "spec/validate_impl.h"

namespace fxfuse::spec {
namespace {

const char* lettersOf(Space s, GemmKind g) {
  bool bmm = g == GemmKind::Bmm;
  switch (s) {
    case Space::A: return bmm ? "bmk" : "mk";
    case Space::B: return bmm ? "bkn" : "kn";
    case Space::Out: return bmm ? "bmn" : "mn";
  }
  return "";
}

// Letters in canonical "bmkn" order, without duplicates; 'g' (k's group) and 'p' (k packed as 4-bit values) vary
// along k, 'q' (n packed as 4-bit values) along n.
std::string canonicalLetters(const std::string& s) {
  std::string out;
  for (char c : std::string("bmkn"))
    if (s.find(c) != std::string::npos || (c == 'k' && s.find_first_of("gp") != std::string::npos) ||
        (c == 'n' && s.find('q') != std::string::npos))
      out += c;
  return out;
}

std::string ref(int i) { return "%" + std::to_string(i); }

class Validator {
 public:
  Validator(ChainSpec& spec, const ErrorSink& sink) : spec_(spec), sink_(sink) {}

  void run() {
    const int n = static_cast<int>(spec_.values.size());
    if (n == 0) fail_({-1, -1}, "the spec has no values");
    letters_.assign(n, "");
    for (int i = 0; i < n; ++i) checkValue(i);
    if (spec_.mmIndex() < 0) fail_({-1, -1}, "the spec has no mm");
    checkAddmmMark();
    if (spec_.kGroup < 0 || spec_.kGroup > kMaxKGroup)
      fail_({-1, -1}, "kgroup size " + std::to_string(spec_.kGroup) + " is outside 1.." + std::to_string(kMaxKGroup));
    // canonical: a kgroup line only where an input reads it
    if (spec_.kGroup > 0 && groupInputCount(spec_) == 0) fail_({-1, -1}, "kgroup is given but no input has a 'g' dim");
    for (size_t j = 0; j < spec_.expects.size(); ++j) checkExpect(static_cast<int>(j));
    if (spec_.outputs.empty()) fail_({-1, -1}, "the spec has no output line");
    for (size_t j = 0; j < spec_.outputs.size(); ++j) {
      int o = spec_.outputs[j];
      if (o < 0 || o >= n) fail_({-1, static_cast<int>(j)}, "output " + ref(o) + " is not a value");
    }
    deriveSpaces();
  }

 private:
  void checkValue(int i) {
    Value& v = spec_.values[i];
    Loc at{i, -1};
    for (int o : v.operands)
      if (o < 0 || o >= i) fail_(at, "operand " + ref(o) + " is not an earlier value");
    switch (v.kind) {
      case ValueKind::Input: checkInput(i); break;
      case ValueKind::Const:
        if (!v.operands.empty()) fail_(at, "const takes no operands");
        break;
      case ValueKind::Op: {
        int arity = opArity(v.op);
        if (arity < 0) fail_(at, "unknown op '" + v.op + "'");
        if (arity != static_cast<int>(v.operands.size()))
          fail_(at, "'" + v.op + "' takes " + std::to_string(arity) + " operand(s), got " +
                        std::to_string(v.operands.size()));
        if (isComparisonOp(v.op) && v.dtype != DType::Bool)
          fail_(at, "comparison '" + v.op + "' must produce bool");
        std::string l;
        for (int o : v.operands) l += letters_[o];
        letters_[i] = canonicalLetters(l);
        break;
      }
      case ValueKind::Mm: checkMm(i); break;
    }
  }

  void checkInput(int i) {
    Value& v = spec_.values[i];
    Loc at{i, -1};
    if (v.slot < 0) fail_(at, "input slot must be >= 0");
    for (char c : v.dims) {
      if (std::string("bmkngpq1").find(c) == std::string::npos)
        fail_(at, std::string("unknown dim '") + c + "' (expected b, m, k, n, g, p, q or 1)");
      if (c != 'm' && c != '1' && std::count(v.dims.begin(), v.dims.end(), c) > 1)
        fail_(at, std::string("dim '") + c + "' appears twice");
    }
    if (v.dims.find('g') != std::string::npos) {
      if (v.dims.find('k') != std::string::npos) fail_(at, "an input has a 'k' dim or a 'g' dim (k's group), not both");
      if (spec_.kGroup <= 0) fail_(at, "a 'g' dim needs the gemm line's 'kgroup <size>'");
    }
    if (v.dims.find('p') != std::string::npos) {
      if (v.dims.find_first_of("kg") != std::string::npos)
        fail_(at, "an input has at most one of a 'k', 'g' or 'p' dim (k packed as 4-bit values)");
      if (nibblesPerElement(v.dtype) == 0)
        fail_(at, std::string("a 'p' dim (k packed as 4-bit values) holds them in u8, i8 or i32 elements, not ") +
                      dtypeName(v.dtype));
    }
    if (v.dims.find('q') != std::string::npos) {
      if (v.dims.find('n') != std::string::npos) fail_(at, "an input has an 'n' dim or a 'q' dim (n packed), not both");
      if (v.dims.find('p') != std::string::npos)
        fail_(at, "an input has a 'p' dim or a 'q' dim, not both (4-bit values packed along one dim)");
      if (nibblesPerElement(v.dtype) == 0)
        fail_(at, std::string("a 'q' dim (n packed as 4-bit values) holds them in u8, i8 or i32 elements, not ") +
                      dtypeName(v.dtype));
    }
    if (!v.order.empty()) {
      if (v.dims.find('q') == std::string::npos)
        fail_(at, "an order is given for an input with a 'q' dim only (the order of n's 4-bit values in an element)");
      const int per = nibblesPerElement(v.dtype);
      if (!isNibbleOrder(v.order, per))
        fail_(at, "an order lists each of the element's " + std::to_string(per) + " 4-bit values once (0 to " +
                      std::to_string(per - 1) + ")");
    }
    if (v.slot > maxSlot_ + 1)
      fail_(at, "input slot " + std::to_string(v.slot) + " skips slot " + std::to_string(maxSlot_ + 1) +
                    " (slots are numbered in order of first appearance)");
    if (v.slot <= maxSlot_) {
      const Value& first = spec_.values[firstUse_.at(v.slot)];
      if (first.dtype != v.dtype || first.dims != v.dims || first.order != v.order) {
        std::string declared = std::string(dtypeName(first.dtype)) + " [";
        for (size_t d = 0; d < first.dims.size(); ++d) declared += (d ? "," : "") + std::string(1, first.dims[d]);
        declared += "]";
        if (!first.order.empty()) declared += " " + formatOrder(first.order);
        fail_(at, "input slot " + std::to_string(v.slot) + " was declared as " + declared + " before");
      }
    } else {
      maxSlot_ = v.slot;
      firstUse_[v.slot] = i;
    }
    letters_[i] = canonicalLetters(v.dims);
  }

  // An expect line: the op input after the values' inputs whose fact the runtime checks (runtime/known_values_check.h).
  void checkExpect(int j) {
    const Expect& e = spec_.expects[j];
    Loc at{-1, -1, j};
    const int slot = maxSlot_ + 1 + j;  // numInputSlots() + j
    if (e.slot != slot)
      fail_(at, "expect slot " + std::to_string(e.slot) + " must be " + std::to_string(slot) +
                    " (the expect lines take the slots after the inputs', in order)");
    if (e.dtype != DType::I8 && e.dtype != DType::U8 && e.dtype != DType::I32 && e.dtype != DType::I64)
      fail_(at, std::string("an expect line's dtype is i8, u8, i32 or i64, not ") + dtypeName(e.dtype));
    if (e.kind == Expect::Kind::KGroups) {
      if (!e.sizes.empty() || !e.values.empty()) fail_(at, "a kgroups expect has no sizes or values");
      if (spec_.kGroup <= 0) fail_(at, "a kgroups expect needs the gemm line's 'kgroup <size>'");
      return;
    }
    double product = 1;  // in double: any number of sizes up to 999999999 each (the parser's) cannot overflow it
    for (int64_t size : e.sizes) {
      if (size < 0) fail_(at, "an expect line's size is >= 0, got " + std::to_string(size));
      product *= static_cast<double>(size);
    }
    if (product < 1 || product > kMaxExpectValues)
      fail_(at, "an expect line's sizes hold 1.." + std::to_string(kMaxExpectValues) + " elements, got " +
                    (product < 1e15 ? std::to_string(static_cast<int64_t>(product)) : std::string("more")));
    const int64_t count = static_cast<int64_t>(product);
    if (static_cast<int64_t>(e.values.size()) != count)
      fail_(at, "sizes of " + std::to_string(count) + " element(s) but " + std::to_string(e.values.size()) +
                    " value(s)");
    for (int64_t v : e.values)
      if (!integerHolds(e.dtype, v))
        fail_(at, "value " + std::to_string(v) + " is outside " + dtypeName(e.dtype) + "'s range");
  }

  void checkMm(int i) {
    Value& v = spec_.values[i];
    Loc at{i, -1};
    if (spec_.mmIndex() != i) fail_(at, "a spec has exactly one mm");
    if (v.operands.size() != 2) fail_(at, "mm takes 2 operands");
    DType a = spec_.values[v.operands[0]].dtype, b = spec_.values[v.operands[1]].dtype;
    auto gemmType = [](DType d) { return d == DType::BF16 || d == DType::F16 || d == DType::F32; };
    if (!gemmType(a) || a != b)
      fail_(at, std::string("mm operands must share one dtype among bf16, f16, f32; got ") + dtypeName(a) +
                    " and " + dtypeName(b));
    if (v.dtype != DType::F32 && v.dtype != a)
      fail_(at, std::string("mm result must be f32 or the operand dtype ") + dtypeName(a));
    letters_[i] = spec_.gemm == GemmKind::Bmm ? "bmn" : "mn";
  }

  // A value marked addmm stands for one eager addmm call: its parts in the form the CPU reference makes the call from
  // (addmmCallAt), one such value at most (the spec has one mm).
  void checkAddmmMark() {
    int marked = -1;
    for (int i = 0; i < static_cast<int>(spec_.values.size()); ++i) {
      if (!spec_.values[i].addmmResult) continue;
      if (marked >= 0) fail_({i, -1}, "a spec has at most one value marked addmm (" + ref(marked) + " is)");
      marked = i;
      std::string why;
      if (addmmCallAt(spec_, i, &why).result < 0) fail_({i, -1}, why);
    }
  }

  // Spaces flow from users to operands: mm's operands are A and B, mm is Out, an op's
  // operands live in the op's space, an output is Out. Walking backwards sees every user
  // of a value before the value itself.
  void deriveSpaces() {
    const int n = static_cast<int>(spec_.values.size());
    std::vector<std::set<Space>> wanted(n);
    for (int o : spec_.outputs) wanted[o].insert(Space::Out);
    for (int i = n - 1; i >= 0; --i) {
      Value& v = spec_.values[i];
      Loc at{i, -1};
      if (v.kind == ValueKind::Mm) {
        v.space = Space::Out;
        if (!wanted[i].count(Space::Out) && !wanted[i].empty())
          fail_(at, "internal: mm used outside the output space");
        wanted[v.operands[0]].insert(Space::A);
        wanted[v.operands[1]].insert(Space::B);
      } else {
        if (wanted[i].empty()) fail_(at, ref(i) + " is not used");
        // A const has no dims, so sharing one between spaces is harmless; anything else
        // must be emitted once per use space (docs/spec.md).
        if (wanted[i].size() > 1 && v.kind != ValueKind::Const)
          fail_(at, ref(i) + " is used in more than one space (" + spaceList(wanted[i]) +
                        "); emit one value per use space");
        v.space = *wanted[i].begin();
        for (int o : v.operands) wanted[o].insert(v.space);
      }
      std::string allowed = lettersOf(v.space, spec_.gemm);
      // n packed ('q': GPTQ's zero points) is read by B's prologue only, where the kernels' hooks load it
      if (v.kind == ValueKind::Input && v.dims.find('q') != std::string::npos && v.space != Space::B)
        fail_(at, "a 'q' dim (n packed as 4-bit values) is read in B's prologue only, not the " +
                      std::string(spaceName(v.space)) + " space");
      for (char c : letters_[i])
        if (allowed.find(c) == std::string::npos)
          fail_(at, ref(i) + " varies along '" + c + "', which the " + spaceName(v.space) + " space of a " +
                        (spec_.gemm == GemmKind::Bmm ? "bmm" : "mm") + " does not have");
    }
  }

  static std::string spaceList(const std::set<Space>& s) {
    std::string out;
    for (Space x : s) out += std::string(out.empty() ? "" : ", ") + spaceName(x);
    return out;
  }

  // The sink throws; the backstop keeps a faulty sink from letting validation go on.
  [[noreturn]] void fail_(Loc at, const std::string& msg) const {
    sink_(at, msg);
    throw std::logic_error("fxfuse internal error: spec error sink returned (please report a bug)");
  }

  ChainSpec& spec_;
  const ErrorSink& sink_;
  std::vector<std::string> letters_;
  int maxSlot_ = -1;
  std::map<int, int> firstUse_;  // slot -> value that declared it first
};

}  // namespace

void validateWith(ChainSpec& spec, const ErrorSink& fail) { Validator(spec, fail).run(); }

void validateSpec(ChainSpec& spec) {
  validateWith(spec, [](Loc at, const std::string& msg) {
    if (at.value >= 0) throw SpecError("%" + std::to_string(at.value) + ": " + msg);
    if (at.output >= 0) throw SpecError("output line " + std::to_string(at.output) + ": " + msg);
    if (at.expect >= 0) throw SpecError("expect line " + std::to_string(at.expect) + ": " + msg);
    throw SpecError(msg);
  });
}

const char* spaceName(Space s) {
  switch (s) {
    case Space::A: return "A";
    case Space::B: return "B";
    case Space::Out: return "Out";
  }
  return "?";
}

bool isResidualInput(const Value& v) {
  return v.kind == ValueKind::Input && v.dims.find('m') != std::string::npos && v.dims.find('n') != std::string::npos &&
         v.dims.find('k') == std::string::npos;
}

int groupInputCount(const ChainSpec& spec) {
  int count = 0;
  for (const Value& v : spec.values) count += v.kind == ValueKind::Input && v.dims.find('g') != std::string::npos;
  return count;
}

bool isNibbleOrder(const std::vector<int>& order, int per) {
  if (per <= 0 || static_cast<int>(order.size()) != per) return false;
  std::vector<bool> seen(static_cast<size_t>(per), false);
  for (int j : order) {
    if (j < 0 || j >= per || seen[static_cast<size_t>(j)]) return false;
    seen[static_cast<size_t>(j)] = true;
  }
  return true;
}

int nibblesPerElement(DType d) {
  switch (d) {
    case DType::U8:
    case DType::I8: return 2;
    case DType::I32: return 8;
    default: return 0;
  }
}

bool integerHolds(DType d, int64_t v) {
  switch (d) {
    case DType::I8: return v >= -128 && v <= 127;
    case DType::U8: return v >= 0 && v <= 255;
    case DType::I32: return v >= INT32_MIN && v <= INT32_MAX;
    case DType::I64: return true;
    default: return false;
  }
}

bool isOneElementInput(const Value& v) {
  return v.kind == ValueKind::Input && v.dims.find_first_not_of('1') == std::string::npos;
}

std::string valueLetters(const ChainSpec& spec, int value) {
  // Forward over the prefix: each value's letters from its operands' (linear, no recursion).
  std::vector<std::string> letters(value + 1);
  for (int i = 0; i <= value; ++i) {
    const Value& v = spec.values.at(i);
    switch (v.kind) {
      case ValueKind::Input: letters[i] = canonicalLetters(v.dims); break;
      case ValueKind::Const: break;
      case ValueKind::Mm: letters[i] = spec.gemm == GemmKind::Bmm ? "bmn" : "mn"; break;
      case ValueKind::Op: {
        std::string l;
        for (int o : v.operands) l += letters.at(o);
        letters[i] = canonicalLetters(l);
        break;
      }
    }
  }
  return letters[value];
}

}  // namespace fxfuse::spec
