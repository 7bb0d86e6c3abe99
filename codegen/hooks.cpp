// Hook generation. Each hook evaluates the spec values it needs, in spec order, one local
// per value ("v4" is %4) with the spec line as a comment, then converts or stores:
//   fx_load_a(b, m, k)      A-space values feeding mm's first operand
//   fx_load_b(b, k, n)      B-space values feeding mm's second operand
//   fx_dequant_b(…, raw)    the same with the raw weight element passed in (FX_B_QUANT)
//   fx_b_scale(b, [k,] n)   the scale of B = convert(raw) * scale (FX_B_QUANT_SCALE, gemv; k for a group-wise one)
//   fx_epilogue(b, m, n, acc) Out-space values, the mm replaced by the accumulator
// Inputs are read through FxOperand strides of the dims the spec names for them, so any
// broadcast (a missing dim, a '1' dim, a 0-d scale) costs nothing and needs no special case.
#include "codegen/hooks.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <vector>

#include "codegen/codegen.h"
#include "codegen/config_table.h"
#include "codegen/pointwise_table.h"

namespace fxfuse::codegen {
namespace {

using spec::ChainSpec;
using spec::DType;
using spec::isHalfFloat;
using spec::Value;
using spec::ValueKind;

std::vector<std::string> specLines(const ChainSpec& spec) {
  std::vector<std::string> lines;
  std::istringstream in(spec::printSpec(spec));
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

// Every value the roots depend on, stopping at mm (its value comes from the accumulator) and at
// the values in `stop` (given another way; they are in the result, their operands only if needed
// elsewhere).
std::set<int> closure(const ChainSpec& spec, const std::vector<int>& roots, const std::set<int>& stop = {}) {
  std::set<int> seen;
  std::vector<int> todo = roots;
  while (!todo.empty()) {
    int v = todo.back();
    todo.pop_back();
    if (!seen.insert(v).second) continue;
    if (spec.values[v].kind == ValueKind::Mm || stop.count(v)) continue;
    for (int o : spec.values[v].operands) todo.push_back(o);
  }
  return seen;
}

bool hasLetters(const std::string& dims, const char* letters) {
  for (const char* c = letters; *c; ++c)
    if (dims.find(*c) == std::string::npos) return false;
  return true;
}

// The innermost named dim of an input decides its memory order ('1' dims have no stride).
char innermost(const std::string& dims) {
  for (auto it = dims.rbegin(); it != dims.rend(); ++it)
    if (*it != '1') return *it;
  return '\0';
}

// An input's stated order of its nibbles (the spec's `order`: value j of an element at bits [4 order[j], +4)) as a
// nibble table, order[j] at bits [4 j, +4); empty: the plain order. 8 nibbles at most (i32's).
unsigned nibbleOrderTable(const std::vector<int>& order) {
  unsigned table = 0;
  for (size_t j = 0; j < 8; ++j) table |= static_cast<unsigned>(j < order.size() ? order[j] : j) << (4 * j);
  return table;
}

// Analysis shared by A and B: `need` are the letters of a full operand input ("mk", "kn").
OperandInfo analyze(const ChainSpec& spec, int operand, const char* need) {
  OperandInfo info;
  int root = spec.values[spec.mmIndex()].operands[operand];
  info.elem = spec.values[root].dtype;
  const Value& r = spec.values[root];
  std::vector<int> full;  // inputs that vary along both operand dims
  for (int v : closure(spec, {root}))
    if (spec.values[v].kind == ValueKind::Input && hasLetters(spec.values[v].dims, need)) full.push_back(v);
  // an operand read along k's groups (a repeated scale as the weight itself) or k's packed 4-bit values is no tensor
  // the templates load as it is: its elements come through the load hooks, which read a 'g' dim at k / kGroup and a
  // 'p' dim's nibble of its element k / per (an input with 'p' has no 'k', so it is never `full` below either)
  if (r.kind == ValueKind::Input && r.dims.find_first_of("gpq") == std::string::npos) {
    info.plain = true;
    info.slot = r.slot;
  }
  if (!full.empty()) info.kmajor = innermost(spec.values[full.front()].dims) == 'k';
  if (!info.plain && full.size() == 1) {
    info.quant = true;
    info.slot = spec.values[full.front()].slot;
    info.raw = spec.values[full.front()].dtype;
  }
  return info;
}

bool is8bitRaw(DType d) { return d == DType::I8 || d == DType::U8 || d == DType::F8E4M3 || d == DType::F8E5M2; }

bool isOp(const Value& v, const char* op) { return v.kind == ValueKind::Op && v.op == op; }

// The scale side of `convert(raw) * scale`: no value in its closure may vary along m or k
// (then it is a function of (b, n) only, or of (b, k / kGroup, n) where an input has a 'g' dim: a group-wise
// scale, set in *grouped) and it must be a number (not bool).
bool isBNScale(const ChainSpec& spec, int v, bool* grouped) {
  if (spec.values[v].dtype == DType::Bool) return false;
  *grouped = false;
  for (int u : closure(spec, {v})) {
    const Value& x = spec.values[u];
    if (x.kind == ValueKind::Mm) return false;
    if (x.kind == ValueKind::Input && x.dims.find_first_of("kmp") != std::string::npos) return false;
    if (x.kind == ValueKind::Input && x.dims.find('g') != std::string::npos) *grouped = true;
  }
  return true;
}

// B's root as the quantized form the gemv computes from one raw element (detectQuantScale, detectNibbleScale):
//   (1) mul(convert(raw) : T, s) : E            T in {bf16, f16, f32}, E the 16-bit MMA type
//   (2) convert(mul(convert(raw) : T, s) : f32) : E
// (either mul operand order), s a value of (b, n) only, or of (b, k / kGroup, n) (isBNScale). With `zero`, the
// convert may sit under a zero point, sub(convert(raw), z) : T: an integer const z, |z| <= 240 and held as such by
// the const's dtype, or a value z of (b, n) and k's groups like s (a zero point tensor: AWQ's, HQQ's); the convert's
// dtype T, or any where T is f32 (the conversion of an 8-bit or 4-bit integer is exact in each). `isRaw`: whether an
// input is the raw weight. Around the form, a convert to the dtype its operand has already is the identity (GPTQ's
// `.to(x.dtype)` of an f16 weight); with `zero` the raw nibble may pass through conversions to integer types first
// (GPTQ's `.to(int8)`: any integer type holds 0..15).
struct ScaleForm {
  int raw = -1, scale = -1, zero = 0;
  int zero_value = -1;  // the zero point tensor's value, else -1
  DType sub = DType::F32;  // the zero point's sub's dtype (T)
  bool grouped = false;  // the scale or the zero point tensor varies along k's groups
};
bool isIntegerValued(DType d) { return !spec::isFloating(d) && d != DType::Bool; }

std::optional<ScaleForm> convertTimesScale(const ChainSpec& spec, const std::function<bool(const Value&)>& isRaw,
                                           bool zero) {
  int root = spec.values[spec.mmIndex()].operands[1];
  while (isOp(spec.values[root], "convert") && spec.values[spec.values[root].operands[0]].dtype == spec.values[root].dtype)
    root = spec.values[root].operands[0];
  int mul = root;
  if (isOp(spec.values[root], "convert")) {
    mul = spec.values[root].operands[0];
    if (spec.values[mul].dtype != DType::F32) return std::nullopt;  // an intermediate 16-bit rounding: twice
  }
  if (!isOp(spec.values[mul], "mul")) return std::nullopt;
  const std::vector<int>& ops = spec.values[mul].operands;
  for (int side = 0; side < 2; ++side) {
    ScaleForm f;
    int c = ops[side];
    const Value& sub = spec.values[c];
    if (zero && isOp(sub, "sub")) {
      const Value& zv = spec.values[sub.operands[1]];
      if (zv.kind == ValueKind::Const) {
        // (a const the generic hooks would hold otherwise, `200 : i8`, is not the number the gemv subtracts: review)
        if (zv.constant != std::floor(zv.constant) || std::fabs(zv.constant) > 240 ||
            spec::heldAs(zv.constant, zv.dtype) != zv.constant)
          continue;
        f.zero = static_cast<int>(zv.constant);
      } else {
        if (!isBNScale(spec, sub.operands[1], &f.grouped)) continue;
        f.zero_value = sub.operands[1];
      }
      f.sub = sub.dtype;
      c = sub.operands[0];
      // the sub at the convert's type, or at f32 (its operand the same exact value)
      if (spec.values[c].dtype != sub.dtype && sub.dtype != DType::F32) continue;
    }
    const Value& cv = spec.values[c];
    if (!isOp(cv, "convert") || (cv.dtype != DType::BF16 && cv.dtype != DType::F16 && cv.dtype != DType::F32)) continue;
    int raw = cv.operands[0];
    while (zero && isOp(spec.values[raw], "convert") && isIntegerValued(spec.values[raw].dtype) &&
           isIntegerValued(spec.values[spec.values[raw].operands[0]].dtype))
      raw = spec.values[raw].operands[0];
    if (!isRaw(spec.values[raw])) continue;
    f.raw = raw;
    f.scale = ops[1 - side];
    bool scale_grouped = false;
    if (f.scale == ops[side] || !isBNScale(spec, f.scale, &scale_grouped)) continue;
    f.grouped = f.grouped || scale_grouped;
    return f;
  }
  return std::nullopt;
}

// FX_B_QUANT_SCALE: B's root is convertTimesScale's form (no zero point), raw an 8-bit input (i8, u8, f8e4m3,
// f8e5m2). Exactness against the spec's semantics (each op in fp32, rounded to its dtype): convert from an 8-bit type
// to T is exact (i8/u8 are integers of at most 8 significant bits, fp8 has 2-3 mantissa bits and an exponent range
// inside f16's), so the mul's fp32 operands are float(raw) and float(s), the same bits fx_b_scale returns; the mul
// is one fp32 multiply, rounded to E once in (1), and in (2) rounded to f32 (a no-op) then to E once. The gemv
// template computes exactly fp32(float(raw) * scale) and rounds it to E with round-to-nearest-even, as
// fx_round_bf16/f16 do. Division by s is not expressible (raw / s is not raw * (1 / s) in fp32), so `w / s` keeps
// the element-wise fx_dequant_b path only.
void detectQuantScale(const ChainSpec& spec, OperandInfo& info) {
  if (!info.quant || !is8bitRaw(info.raw) || !isHalfFloat(info.elem)) return;
  const auto form = convertTimesScale(
      spec, [&](const Value& raw) { return raw.kind == ValueKind::Input && raw.slot == info.slot && raw.dtype == info.raw; },
      /*zero=*/false);
  if (!form) return;
  info.quant_scale = true;
  info.scale_value = form->scale;
  info.scale_group = form->grouped ? spec.kGroup : 0;
  info.scale_in_elem = spec.values[form->scale].dtype == info.elem;
}

// FX_B_NIBBLES: B's root is convertTimesScale's form, zero point allowed, over a packed int4 weight raw (an input
// with a 'p' dim and an 'n', u8 or i8: two nibbles of k to an element, each read 0..15). Exactness: convert(nibble) is
// exact; nibble - z is an integer of magnitude <= 15 + 240 = 255, exact in every T (bf16 holds integers to 256); so
// the mul's fp32 operands are (float(nibble) - z) and float(s), what the gemv computes (raw4_to_f32's magic constant
// takes the z: an exact fp32 subtraction), rounded once to E as in detectQuantScale. A zero point tensor z
// (FX_B_ZERO_TENSOR, read by fx_b_zero as fx_b_scale reads the scale) with T the MMA type E or f32: the gemv computes
// the fp32 difference float(nibble) - z, rounds it to E where T is E (FX_B_ZERO_ROUND), and multiplies it by s in fp32,
// each step the spec's op; other T (f16 under a bf16 product) keep the element-wise path.
void detectNibbleScale(const ChainSpec& spec, OperandInfo& info) {
  if (info.plain || info.quant || !isHalfFloat(info.elem)) return;
  const auto form = convertTimesScale(
      spec,
      [](const Value& raw) {
        // two nibbles to a u8 / i8 element, or GPTQ's eight to an i32 word along k (K x N: the words' layout)
        const int per = raw.kind == ValueKind::Input && raw.dims.find('p') != std::string::npos &&
                                raw.dims.find('n') != std::string::npos
                            ? spec::nibblesPerElement(raw.dtype)
                            : 0;
        if (per == 2 || (per == 8 && innermost(raw.dims) == 'n')) return true;
        // AWQ's eight along n to an i32 word (`[k,q]`, any stated order; K x N): the rule since its GPU tests passed
        // (session 67, an H100); FXFUSE_GEMV_NWORDS=0 leaves such chains to the generic kernel
        static const bool nwords = readBinaryKnob("FXFUSE_GEMV_NWORDS") != "0";
        return nwords && raw.kind == ValueKind::Input && raw.dtype == DType::I32 && innermost(raw.dims) == 'q' &&
               raw.dims.find('k') != std::string::npos;
      },
      /*zero=*/true);
  if (!form) return;
  // A zero point tensor: the rule since its GPU tests passed (session 65, an H100: the bit-exact one-hot tests of
  // session 63's forms and GPTQ's words); FXFUSE_GEMV_ZERO_TENSOR=0 leaves such chains to the generic kernel
  static const bool zero_tensors = readBinaryKnob("FXFUSE_GEMV_ZERO_TENSOR") != "0";
  if (form->zero_value >= 0 && (!zero_tensors || (form->sub != info.elem && form->sub != DType::F32))) return;
  // the packed weight is the only input of B along k and n (the scale: along n and k's groups only)
  const int root = spec.values[spec.mmIndex()].operands[1];
  for (int v : closure(spec, {root}))
    if (spec.values[v].kind == ValueKind::Input && v != form->raw &&
        spec.values[v].dims.find_first_of("kp") != std::string::npos)
      return;
  const Value& raw = spec.values[form->raw];
  info.nibbles = true;
  info.quant_scale = true;
  info.slot = raw.slot;
  info.raw = DType::U8;  // the nibble, 0..15, whatever the container's sign
  info.kmajor = innermost(raw.dims) == 'p';
  info.zero = form->zero;
  info.zero_value = form->zero_value;
  // A zero point of 8-bit integers (GPTQ's int8 `w - z`, which the pass computes at f32: exact) makes nibble - z an
  // integer in -255..143, exact in either 16-bit type: its rounding to `elem` is the identity, so the sub may be read as
  // at the MMA type (FX_B_ZERO_ROUND, which the packed 16-bit conversion takes).
  const DType zeroSource = form->zero_value >= 0 && isOp(spec.values[form->zero_value], "convert")
                               ? spec.values[spec.values[form->zero_value].operands[0]].dtype
                               : DType::F32;
  const bool integerZero = zeroSource == DType::I8 || zeroSource == DType::U8;
  info.zero_rounds = form->zero_value >= 0 && (form->sub == info.elem || integerZero);
  // its magic + z exact in `elem` (f16's 1024 + z for z in -128..255; bf16's 128 + z, integers to 256, for z in
  // -128..127): (magic + n) - (magic + z) is then n - z exactly, one fma in place of two (kernels/gemv.cuh
  // pair_scaled). z's range is the convert's result's: an 8-bit target wraps (`convert %z_i8 : u8` is 0..255, a
  // review's case), a wider integer or a float type keeps the source's; fp8 targets are not taken.
  if (integerZero) {
    const DType target = spec.values[form->zero_value].dtype;
    const bool keeps = target == DType::I32 || target == DType::I64 ||
                       target == DType::F32 || target == DType::F16 || target == DType::BF16;
    const DType range = target == DType::I8 || target == DType::U8 ? target : keeps ? zeroSource : DType::F32;
    info.zero_integer = range == DType::I8 || (range == DType::U8 && info.elem == DType::F16);
  }
  info.words = spec::nibblesPerElement(raw.dtype) == 8 && raw.dims.find('p') != std::string::npos;
  info.n_words = raw.dims.find('q') != std::string::npos;
  info.n_word_order = nibbleOrderTable(raw.order);
  info.scale_value = form->scale;
  info.scale_group = form->grouped ? spec.kGroup : 0;
  // A scale of the MMA type takes the packed 16-bit conversion (kernels/gemv.cuh pair_scaled: (magic + n) - (magic +
  // z) then one fma by the scale, exact as detectQuantScale says), for a zero point whose magic + z is exact in bf16
  // (128 + z, -128 <= z <= 128). A zero point tensor takes it where it and the sub are of the MMA type too: n exactly,
  // then one fma n * 1 - z (n - z rounded once to E, eager's sub), then the scale's (bench/gemv/int4/
  // zero_tensor_exactness.py checks both against eager's fp32-then-round, exhaustively); an integer zero point whose
  // magic + z is exact (zero_integer) takes n - z in one fma. Measurement knob
  // FXFUSE_GEMV_NIBBLE_PAIRS=0: the fp32 route, for A/B runs.
  static const bool pairs = readBinaryKnob("FXFUSE_GEMV_NIBBLE_PAIRS") != "0";
  const bool zero_in_elem =
      form->zero_value < 0 || integerZero || (info.zero_rounds && spec.values[form->zero_value].dtype == info.elem);
  info.scale_in_elem = pairs && spec.values[form->scale].dtype == info.elem && form->zero >= -128 &&
                       form->zero <= 128 && zero_in_elem;
}

const char* elemCType(DType d) {
  switch (d) {
    case DType::BF16: return "__nv_bfloat16";
    case DType::F16: return "__half";
    case DType::F32: return "float";
    default: throw std::logic_error("fxfuse internal error: mm operand dtype not validated (please report a bug)");
  }
}

// fp32 value → the MMA element type (exact: the value is already rounded to that dtype).
std::string toElem(DType d, const std::string& v) {
  switch (d) {
    case DType::BF16: return "__float2bfloat16_rn(" + v + ")";
    case DType::F16: return "__float2half_rn(" + v + ")";
    default: return v;
  }
}

// k's group, k / kGroup (k >= 0): a shift where kGroup is a power of two (every real group size), which a signed
// division is not (it rounds toward zero: extra instructions, and registers the small-M tile did not have).
std::string groupIndex(int kGroup) {
  if (kGroup <= 0)
    throw std::logic_error("fxfuse internal error: a 'g' dim without the spec's kgroup (please report a bug)");
  if ((kGroup & (kGroup - 1)) == 0) {
    int shift = 0;
    while ((1 << shift) < kGroup) ++shift;
    return "(k >> " + std::to_string(shift) + ")";
  }
  return "(k / " + std::to_string(kGroup) + ")";
}

// "b * p.in[2].sb + n * p.in[2].sn" for the dims an input names, in dim order.
// `n`: how the expression names the column (element 1 of a column pair: "(n + 1)"). A 'g' dim (k's group, a
// group-wise scale) is read at k / kGroup through the k stride the launch gives it, a 'p' dim (k packed as 4-bit
// values) at k / nibbles, the element holding k's nibble, a 'q' dim (n packed so) at n / nibbles through the n stride.
std::string offsetExpr(const std::string& dims, const std::string& base, const std::string& n, int kGroup,
                       int nibbles = 0) {
  static const std::map<char, const char*> stride = {{'b', "sb"}, {'m', "sm"}, {'k', "sk"}, {'n', "sn"},
                                                     {'g', "sk"}, {'p', "sk"}, {'q', "sn"}};
  std::string out;
  std::set<char> done;  // [m,m,k]: M is already flattened, one term per letter
  for (char c : dims) {
    if (c == '1' || !done.insert(c).second) continue;
    const std::string index = c == 'n'   ? n
                              : c == 'g' ? groupIndex(kGroup)
                              : c == 'p' ? groupIndex(nibbles)
                              : c == 'q' ? "((" + n + ") >> " + (nibbles == 8 ? "3)" : "1)")
                                         : std::string(1, c);
    out += (out.empty() ? "" : " + ") + index + " * " + base + "." + stride.at(c);
  }
  return out.empty() ? "0" : out;
}

// Values of the epilogue that vary along neither m nor k (inputs without m, constants and ops
// on those only), in spec order.
std::vector<bool> columnOnlyValues(const ChainSpec& spec) {
  std::vector<bool> col(spec.values.size(), false);
  for (size_t i = 0; i < spec.values.size(); ++i) {
    const Value& v = spec.values[i];
    if (v.kind == ValueKind::Input) col[i] = v.dims.find_first_of("mkgp") == std::string::npos;
    if (v.kind == ValueKind::Const) col[i] = true;
    if (v.kind == ValueKind::Op) {
      col[i] = true;
      for (int o : v.operands) col[i] = col[i] && col[o];
    }
  }
  return col;
}

class HookEmitter {
 public:
  // handoff: the epilogueHandoff value when the hooks serve the Hopper template's overlapped
  // epilogue (FX_EPI_OVERLAP), -1 otherwise. There the epilogue functions' `acc` is that value
  // (read back from the consumers' hand-off, already rounded to its 16-bit dtype), not the
  // accumulator.
  HookEmitter(const ChainSpec& spec, CodeWriter& w, int handoff = -1)
      : spec_(spec), w_(w), lines_(specLines(spec)), handoff_(handoff) {}

  // Emits locals for every value in closure(roots), in spec order. `overrides` gives the
  // complete expression of values that do not come from their spec line (the accumulator
  // rounded to mm's dtype, a raw weight element, a column value computed once per column);
  // what only an overridden value needs is not emitted.
  void emitValues(const std::vector<int>& roots, const std::map<int, std::string>& overrides) {
    std::set<int> overridden;
    for (const auto& o : overrides) overridden.insert(o.first);
    for (int i : closure(spec_, roots, overridden)) {
      const Value& v = spec_.values[i];
      auto o = overrides.find(i);
      std::string expr = o != overrides.end() ? o->second : valueExpr(i);
      w_.line("const {} v{} = {};  // {}", valueCType(v.dtype), i, expr, lines_.at(i + 2));
    }
  }

  // Locals for `values` (emitValues) and `return Type{v<i>, ...};`.
  void emitReturn(const char* type, const std::vector<int>& values, const std::map<int, std::string>& overrides) {
    emitValues(values, overrides);
    std::string init;
    for (int v : values) init += (init.empty() ? "" : ", ") + std::string("v") + std::to_string(v);
    w_.line("return {}{{{}}};", type, init);
  }

  // The mm value comes from the fp32 accumulator `acc`, rounded to mm's dtype.
  // With a hand-off (FX_EPI_OVERLAP) `acc` is the hand-off value itself.
  std::map<int, std::string> accOverride() const {
    if (handoff_ >= 0) return {{handoff_, "acc"}};
    const int mm = spec_.mmIndex();
    return {{mm, roundTo(spec_.values[mm].dtype, "acc")}};
  }

  // Where the epilogue's closures stop: at the hand-off value, which the epilogue warps read
  // (the values before it are the consumers'), or nowhere.
  std::set<int> handoffStop() const { return handoff_ >= 0 ? std::set<int>{handoff_} : std::set<int>{}; }

  // FX_EPI_OVERLAP's consumer side: the hand-off value of a column pair from the two accumulators, as
  // one packed 16-bit word. Its column inputs (a bias) are read per element through their
  // strides: the consumers run it once per column pair and fragment row pair.
  void emitHandoff() {
    const DType d = spec_.values[handoff_].dtype;
    w_.line("#define FX_EPI_HANDOFF 1");
    w_.line("#define FX_HANDOFF_F16 {}", d == DType::F16 ? 1 : 0);
    w_.line("// The hand-off value %{} of columns n and n + 1 (n + 1 < N) as one word, column n in the low half,", handoff_);
    w_.line("// from the fp32 accumulators: what the consumers pass to the epilogue warps (FX_EPI_OVERLAP).");
    auto fn = w_.block(
        "__device__ __forceinline__ unsigned int fx_handoff2(const fxfuse::FxParams& p, long long b, long long n, "
        "float acc0, float acc1)");
    w_.line("(void)p; (void)b; (void)n;");
    // the value's own expression unrounded: the pack rounds it (to nearest even, as fx_round_* would)
    const Value& h = spec_.values[handoff_];
    if (h.kind == ValueKind::Mm) {
      w_.line("return fx_pack2_{}(acc0, acc1);", cvtSuffix(d));
      return;
    }
    const std::map<int, std::string> none[2];
    emitPairValues(h.operands, none);
    w_.line("return fx_pack2_{}({}, {});", cvtSuffix(d), opExpr(handoff_, 0), opExpr(handoff_, 1));
  }

  bool roundedByItsStore(int i) const {
    const DType d = spec_.values[i].dtype;
    if (d != DType::BF16 && d != DType::F16) return false;
    if (std::find(spec_.outputs.begin(), spec_.outputs.end(), i) == spec_.outputs.end()) return false;
    for (const Value& u : spec_.values)
      if (std::find(u.operands.begin(), u.operands.end(), i) != u.operands.end()) return false;
    return true;
  }

  // A value's local: v<i> in a one-element function, v<i>_<elem> for element elem (0: column n,
  // 1: column n + 1) of a column pair (emitPairValues).
  static std::string local(int i, int elem = -1) {
    return elem < 0 ? fmt::format("v{}", i) : fmt::format("v{}_{}", i, elem);
  }

  // Whether the value's expression rounds to its dtype (fx_round_*): an op result of a dtype
  // other than f32 (16-bit, 8-bit, bool, int), except a 16-bit output rounded by its store.
  bool roundsItself(int i) const {
    const Value& v = spec_.values[i];
    return v.kind == ValueKind::Op && v.dtype != DType::F32 && !roundedByItsStore(i);
  }

  // The op's result before its rounding to the value's dtype.
  std::string opExpr(int i, int elem) const {
    std::vector<PointwiseArg> args;
    for (int o : spec_.values[i].operands) {
      PointwiseArg a{local(o, elem), std::nullopt};
      if (spec_.values[o].kind == ValueKind::Const) a.constant = spec_.values[o].constant;
      args.push_back(a);
    }
    return pointwiseExpr(spec_.values[i].op, args);
  }

  std::string valueExpr(int i, int elem = -1) const {
    const Value& v = spec_.values[i];
    switch (v.kind) {
      case ValueKind::Input: {
        std::string base = "p.in[" + std::to_string(v.slot) + "]";
        const std::string column = elem == 1 ? "(n + 1)" : "n";
        if (v.dims.find_first_of("pq") != std::string::npos) {  // k's (n's) nibble of the element at k (n) / per (B's
                                                                 // prologue: k is known)
          const int per = spec::nibblesPerElement(v.dtype);
          std::string position = v.dims.find('p') != std::string::npos ? "k" : column;
          if (!v.order.empty())  // n's value at position order[n % per] (AWQ's words): the order as a nibble table
            position = fmt::format("((0x{:x}u >> (((unsigned)({}) & {}u) << 2)) & {}u)", nibbleOrderTable(v.order),
                                   column, per - 1, per - 1);
          return fmt::format("fx_ld_nibble_{}({}.ptr, {}, {})", cvtSuffix(v.dtype), base,
                             offsetExpr(v.dims, base, column, spec_.kGroup, per), position);
        }
        return fmt::format("{}({}.ptr, {})", loadFn(v.dtype), base, offsetExpr(v.dims, base, column, spec_.kGroup));
      }
      case ValueKind::Const: return roundTo(v.dtype, floatLiteral(v.constant));
      case ValueKind::Op:
        // An output used by nothing else is rounded by its store (fx_st_* / fx_pack2_*, round to
        // nearest even like fx_round_*): rounding it here too costs two instructions per element
        // and changes no bit (a 16-bit value converts back exactly).
        return roundsItself(i) ? roundTo(v.dtype, opExpr(i, elem)) : opExpr(i, elem);
      case ValueKind::Mm: break;
    }
    throw std::logic_error("fxfuse internal error: mm value outside the epilogue (please report a bug)");
  }

  // Both elements of a column pair side by side (locals v<i>_0, v<i>_1), for every value in
  // closure(roots) that `overrides` (element 0's, element 1's) does not give. Each 16-bit
  // rounding is done for the pair at once: fx_round2_* is one cvt.rn.{bf16,f16}x2.f32 and two
  // unpacks where two fx_round_* take two conversions and two unpacks; bit-identical (session 11,
  // SASS at 4096^3: the bias add's rounding was 2 of bias+GELU's ~13.5 instructions per element).
  void emitPairValues(const std::vector<int>& roots, const std::map<int, std::string> (&overrides)[2]) {
    std::set<int> overridden;
    for (const auto& o : overrides[0]) overridden.insert(o.first);
    for (int i : closure(spec_, roots, overridden)) {
      const Value& v = spec_.values[i];
      const std::string type = valueCType(v.dtype);
      // each element's expression, and whether it still rounds to the value's dtype
      std::string expr[2];
      bool rounds = false;
      for (int e = 0; e < 2; ++e) {
        if (overridden.count(i)) {
          expr[e] = overrides[e].at(i);
        } else if (v.kind == ValueKind::Mm) {  // the accumulators acc0, acc1 rounded to mm's dtype
          expr[e] = e == 0 ? "acc0" : "acc1";
          rounds = true;
        } else if (roundsItself(i) && isHalfFloat(v.dtype)) {
          expr[e] = opExpr(i, e);
          rounds = true;
        } else {
          expr[e] = valueExpr(i, e);  // rounded inside when it rounds at all
        }
      }
      if (rounds && isHalfFloat(v.dtype)) {
        w_.line("{} {}, {};  // {}", type, local(i, 0), local(i, 1), lines_.at(i + 2));
        w_.line("fx_round2_{}({}, {}, {}, {});", cvtSuffix(v.dtype), expr[0], expr[1], local(i, 0), local(i, 1));
      } else {
        if (rounds)
          for (std::string& x : expr) x = roundTo(v.dtype, x);
        w_.line("const {} {} = {}, {} = {};  // {}", type, local(i, 0), expr[0], local(i, 1), expr[1],
                lines_.at(i + 2));
      }
    }
  }

  void emitTypes(const OperandInfo& a, const OperandInfo& b) {
    w_.line("// Operands as the MMA sees them (docs/interfaces.md, kernel-template hooks).");
    w_.line("using FxElemA = {};", elemCType(a.elem));
    w_.line("using FxElemB = {};", elemCType(b.elem));
    w_.line("#define FX_ELEM_F32 {}", a.elem == DType::F32 ? 1 : 0);
    w_.line("#define FX_ELEM_F16 {}", a.elem == DType::F16 ? 1 : 0);
    w_.line("#define FX_ELEM_BF16 {}", a.elem == DType::BF16 ? 1 : 0);
    w_.line("#define FX_BATCHED {}", spec_.gemm == spec::GemmKind::Bmm ? 1 : 0);
    // FX_B_SLOT: B's input when plain, the raw weight's when quantized (what gemv reads), else -1.
    for (const auto& [name, info] : {std::pair<const char*, const OperandInfo&>{"A", a}, {"B", b}}) {
      w_.line("#define FX_{}_PLAIN {}", name, info.plain ? 1 : 0);
      w_.line("#define FX_{}_SLOT {}", name, info.plain || info.quant || info.nibbles ? info.slot : -1);
      w_.line("#define FX_{}_KMAJOR {}", name, info.kmajor ? 1 : 0);
    }
    w_.line("#define FX_B_QUANT {}", b.quant ? 1 : 0);
    if (b.quant) w_.line("#define FX_B_RAW_SLOT {}", b.slot);
    if (b.nibbles) {  // the gemv's packed int4 path (kernels/gemv.cuh); FX_B_QUANT stays 0 for the generic templates
      w_.line("#define FX_B_NIBBLES 1");
      if (b.words) w_.line("#define FX_B_WORDS 1");  // GPTQ's int32 words, K x N
      if (b.n_words) {  // AWQ's int32 words, n packed in the stated order, K x N
        w_.line("#define FX_B_NWORDS 1");
        w_.line("#define FX_B_NWORD_ORDER 0x{:x}u", b.n_word_order);
      }
      w_.line("#define FX_B_ZERO {}", b.zero);
      if (b.zero_value >= 0) {  // fx_b_zero (emitScale); FX_B_ZERO_ROUND: eager's sub rounds to the MMA type
        w_.line("#define FX_B_ZERO_TENSOR 1");
        w_.line("#define FX_B_ZERO_ROUND {}", b.zero_rounds ? 1 : 0);
        w_.line("#define FX_B_ZERO_INT {}", b.zero_integer && b.scale_in_elem ? 1 : 0);  // pair_scaled's one fma
      }
    }
    if (b.quant || b.nibbles) {
      w_.line("using FxRawB = {};", rawCType(b.raw));  // (packed int4: the nibble, 0..15, as u8)
      w_.line("#define FX_B_QUANT_SCALE {}", b.quant_scale ? 1 : 0);
      w_.line("#define FX_B_SCALE_IN_ELEM {}", b.scale_in_elem ? 1 : 0);  // kernels/gemv.cuh, pair_scaled
      if (b.scale_group) w_.line("#define FX_B_SCALE_GROUP {}", b.scale_group);  // fx_b_scale reads k's group
    }
    w_.blank();
  }

  void emitLoad(int operand, const OperandInfo& info) {
    const char* name = operand == 0 ? "a" : "b";
    const char* elem = operand == 0 ? "FxElemA" : "FxElemB";
    const char* idx = operand == 0 ? "long long m, long long k" : "long long k, long long n";
    int root = spec_.values[spec_.mmIndex()].operands[operand];
    w_.line("// {} operand element ({}) of %{}.", operand == 0 ? "A" : "B", operand == 0 ? "m, k" : "k, n", root);
    auto fn = w_.block("__device__ __forceinline__ {} fx_load_{}(const fxfuse::FxParams& p, long long b, {})",
                       elem, name, idx);
    w_.line("(void)b;");
    if (info.plain) {
      w_.line("return *fx_addr_{}(p, b, {});  // {}", name, operand == 0 ? "m, k" : "k, n", lines_.at(root + 2));
    } else if (info.quant && operand == 1) {
      w_.line("return fx_dequant_b(p, b, k, n, *fx_addr_b_raw(p, b, k, n));");
    } else {
      emitValues({root}, {});
      w_.line("return {};", toElem(info.elem, "v" + std::to_string(root)));
    }
  }

  // Address of an operand element of a plain operand (or of B's raw weight when quant): the
  // templates' vector path reads 16 bytes from it when the stride and alignment allow.
  void emitAddr(int operand, const OperandInfo& info) {
    int value = operand == 0 ? spec_.values[spec_.mmIndex()].operands[0]
                             : (info.quant ? rawInput(info.slot) : spec_.values[spec_.mmIndex()].operands[1]);
    const char* type = operand == 0 ? "FxElemA" : (info.quant ? "FxRawB" : "FxElemB");
    std::string fn = operand == 0 ? "fx_addr_a" : (info.quant ? "fx_addr_b_raw" : "fx_addr_b");
    const char* idx = operand == 0 ? "long long m, long long k" : "long long k, long long n";
    const Value& v = spec_.values[value];
    std::string base = "p.in[" + std::to_string(v.slot) + "]";
    w_.line("// Address of element ({}) of %{} (input {}).", operand == 0 ? "m, k" : "k, n", value, v.slot);
    auto f = w_.block("__device__ __forceinline__ const {}* {}(const fxfuse::FxParams& p, long long b, {})", type, fn,
                      idx);
    w_.line("(void)b;");
    w_.line("return reinterpret_cast<const {}*>({}.ptr) + ({});", type, base,
            offsetExpr(v.dims, base, "n", spec_.kGroup));
  }

  void emitDequant(const OperandInfo& b) {
    int root = spec_.values[spec_.mmIndex()].operands[1];
    int raw = rawInput(b.slot);
    w_.line("// B's prologue as a function of one raw element of input {} (%{}).", b.slot, raw);
    auto fn = w_.block(
        "__device__ __forceinline__ FxElemB fx_dequant_b(const fxfuse::FxParams& p, long long b, long long k, "
        "long long n, FxRawB raw)");
    w_.line("(void)p; (void)b; (void)k; (void)n;");
    std::map<int, std::string> overrides;
    for (int i : closure(spec_, {root}))
      if (spec_.values[i].kind == ValueKind::Input && spec_.values[i].slot == b.slot)
        overrides[i] = "fx_cvt_" + std::string(cvtSuffix(spec_.values[i].dtype)) + "(" + rawBits(b.raw) + ")";
    emitValues({root}, overrides);
    w_.line("return {};", toElem(b.elem, "v" + std::to_string(root)));
  }

  // FX_B_QUANT_SCALE: the per-column scale s(b, n) of B = FxElemB(fp32(float(raw) * s)); with FX_B_ZERO_TENSOR, the
  // zero point tensor's z(b, n) beside it (fx_b_zero).
  void emitScale(const OperandInfo& b) {
    int root = spec_.values[spec_.mmIndex()].operands[1];
    w_.line("// Scale of B's quantized prologue (%{} = convert(raw) * %{}, rounded once): a function of (b, {}n).",
            root, b.scale_value, b.scale_group ? "k / " + std::to_string(b.scale_group) + ", " : "");
    emitColumnHook("fx_b_scale", b.scale_value, b.scale_group);
    if (b.zero_value >= 0) {
      w_.line("// Zero point tensor of B's quantized prologue (%{}): subtracted from the nibble before the scale.",
              b.zero_value);
      emitColumnHook("fx_b_zero", b.zero_value, b.scale_group);
    }
  }
  // `name`(p, b, [k,] n): value v of (b, n), and of k's group where `group` (the gemv reads it once per stage:
  // FX_B_SCALE_GROUP, when the scale or the zero point is group-wise).
  void emitColumnHook(const char* name, int v, int group) {
    auto fn = w_.block("__device__ __forceinline__ float {}(const fxfuse::FxParams& p, long long b, {}long long n)",
                       name, group ? "long long k, " : "");
    w_.line(group ? "(void)p; (void)b; (void)k; (void)n;" : "(void)p; (void)b; (void)n;");
    emitValues({v}, {});
    w_.line("return v{};", v);
  }

  // fx_epilogue_values computes every output of one element; fx_epilogue and fx_epilogue2
  // store them (the pair version with one 4-byte store per 16-bit output where it can).
  void emitEpilogue() {
    const std::vector<int>& outs = spec_.outputs;
    int mm = spec_.mmIndex();
    {
      auto s = w_.blockSemi("struct FxOutValues");
      for (size_t j = 0; j < outs.size(); ++j)
        w_.line("{} o{};  // output %{}", valueCType(spec_.values[outs[j]].dtype), j, outs[j]);
    }
    w_.blank();
    w_.line("// Every output of element (b, m, n), from the fp32 accumulator of %{}.", mm);
    {
      auto fn = w_.block(
          "__device__ __forceinline__ FxOutValues fx_epilogue_values(const fxfuse::FxParams& p, long long b, "
          "long long m, long long n, float acc)");
      w_.line("(void)p; (void)b; (void)m; (void)n;");
      emitReturn("FxOutValues", outs, accOverride());
    }
    w_.blank();
    {
      auto fn = w_.block(
          "__device__ __forceinline__ void fx_epilogue(const fxfuse::FxParams& p, long long b, long long m, "
          "long long n, float acc)");
      w_.line("const FxOutValues o = fx_epilogue_values(p, b, m, n, acc);");
      for (size_t j = 0; j < outs.size(); ++j) {
        std::string base = "p.out[" + std::to_string(j) + "]";
        w_.line("{}({}.ptr, {}, o.o{});", storeFn(spec_.values[outs[j]].dtype), base, outOffset(base, "n"), j);
      }
    }
    w_.blank();
    w_.line("// Columns n and n + 1 of row m (n even; n + 1 may be N, then only n is stored).");
    auto fn = w_.block(
        "__device__ __forceinline__ void fx_epilogue2(const fxfuse::FxParams& p, long long b, long long m, "
        "long long n, float acc0, float acc1)");
    w_.line("const bool has1 = n + 1 < p.N;");
    w_.line("const FxOutValues o0 = fx_epilogue_values(p, b, m, n, acc0);");
    w_.line("FxOutValues o1 = o0;");
    w_.line("if (has1) o1 = fx_epilogue_values(p, b, m, n + 1, acc1);");
    for (size_t j = 0; j < outs.size(); ++j) emitPairStore(j);
    fn.close();
    emitVecEpilogue();
  }

  // The branch-free pair for a tile wholly inside the output (the Hopper template's fast path):
  // fx_epilogue2_vec_ok(p), checked once per tile, says every 16-bit output takes one 4-byte
  // store at any even n and every 16-bit column input (below) one 4-byte load, so
  // fx_epilogue2_vec has no per-pair branch and the compiler can issue the loads of many pairs
  // together.
  // Column values: what depends on (b, n) only (a bias, a per-column scale and the ops on them).
  // fx_epilogue_cols computes them once for the columns n, n + 1 and the template passes them to
  // every row of its tile that it stores at those columns (Nsight Compute, bench/RESULTS.md
  // section 3: the epilogue's per-element loads were the Hopper kernel's top stall).
  void emitVecEpilogue() {
    const std::vector<int>& outs = spec_.outputs;
    const std::vector<int> cols = columnFrontier();
    std::vector<int> col_inputs;  // 16-bit inputs along n read by the column values: paired loads
    for (int i : closure(spec_, cols))
      if (isPairedColumnInput(i)) col_inputs.push_back(i);
    std::vector<int> elem_inputs;  // 16-bit inputs along m and n (a residual): paired loads
    for (int i : closure(spec_, outs, handoffStop()))
      if (isPairedElementInput(i)) elem_inputs.push_back(i);
    w_.blank();
    {
      auto fn = w_.block("__device__ __forceinline__ bool fx_epilogue2_vec_ok(const fxfuse::FxParams& p)");
      std::string cond = "true";
      const bool batched = spec_.gemm == spec::GemmKind::Bmm;
      for (size_t j = 0; j < outs.size(); ++j) {
        const DType d = spec_.values[outs[j]].dtype;
        const std::string base = "p.out[" + std::to_string(j) + "]";
        if (stagedStore(spec_))
          cond += wideCondition(base, batched);
        else if (isHalfFloat(d))
          cond += pairCondition(base, true, batched);
      }
      // Paired loads need their input laid out the same way; where one is not (a sliced or
      // expanded bias, a transposed residual), the whole launch takes the edge path, as for an
      // output that is. A uniform branch per column pair instead was measured in SASS: +10 %
      // instructions and a branch between the pairs' loads in the common case (session 6).
      std::vector<int> paired_inputs = col_inputs;
      paired_inputs.insert(paired_inputs.end(), elem_inputs.begin(), elem_inputs.end());
      for (int i : paired_inputs) {
        const Value& v = spec_.values[i];
        const std::string base = "p.in[" + std::to_string(v.slot) + "]";
        const bool with_b = v.dims.find('b') != std::string::npos;
        if (i == stagedInput(elem_inputs))
          cond += wideCondition(base, with_b);
        else
          cond += pairCondition(base, v.dims.find('m') != std::string::npos, with_b);
      }
      w_.line("(void)p;");
      w_.line("return {};", cond);
    }
    w_.blank();
    {
      auto st = w_.blockSemi("struct FxCol");
      w_.line("// the epilogue's values that depend on (b, n) only, for one column");
      for (int i : cols) w_.line("{} v{};  // {}", valueCType(spec_.values[i].dtype), i, lines_.at(i + 2));
    }
    w_.blank();
    // fx_epilogue_col: one column's values, the paired inputs passed in (in<i>);
    // fx_epilogue_cols: both columns of a pair, each paired input by one 4-byte load.
    std::map<int, std::string> paired;
    const PairedArgs col = pairedArgs(col_inputs, paired);
    w_.line("// The column values of column n (16-bit inputs along n passed in, loaded in pairs).");
    {
      auto fn = w_.block("__device__ __forceinline__ FxCol fx_epilogue_col(const fxfuse::FxParams& p, long long b, "
                         "long long n{})", col.params);
      w_.line("(void)p; (void)b; (void)n;");
      emitReturn("FxCol", cols, paired);
    }
    w_.blank();
    w_.line("// The column values of columns n and n + 1 (n even); fx_epilogue2_vec_ok(p) holds.");
    {
      auto fn = w_.block(
          "__device__ __forceinline__ void fx_epilogue_cols(const fxfuse::FxParams& p, long long b, long long n, "
          "FxCol& c0, FxCol& c1)");
      for (int i : col_inputs) emitPairedLoad(i);
      w_.line("c0 = fx_epilogue_col(p, b, n{});", col.args0);
      w_.line("c1 = fx_epilogue_col(p, b, n + 1{});", col.args1);
    }
    w_.blank();
    // A pair's values: the column values from c0 / c1, the paired element inputs from in<i>
    // (float2, loaded in pairs), the rest computed for both elements side by side.
    std::map<int, std::string> pair_overrides[2];
    for (int e = 0; e < 2; ++e) {
      for (int i : cols) pair_overrides[e][i] = fmt::format("c{}.v{}", e, i);
      for (int i : elem_inputs) pair_overrides[e][i] = fmt::format("in{}.{}", i, e == 0 ? "x" : "y");
      if (handoff_ >= 0) pair_overrides[e][handoff_] = e == 0 ? "acc0" : "acc1";
    }
    const char* vec_signature =
        "__device__ __forceinline__ {} {}(const fxfuse::FxParams& p, long long b, long long m, "
        "long long n, float acc0, float acc1, const FxCol& c0, const FxCol& c1{})";
    const int staged_in = stagedInput(elem_inputs);
    // in_pair: the staged input's elements n, n + 1 as one word, read by the template
    auto emit_pair_values = [&] {
      for (int i : elem_inputs) {
        if (i == staged_in)
          w_.line("const float2 in{} = fx_unpack2_{}(in_pair);  // {}", i, cvtSuffix(spec_.values[i].dtype),
                  lines_.at(i + 2));
        else
          emitPairedLoad(i);
      }
      emitPairValues(outs, pair_overrides);
      std::string init[2];
      for (int e = 0; e < 2; ++e)
        for (int v : outs) init[e] += (init[e].empty() ? "" : ", ") + local(v, e);
      w_.line("const FxOutValues o0{{{}}}, o1{{{}}};", init[0], init[1]);
    };
    if (stagedStore(spec_)) {
      emitStagedStoreHelpers(emit_pair_values, vec_signature, staged_in);
      return;
    }
    w_.line("// Columns n and n + 1 of row m, both inside the output; fx_epilogue2_vec_ok(p) holds;");
    w_.line("// c0, c1 from fx_epilogue_cols(p, b, n, c0, c1).");
    auto fn = w_.block(fmt::format(vec_signature, "void", "fx_epilogue2_vec", ""));
    emit_pair_values();
    for (size_t j = 0; j < outs.size(); ++j) {
      DType d = spec_.values[outs[j]].dtype;
      std::string base = "p.out[" + std::to_string(j) + "]";
      if (isHalfFloat(d)) {
        // sn == 1 (fx_epilogue2_vec_ok): n without its stride
        w_.line("fx_st2_{}({}.ptr, {}, o0.o{}, o1.o{});", cvtSuffix(d), base,
                outOffset(base, "n", true), j, j);
      } else {
        w_.line("{}({}.ptr, {}, o0.o{});", storeFn(d), base, outOffset(base, "n"), j);
        w_.line("{}({}.ptr, {}, o1.o{});", storeFn(d), base, outOffset(base, "(n + 1)"), j);
      }
    }
  }

  // Of a staged chain's paired element inputs (16-bit, along m and n: a residual): the one the
  // template also stages, loading 16 bytes per lane into the staging buffer and reading its pairs
  // back from there (as 4-byte pair loads, a warp's load reads 8 rows x 16 bytes, and the
  // residual chain gained least from the staged stores, bench/RESULTS.md Run K); -1 if none, or
  // if there are several (those keep their pair loads).
  int stagedInput(const std::vector<int>& elem_inputs) const {
    return stagedStore(spec_) && elem_inputs.size() == 1 ? elem_inputs[0] : -1;
  }

  // A chain with one 16-bit output (stagedStore): the Hopper template stages the output's
  // packed pairs in shared memory and writes whole 128-byte row segments with 16-byte stores
  // (each thread's accumulator fragment holds 2 columns of a row: stored straight from it, a
  // warp instruction writes 8 rows x 16 bytes, half of each 32-byte sector it touches).
  template <typename EmitPairValues>
  void emitStagedStoreHelpers(const EmitPairValues& emit_pair_values, const char* vec_signature, int staged_in) {
    const DType d = spec_.values[spec_.outputs[0]].dtype;
    const std::string in_param = staged_in >= 0 ? ", unsigned int in_pair" : "";
    w_.line("#define FX_EPI_STAGED 1");
    if (staged_in >= 0) w_.line("#define FX_EPI_STAGED_IN 1");
    w_.line("// Columns n and n + 1 of row m of the output as one word (column n in the low half), both");
    w_.line("// inside the output; fx_epilogue2_vec_ok(p) holds; c0, c1 from fx_epilogue_cols(p, b, n, c0, c1).");
    {
      auto fn = w_.block(fmt::format(vec_signature, "unsigned int", "fx_epilogue2_packed", in_param));
      emit_pair_values();
      w_.line("return fx_pack2_{}(o0.o0, o1.o0);", cvtSuffix(d));
    }
    w_.blank();
    w_.line("// The same pair stored (4 bytes).");
    {
      auto fn = w_.block(fmt::format(vec_signature, "void", "fx_epilogue2_vec", ""));
      std::string in_arg;
      if (staged_in >= 0)
        in_arg = fmt::format(", fx_ld_u32(p.in[{}].ptr, {})", spec_.values[staged_in].slot, pairedOffset(staged_in));
      w_.line("fx_st_u32(p.out[0].ptr, {}, fx_epilogue2_packed(p, b, m, n, acc0, acc1, c0, c1{}));",
              outOffset("p.out[0]", "n", true), in_arg);
    }
    w_.blank();
    w_.line("// The output's element (b, m, n) as a byte address; fx_epilogue2_vec_ok(p) holds: sn == 1,");
    w_.line("// elements n..n + 7 are one aligned 16-byte word at every n % 8 == 0.");
    {
      auto fn = w_.block("__device__ __forceinline__ char* fx_staged_out(const fxfuse::FxParams& p, long long b, "
                         "long long m, long long n)");
      w_.line("(void)b;");
      w_.line("return (char*)p.out[0].ptr + 2 * ({});", outOffset("p.out[0]", "n", true));
    }
    if (staged_in < 0) return;
    w_.blank();
    w_.line("// The staged input's element (b, m, n) as a byte address (aligned as the output's).");
    {
      auto fn = w_.block("__device__ __forceinline__ const char* fx_staged_in(const fxfuse::FxParams& p, long long b, "
                         "long long m, long long n)");
      w_.line("(void)b;");
      w_.line("return (const char*)p.in[{}].ptr + 2 * ({});", spec_.values[staged_in].slot, pairedOffset(staged_in));
    }
  }


  // The column values the rest of the epilogue reads: column-only, not constants (those fold),
  // and an output or an operand of a value that varies along m.
  std::vector<int> columnFrontier() const {
    const std::vector<bool> col = columnOnlyValues(spec_);
    const std::set<int> epi = closure(spec_, spec_.outputs, handoffStop());
    std::set<int> frontier;
    for (int i : epi) {
      const Value& v = spec_.values[i];
      if (col[i] && v.kind != ValueKind::Const &&
          std::find(spec_.outputs.begin(), spec_.outputs.end(), i) != spec_.outputs.end())
        frontier.insert(i);
      if (col[i] || v.kind == ValueKind::Mm || i == handoff_) continue;
      for (int o : v.operands)
        if (col[o] && spec_.values[o].kind != ValueKind::Const) frontier.insert(o);
    }
    return {frontier.begin(), frontier.end()};
  }

  // Of the column values' inputs (no m, no k dim): a 16-bit one along n, contiguous there (its
  // innermost dim), read for both columns by one 4-byte load on the fast path.
  bool isPairedColumnInput(int i) const {
    const Value& v = spec_.values[i];
    return v.kind == ValueKind::Input && isHalfFloat(v.dtype) && innermost(v.dims) == 'n';
  }

  // Of the epilogue's inputs: a 16-bit one along m and n (not k: the GEMM's operands),
  // contiguous along n, read for both columns of a pair by one 4-byte load on the fast path
  // (per element, a residual costs a 2-byte load and its own 64-bit address).
  bool isPairedElementInput(int i) const {
    const Value& v = spec_.values[i];
    return isPairedColumnInput(i) && spec::isResidualInput(v);
  }

  // A function's `, float in<i>` parameters for paired input values i, and the arguments of
  // its calls for columns n (`, in<i>.x`) and n + 1 (`, in<i>.y`); value i reads in<i>.
  struct PairedArgs {
    std::string params, args0, args1;
  };
  static PairedArgs pairedArgs(const std::vector<int>& inputs, std::map<int, std::string>& overrides) {
    PairedArgs a;
    for (int i : inputs) {
      a.params += fmt::format(", float in{}", i);
      a.args0 += fmt::format(", in{}.x", i);
      a.args1 += fmt::format(", in{}.y", i);
      overrides[i] = "in" + std::to_string(i);
    }
    return a;
  }

  // The ` && ...` terms under which elements n, n + 1 of a 16-bit tensor `base` are one 4-byte
  // aligned word at every even n: unit n stride, aligned base, even row stride (with_m) and
  // batch stride (batched).
  static std::string pairCondition(const std::string& base, bool with_m, bool batched) {
    std::string c = fmt::format(" && {}.sn == 1", base);
    if (with_m) c += fmt::format(" && {}.sm % 2 == 0", base);
    c += fmt::format(" && fx_aligned4({}.ptr, 0, 2)", base);
    if (batched) c += fmt::format(" && {}.sb % 2 == 0", base);
    return c;
  }

  // The same for eight elements n..n + 7 of a 16-bit output in one 16-byte word at every n % 8 == 0
  // (a staged output, stagedStore): one condition for the whole launch, not a branch per store
  // (ptxas duplicated the unrolled epilogue around such a branch: +47 % SASS).
  static std::string wideCondition(const std::string& base, bool batched) {
    std::string c = fmt::format(" && {0}.sn == 1 && {0}.sm % 8 == 0 && fx_aligned16({0}.ptr)", base);
    if (batched) c += fmt::format(" && {}.sb % 8 == 0", base);
    return c;
  }

  // `const float2 in<i> = fx_ld2_<dtype>(...)`: elements n, n + 1 of paired input value i
  // (sn == 1 by fx_epilogue2_vec_ok, so n goes without its stride).
  void emitPairedLoad(int i) {
    const Value& v = spec_.values[i];
    w_.line("const float2 in{} = fx_ld2_{}(p.in[{}].ptr, {});  // {}", i, cvtSuffix(v.dtype), v.slot, pairedOffset(i),
            lines_.at(i + 2));
  }

  // The element offset of paired input value i at (b, m, n), its sn == 1 left out.
  std::string pairedOffset(int i) const {
    const Value& v = spec_.values[i];
    const std::string base = "p.in[" + std::to_string(v.slot) + "]";
    std::string off = offsetExpr(v.dims, base, "n", spec_.kGroup);
    const std::string n_term = "n * " + base + ".sn";
    off.replace(off.find(n_term), n_term.size(), "n");
    return off;
  }

 private:
  std::string outOffset(const std::string& base, const char* n, bool unit_sn = false) const {
    std::string off = unit_sn ? fmt::format("m * {0}.sm + {1}", base, n) : fmt::format("m * {0}.sm + {1} * {0}.sn", base, n);
    if (spec_.gemm == spec::GemmKind::Bmm) off = fmt::format("b * {}.sb + ", base) + off;
    return off;
  }

  void emitPairStore(size_t j) {
    DType d = spec_.values[spec_.outputs[j]].dtype;
    std::string base = "p.out[" + std::to_string(j) + "]";
    std::string st = storeFn(d);
    if (isHalfFloat(d)) {
      w_.line("const long long off{} = {};", j, outOffset(base, "n"));
      auto pair = w_.block("if (has1 && {0}.sn == 1 && fx_aligned4({0}.ptr, off{1}, 2))", base, j);
      w_.line("fx_st2_{}({}.ptr, off{}, o0.o{}, o1.o{});", cvtSuffix(d), base, j, j, j);
      pair.chain("else");
      w_.line("{}({}.ptr, off{}, o0.o{});", st, base, j, j);
      w_.line("if (has1) {}({}.ptr, {}, o1.o{});", st, base, outOffset(base, "(n + 1)"), j);
    } else {
      w_.line("{}({}.ptr, {}, o0.o{});", st, base, outOffset(base, "n"), j);
      w_.line("if (has1) {}({}.ptr, {}, o1.o{});", st, base, outOffset(base, "(n + 1)"), j);
    }
  }

  // The first value that reads input `slot` within B's prologue.
  int rawInput(int slot) const {
    int root = spec_.values[spec_.mmIndex()].operands[1];
    for (int i : closure(spec_, {root}))
      if (spec_.values[i].kind == ValueKind::Input && spec_.values[i].slot == slot) return i;
    throw std::logic_error("fxfuse internal error: quant slot not in B's prologue (please report a bug)");
  }

  static std::string cvtSuffix(DType d) { return loadFn(d).substr(6); }  // "fx_ld_i8" → "i8"
  // The raw weight's C++ type: fp8 as the cuda_fp8.h class types, so that templates can tell
  // e4m3 / e5m2 from u8 (__nv_fp8_storage_t is unsigned char); same size and bits.
  static std::string rawCType(DType d) {
    if (d == DType::F8E4M3) return "__nv_fp8_e4m3";
    if (d == DType::F8E5M2) return "__nv_fp8_e5m2";
    return storageCType(d);
  }
  // `raw` as the prelude's fx_cvt_<dtype> takes it (fp8: the storage byte).
  static std::string rawBits(DType d) { return d == DType::F8E4M3 || d == DType::F8E5M2 ? "raw.__x" : "raw"; }

  const ChainSpec& spec_;
  CodeWriter& w_;
  std::vector<std::string> lines_;
  int handoff_;  // the overlapped epilogue's hand-off value, or -1 (constructor)
};

}  // namespace

bool stagedStore(const ChainSpec& spec) {
  if (spec.outputs.size() != 1) return false;
  return isHalfFloat(spec.values[spec.outputs[0]].dtype);
}

bool stagedEverything(const ChainSpec& spec) {
  if (!stagedStore(spec)) return false;
  int residuals = 0;
  for (const Value& v : spec.values) {
    if (!spec::isResidualInput(v)) continue;
    if (++residuals > 1 || !isHalfFloat(v.dtype) || innermost(v.dims) != 'n') return false;
  }
  return true;
}

int epilogueHandoff(const ChainSpec& spec, std::string* why) {
  auto refuse = [why](const char* reason) {
    if (why) *why = reason;
    return -1;
  };
  if (!stagedStore(spec)) return refuse("the chain's output is not one 16-bit tensor");
  const std::vector<bool> col = columnOnlyValues(spec);
  for (int cur = spec.mmIndex();;) {
    const DType d = spec.values[cur].dtype;
    if (isHalfFloat(d)) return cur;
    if (d != DType::F32) return refuse("the product is converted to a type other than bf16 / f16 first");
    if (std::find(spec.outputs.begin(), spec.outputs.end(), cur) != spec.outputs.end())
      return refuse("an fp32 value before the first 16-bit rounding is an output");
    int user = -1;
    for (size_t i = 0; i < spec.values.size(); ++i) {
      const std::vector<int>& ops = spec.values[i].operands;
      if (std::find(ops.begin(), ops.end(), cur) == ops.end()) continue;
      if (user >= 0) return refuse("the fp32 product feeds two ops before its first 16-bit rounding");
      user = static_cast<int>(i);
    }
    if (user < 0) return refuse("the product is not used");
    // the consumers compute the values up to the hand-off with the tensor cores idle: cheap ops only
    static const std::set<std::string> cheap = {"add", "sub", "mul", "div", "neg", "convert"};
    if (!cheap.count(spec.values[user].op))
      return refuse("an op other than add / sub / mul / div / neg / convert comes before the product's first 16-bit "
                    "rounding (the consumers would run it)");
    for (int o : spec.values[user].operands)
      if (o != cur && !col[o])
        return refuse("an op before the product's first 16-bit rounding reads a value along m (a residual added in fp32)");
    cur = user;
  }
}

OperandInfo analyzeA(const ChainSpec& spec) { return analyze(spec, 0, "mk"); }
OperandInfo analyzeB(const ChainSpec& spec) {
  OperandInfo info = analyze(spec, 1, "kn");
  detectQuantScale(spec, info);
  detectNibbleScale(spec, info);
  return info;
}

void emitHooks(const ChainSpec& spec, CodeWriter& w, bool handoff) {
  OperandInfo a = analyzeA(spec), b = analyzeB(spec);
  int h = -1;
  if (handoff) {
    std::string why;
    h = epilogueHandoff(spec, &why);
    if (h < 0) throw CodegenError("the overlapped epilogue needs a 16-bit hand-off value: " + why);
  }
  HookEmitter e(spec, w, h);
  e.emitTypes(a, b);
  if (a.plain) {
    e.emitAddr(0, a);
    w.blank();
  }
  e.emitLoad(0, a);
  w.blank();
  if (b.plain || b.quant) {
    e.emitAddr(1, b);
    w.blank();
  }
  if (b.quant) {
    e.emitDequant(b);
    w.blank();
  }
  if (b.quant_scale) {
    e.emitScale(b);
    w.blank();
  }
  e.emitLoad(1, b);
  w.blank();
  e.emitEpilogue();
  if (h >= 0) {
    w.blank();
    e.emitHandoff();
  }
}

}  // namespace fxfuse::codegen
