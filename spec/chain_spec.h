// The chain spec: the canonical description of one fused prologue → GEMM → epilogue chain.
// Text form and semantics: docs/spec.md. Emitted by pass/, consumed by codegen/ and runtime/.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace fxfuse::spec {

enum class DType { Bool, I8, U8, I32, I64, F16, BF16, F32, F64, F8E4M3, F8E5M2 };
const char* dtypeName(DType d);            // "bf16"
bool parseDType(const std::string& s, DType* out);
int dtypeBytes(DType d);
bool isFloating(DType d);
bool isHalfFloat(DType d);  // bf16 or f16: the types whose values eager rounds after each op
// The number a tensor of an integer or bool type holds for `v`, as torch's casts make it: truncated and
// wrapped to the type's width (full((), 2.5, dtype=int64) is 2, full((), -1, dtype=uint8) 255), bool 0 or 1;
// `v` itself for the float types, which the kernels round. Every spec constant is stored so.
double heldAs(double v, DType d);

enum class GemmKind { Mm, Bmm };

// Which logical space a value lives in: A operand, B operand or the output.
enum class Space { A, B, Out };

enum class ValueKind { Input, Const, Op, Mm };

struct Value {
  ValueKind kind = ValueKind::Op;
  DType dtype = DType::F32;
  // Input: slot and dims (each 'b','m','k','n','g','p','q' or '1', in the tensor's dim order; 'g' is the group of k,
  // k / ChainSpec::kGroup: a group-wise scale's dim; 'p' is k packed as 4-bit values, nibblesPerElement(dtype) to
  // an element, k at element k / that, bits [4 (k % that), +4): a packed int4 weight, read as its nibble 0..15;
  // 'q' is n packed so: GPTQ's zero points and AWQ's words, eight to an i32 along n).
  int slot = -1;
  std::string dims;
  // Input with a 'q' dim: the order of the 4-bit values in an element (docs/spec.md `order`): n's value is bits
  // [4 order[n % per], +4) of element n / per (per = nibblesPerElement(dtype)); empty: order[j] = j. AWQ's words
  // hold n in the order 0 4 1 5 2 6 3 7.
  std::vector<int> order;
  // Const
  double constant = 0.0;
  // Op and Mm: op name from the pointwise table ("add", "gelu_tanh", …) or "mm"; operands.
  std::string op;
  std::vector<int> operands;
  // Op: eager computed this value in one addmm / baddbmm call (at::linear's too), and the values before it are that
  // call's parts (AddmmCall: the product, alpha, the bias, beta). Text: `addmm` after the dtype. Only the CPU
  // reference reads it: it makes that call, whose BLAS sums and scales in an order that the ops as written (mm, then
  // mul and add) do not repeat bit for bit, in f32 as in 16-bit types. The kernels compute the ops as written.
  bool addmmResult = false;
  Space space = Space::Out;  // derived by the parser / builder, not printed
};

// A fact about an op input that no value reads, which the pass relied on when it folded the chain: GPTQ's shift
// table `wf` ([0, 4, ..., 28]) and group index `g_idx` (arange(K) // G) shape how its int4 weight is dequantized,
// but the folded chain reads the packed weight directly (a 'p' dim, a 'g' dim), so other values loaded into them
// later (a desc_act checkpoint's permuted g_idx) would silently give a wrong answer. The op receives each such
// tensor as an extra input and checks its fact before computing (runtime/known_values_check.h): an error, never a
// wrong answer. Text: `expect <slot> <dtype> [<sizes>] values <v0> ...` / `expect <slot> <dtype> [k] kgroups`.
struct Expect {
  int slot = -1;  // numInputSlots() + its index in ChainSpec::expects
  DType dtype = DType::I32;  // i8, u8, i32 or i64
  enum class Kind {
    Values,   // a tensor of exactly `sizes` whose elements (row-major) are `values`
    KGroups,  // a 1-D tensor of length K whose element k is k / ChainSpec::kGroup (`sizes`, `values` empty)
  };
  Kind kind = Kind::Values;
  std::vector<int64_t> sizes;   // Values: concrete sizes ({} for 0-d)
  std::vector<int64_t> values;  // Values: 1..kMaxExpectValues elements, their count the product of sizes
};

struct ChainSpec {
  GemmKind gemm = GemmKind::Mm;
  // The size of a group of k that a 'g' dim indexes (input dims letter 'g': element k of the GEMM reads index
  // k / kGroup): a group-wise (GPTQ / AWQ) dequantization's scale. 0 when no input has a 'g' dim.
  int kGroup = 0;
  std::vector<Value> values;   // topological; values[i] is %i
  std::vector<int> outputs;    // value ids
  // The `expect` lines (docs/spec.md), in slot order: slots numInputSlots() .. numOpInputs() - 1.
  std::vector<Expect> expects;
  int numInputSlots() const;   // the inputs the values read (the kernels' inputs); not the expect inputs
  int numOpInputs() const;     // what the op takes: numInputSlots() + expects.size()
  int mmIndex() const;         // the single Mm value
};

struct SpecError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Canonical text (docs/spec.md). print(parse(s)) == s for canonical s.
std::string printSpec(const ChainSpec& spec);
// Parses and validates (numbering, one mm, spaces, operand counts, output space);
// throws SpecError with "line L: message".
ChainSpec parseSpec(const std::string& text);
// Validates a spec built in memory (same checks as the parser), filling Value::space.
void validateSpec(ChainSpec& spec);

// Number of operands each elementwise op takes, or -1 when the name is unknown.
int opArity(const std::string& op);

// ---- Extensions (additive; the declarations above are the stable contract) ----

// True for lt/le/gt/ge/eq/ne, whose result dtype is bool.
bool isComparisonOp(const std::string& op);
// Every elementwise op name, in table order (tests keep codegen's table complete).
std::vector<std::string> allOpNames();
// "A", "B", "Out".
const char* spaceName(Space s);
// The logical dims a value varies along, as a subset of "bmkn" in that order: an input's
// letters, the union of an op's operands, "mn" ("bmn") for mm. Needs a validated spec.
std::string valueLetters(const ChainSpec& spec, int value);
// An input along m and n but not k: a full-size extra operand of the epilogue (a residual).
bool isResidualInput(const Value& v);
// An input of one element: 0-d, or every dim 1. ATen's CPU kernels read such an operand as a scalar in some
// positions (a 16-bit mul or div reads its second operand unrounded), and eager's type promotion ranks it by
// its dims, not by this.
bool isOneElementInput(const Value& v);
// An input dims letter that varies along k: 'k' itself, 'g' (k's group) or 'p' (k packed as 4-bit values).
inline bool isKLetter(char c) { return c == 'k' || c == 'g' || c == 'p'; }
// An input dims letter that varies along n: 'n' itself or 'q' (n packed as 4-bit values: GPTQ's zero points, AWQ's words).
inline bool isNLetter(char c) { return c == 'n' || c == 'q'; }
// An input dims letter whose elements hold 4-bit values: 'p' (of k) or 'q' (of n).
inline bool isPackedLetter(char c) { return c == 'p' || c == 'q'; }
// How many 4-bit values an element of a 'p' input's dtype holds (u8, i8: 2; i32: 8); 0 for any other dtype.
int nibblesPerElement(DType d);
// `order` lists each of 0 .. per - 1 once: an input's order of its element's per 4-bit values (Value::order).
bool isNibbleOrder(const std::vector<int>& order, int per);
// The inputs of `spec` with a 'g' dim (those that read the spec's kGroup).
int groupInputCount(const ChainSpec& spec);
// The largest group size a spec may give (every real group size is a few hundred at most).
constexpr int kMaxKGroup = 1 << 20;
// A constant as the canonical text prints it ("%.17g", "inf", "-inf", "nan").
std::string formatConstant(double v);
// The most elements a `values` expect line lists.
constexpr int kMaxExpectValues = 64;
// An input's order as the canonical text prints it after its dims ("order 0 4 1 5 2 6 3 7"; "" for none).
std::string formatOrder(const std::vector<int>& order);
// An expect line as the canonical text prints it ("expect 3 i32 [1,8] values 0 4 8 12 16 20 24 28", no newline).
std::string formatExpect(const Expect& e);
// Whether `v` is a number a tensor of the integer dtype `d` can hold (i8, u8, i32, i64; false for any other).
bool integerHolds(DType d, int64_t v);

// The values of a chain that eager computed in one addmm / baddbmm call (docs/spec.md `addmm`):
//   result = add <product or alphaMul> <bias or betaMul>, alphaMul = mul <product> <alpha const> : f32,
//            betaMul = mul <bias> <beta const> : f32, the bias an input or a const;
//   or, the bias's beta 0 (no bias operand), result = mul <product> <alpha const> (alphaMul is the result).
// Each id is -1 where the chain has none (alpha or beta 1); result is -1 where there is no such call.
struct AddmmCall {
  int result = -1;
  int product = -1;  // the mm: f32, read by the call alone
  int alphaMul = -1, alpha = -1;
  int betaMul = -1, beta = -1;
  int bias = -1;
};
// The call whose result is `value` (marked addmm or not), or one with result -1 and `why` (if given) saying which of
// its rules the values break. Needs a spec whose values and mm the validator has checked.
AddmmCall addmmCallAt(const ChainSpec& spec, int value, std::string* why);
// The value marked addmm (Value::addmmResult), or -1.
int markedAddmmResult(const ChainSpec& spec);

}  // namespace fxfuse::spec
