// The op fxfuse::gemm_chain(Tensor[] inputs, str spec) -> Tensor[]: schema, input checks and
// problem shape (shared by every kernel), and the Meta, CPU and Autograd kernels. The CUDA
// kernel lives in cuda_launch.cpp; it is registered here so that all registrations read in
// one place.
#include <ATen/ATen.h>
#include <ATen/TensorUtils.h>  // at::detail::computeStride
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/SymBool.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/library.h>

#include "runtime/gemm_chain.h"
#include "runtime/known_values_check.h"
#include "runtime/runtime_stats.h"
#include "runtime/torch_types.h"

namespace fxfuse::runtime {

using spec::ChainSpec;
using spec::GemmKind;
using spec::Space;
using spec::Value;
using spec::ValueKind;

std::shared_ptr<const CachedSpec> specFor(c10::string_view text) {
  try {
    return getCachedSpec(std::string_view(text.data(), text.size()));
  } catch (const spec::SpecError& e) {
    TORCH_CHECK(false, "fxfuse::gemm_chain: invalid spec: ", e.what(), "\n--- spec ---\n", text);
  }
}

std::vector<c10::SymInt> ChainShape::outputShape() const {
  std::vector<c10::SymInt> shape = lead;
  shape.push_back(N);
  return shape;
}

std::string spaceLetters(Space space, GemmKind gemm) {
  const char* letters = space == Space::A ? "mk" : space == Space::B ? "kn" : "mn";
  return (gemm == GemmKind::Bmm ? "b" : "") + std::string(letters);
}

namespace {

// "mk" → "[m,k]" for messages, whichever form the parser stored.
std::string dimsText(const std::string& dims) {
  std::string out = "[";
  for (char c : dimLetters(dims)) out += (out.size() > 1 ? "," : "") + std::string(1, c);
  return out + "]";
}

// The first input value in `space` (any space when null) whose dims contain `letter`, or -1.
int firstInputWith(const ChainSpec& spec, char letter, const Space* space) {
  for (size_t i = 0; i < spec.values.size(); ++i) {
    const Value& v = spec.values[i];
    if (v.kind != ValueKind::Input || (space && v.space != *space)) continue;
    if (dimLetters(v.dims).find(letter) != std::string::npos) return static_cast<int>(i);
  }
  return -1;
}

// Size of the first dim labelled `letter` of input value `id`.
c10::SymInt sizeOf(const ChainSpec& spec, at::TensorList inputs, int id, char letter) {
  const Value& v = spec.values[id];
  const std::string letters = dimLetters(v.dims);
  return inputs[v.slot].sym_size(static_cast<int64_t>(letters.find(letter)));
}

std::vector<c10::SymInt> mSizes(const at::Tensor& t, const std::string& letters) {
  std::vector<c10::SymInt> sizes;
  for (size_t d = 0; d < letters.size(); ++d)
    if (letters[d] == 'm') sizes.push_back(t.sym_size(static_cast<int64_t>(d)));
  return sizes;
}

// Rank, dtype and every dim's size of input value `v` against the problem shape.
void checkInputValue(const Value& v, const at::Tensor& t, const ChainShape& shape,
                     GemmKind gemm, int kGroup) {
  const std::string letters = dimLetters(v.dims);
  const int slot = v.slot;
  TORCH_CHECK(t.dim() == static_cast<int64_t>(letters.size()), "fxfuse::gemm_chain: input ",
              slot, " has shape ", t.sym_sizes(), " but the spec gives it dims ", dimsText(v.dims),
              " (rank ", letters.size(), ")");
  TORCH_CHECK(t.scalar_type() == toScalarType(v.dtype), "fxfuse::gemm_chain: input ", slot,
              " has dtype ", t.scalar_type(), " but the spec expects ",
              spec::dtypeName(v.dtype));
  // a 'g' dim (k's group) or a 'p' dim (k packed as 4-bit values) where the space has k; a 'q' dim (n packed) in B's
  const std::string space = spaceLetters(v.space, gemm);
  const std::string allowed = space + (v.space == Space::Out ? "1" : "gp1") + (v.space == Space::B ? "q" : "");
  for (size_t d = 0; d < letters.size(); ++d) {
    const char L = letters[d];
    TORCH_CHECK(allowed.find(L) != std::string::npos, "fxfuse::gemm_chain: input ", slot,
                ": dim letter '", L, "' does not belong to its space (", allowed, ")");
    const c10::SymInt& size = t.sym_size(static_cast<int64_t>(d));
    if (L == 'g') {  // one element per group of kGroup along K (the pass folds only K divisible by it)
      TORCH_SYM_CHECK((size * kGroup).sym_eq(shape.K), "fxfuse::gemm_chain: input ", slot, " has shape ",
                      t.sym_sizes(), ": its dim ", d, " ('g', K's groups of ", kGroup, ") must be K / ", kGroup,
                      " (problem K=", shape.K, ")");
      continue;
    }
    if (spec::isPackedLetter(L)) {  // K's (N's) 4-bit values, nibblesPerElement to an element (the pass folds only a
                                    // K (N) divisible by it)
      const int per = spec::nibblesPerElement(v.dtype);
      const bool k = L == 'p';
      TORCH_SYM_CHECK((size * per).sym_eq(k ? shape.K : shape.N), "fxfuse::gemm_chain: input ", slot, " has shape ",
                      t.sym_sizes(), ": its dim ", d, " ('", L, "', ", k ? "K" : "N", " packed as ", per,
                      " 4-bit values per ", spec::dtypeName(v.dtype), ") must be ", k ? "K" : "N", " / ", per,
                      " (problem ", k ? "K=" : "N=", k ? shape.K : shape.N, ")");
      continue;
    }
    const c10::SymInt expected = L == '1' ? c10::SymInt(1)
                                 : L == 'b' ? shape.B
                                 : L == 'k' ? shape.K
                                 : L == 'n' ? shape.N
                                            : size;  // 'm': checked below as a group
    TORCH_SYM_CHECK(size.sym_eq(expected), "fxfuse::gemm_chain: input ", slot, " has shape ",
                    t.sym_sizes(), ": its dim ", d, " ('", L, "') must be ", expected,
                    " (problem B=", shape.B, " M=", shape.M, " N=", shape.N, " K=", shape.K,
                    ")");
  }
  const std::vector<c10::SymInt> ms = mSizes(t, letters);
  if (ms.empty()) return;
  const std::vector<c10::SymInt> leadM =
      gemm == GemmKind::Bmm ? std::vector<c10::SymInt>{shape.M} : shape.lead;
  if (ms.size() == leadM.size()) {
    for (size_t i = 0; i < ms.size(); ++i)
      TORCH_SYM_CHECK(ms[i].sym_eq(leadM[i]), "fxfuse::gemm_chain: input ", slot,
                      " has shape ", t.sym_sizes(), ", whose m dims must be ", leadM);
  } else {
    c10::SymInt prod = 1;
    for (const c10::SymInt& s : ms) prod = prod * s;
    TORCH_SYM_CHECK(prod.sym_eq(shape.M), "fxfuse::gemm_chain: input ", slot, " has shape ",
                    t.sym_sizes(), ", whose m dims must flatten to M=", shape.M);
  }
}

// Dtype and sizes of an expect line's input (its values are checkExpects's, which reads them: not here, where the
// tensors may be fake or meta).
void checkExpectInput(const spec::Expect& e, const at::Tensor& t, const ChainShape& shape) {
  TORCH_CHECK(t.scalar_type() == toScalarType(e.dtype), "fxfuse::gemm_chain: input ", e.slot, " has dtype ",
              t.scalar_type(), " but the spec expects ", spec::dtypeName(e.dtype),
              " (a tensor the chain was fused for: ", spec::formatExpect(e), ")");
  if (e.kind == spec::Expect::Kind::KGroups) {
    TORCH_CHECK(t.dim() == 1, "fxfuse::gemm_chain: input ", e.slot, " has shape ", t.sym_sizes(),
                " but the spec expects a 1-D tensor of length K (the group of each k: ", spec::formatExpect(e), ")");
    TORCH_SYM_CHECK(t.sym_size(0).sym_eq(shape.K), "fxfuse::gemm_chain: input ", e.slot, " has shape ",
                    t.sym_sizes(), " but the spec expects a 1-D tensor of length K=", shape.K,
                    " (the group of each k: ", spec::formatExpect(e), ")");
    return;
  }
  TORCH_CHECK(t.dim() == static_cast<int64_t>(e.sizes.size()), "fxfuse::gemm_chain: input ", e.slot, " has shape ",
              t.sym_sizes(), " but the spec expects ", c10::IntArrayRef(e.sizes),
              " (a tensor the chain was fused for: ", spec::formatExpect(e), ")");
  for (size_t d = 0; d < e.sizes.size(); ++d)
    TORCH_SYM_CHECK(t.sym_size(static_cast<int64_t>(d)).sym_eq(e.sizes[d]), "fxfuse::gemm_chain: input ", e.slot,
                    " has shape ", t.sym_sizes(), " but the spec expects ", c10::IntArrayRef(e.sizes),
                    " (a tensor the chain was fused for: ", spec::formatExpect(e), ")");
}

}  // namespace

ChainShape checkInputs(const ChainSpec& spec, at::TensorList inputs) {
  const size_t slots = static_cast<size_t>(spec.numOpInputs());  // the values' inputs, then the expect lines'
  TORCH_CHECK(inputs.size() == slots, "fxfuse::gemm_chain: the spec takes ", slots,
              " inputs, got ", inputs.size());
  TORCH_CHECK(!inputs.empty(), "fxfuse::gemm_chain: a spec without inputs cannot be run");
  for (size_t i = 0; i < inputs.size(); ++i) {
    TORCH_CHECK(inputs[i].defined(), "fxfuse::gemm_chain: input ", i, " is undefined");
    TORCH_CHECK(inputs[i].device() == inputs[0].device(), "fxfuse::gemm_chain: input ", i,
                " is on ", inputs[i].device(), " but input 0 is on ", inputs[0].device(),
                "; all inputs must be on one device");
  }
  // Rank first, so that reading sizes by letter below is in bounds.
  for (const Value& v : spec.values)
    if (v.kind == ValueKind::Input)
      TORCH_CHECK(inputs[v.slot].dim() == static_cast<int64_t>(dimLetters(v.dims).size()),
                  "fxfuse::gemm_chain: input ", v.slot, " has shape ",
                  inputs[v.slot].sym_sizes(), " but the spec gives it dims ", dimsText(v.dims));

  ChainShape shape;
  const Space a = Space::A, b = Space::B, out = Space::Out;
  const int aInput = firstInputWith(spec, 'm', &a);
  TORCH_CHECK(aInput >= 0, "fxfuse::gemm_chain: the spec has no A input with an m dim");
  const Value& av = spec.values[aInput];
  shape.lead = mSizes(inputs[av.slot], dimLetters(av.dims));
  shape.M = 1;
  for (const c10::SymInt& s : shape.lead) shape.M = shape.M * s;
  if (spec.gemm == GemmKind::Bmm) {
    TORCH_CHECK(shape.lead.size() == 1, "fxfuse::gemm_chain: a bmm A input has one m dim");
    const int bInput = firstInputWith(spec, 'b', nullptr);
    TORCH_CHECK(bInput >= 0, "fxfuse::gemm_chain: a bmm spec needs an input with a b dim");
    shape.B = sizeOf(spec, inputs, bInput, 'b');
    shape.lead = {shape.B, shape.M};
  }
  int kInput = firstInputWith(spec, 'k', &a);
  if (kInput < 0) kInput = firstInputWith(spec, 'k', &b);
  TORCH_CHECK(kInput >= 0, "fxfuse::gemm_chain: the spec has no input with a k dim");
  shape.K = sizeOf(spec, inputs, kInput, 'k');
  int nInput = firstInputWith(spec, 'n', &b);
  if (nInput < 0) nInput = firstInputWith(spec, 'n', &out);
  if (nInput >= 0) {
    shape.N = sizeOf(spec, inputs, nInput, 'n');
  } else {
    // n packed alone (an AWQ weight [k,q] without a scale along n): N is its words' count times their 4-bit values
    const int qInput = firstInputWith(spec, 'q', &b);
    TORCH_CHECK(qInput >= 0, "fxfuse::gemm_chain: the spec has no input with an n dim (or n packed: 'q')");
    shape.N = sizeOf(spec, inputs, qInput, 'q') * spec::nibblesPerElement(spec.values[qInput].dtype);
  }

  for (const Value& v : spec.values)
    if (v.kind == ValueKind::Input) checkInputValue(v, inputs[v.slot], shape, spec.gemm, spec.kGroup);
  for (const spec::Expect& e : spec.expects) checkExpectInput(e, inputs[e.slot], shape);
  return shape;
}

namespace {

// A 'p' ('q') input's 4-bit values along its dim d as a tensor of its dtype (each 0..15) with that dim
// nibblesPerElement times longer: element j of the word at k / per (n / per) is bits [4 j, 4 j + 4), or [4 order[j], +4) with
// an order (AWQ's words; an arithmetic shift of an i8 / i32 word then & 15 is that nibble too).
at::Tensor unpackNibbles(const at::Tensor& t, int64_t d, const std::vector<int>& order) {
  TORCH_INTERNAL_ASSERT(at::isIntegralType(t.scalar_type(), /*includeBool=*/false), "fxfuse: a packed dim of dtype ",
                        t.scalar_type());
  const int64_t per = 2 * static_cast<int64_t>(t.element_size());  // checkInputs: u8 / i8 / i32 (nibblesPerElement)
  std::vector<int64_t> shiftShape(static_cast<size_t>(t.dim() + 1), 1);
  shiftShape[static_cast<size_t>(d + 1)] = per;
  at::Tensor positions = at::arange(per, t.options());
  if (!order.empty()) {
    TORCH_INTERNAL_ASSERT(static_cast<int64_t>(order.size()) == per, "fxfuse: an order of ", order.size(),
                          " for ", per, " 4-bit values an element");
    positions = at::tensor(std::vector<int64_t>(order.begin(), order.end())).to(t.options());
  }
  const at::Tensor shifts = (positions * 4).reshape(shiftShape);
  std::vector<int64_t> sizes = t.sizes().vec();
  sizes[static_cast<size_t>(d)] *= per;
  return t.unsqueeze(d + 1).bitwise_right_shift(shifts).bitwise_and(15).reshape(sizes);
}

}  // namespace

at::Tensor logicalView(const at::Tensor& packed, const std::string& dims, Space space,
                       GemmKind gemm, int kGroup, const std::vector<int>& nibbleOrder) {
  std::string letters = dimLetters(dims);
  // a 'p' dim is k's, a 'q' dim n's, its 4-bit values unpacked (a copy: the CPU reference's form)
  const size_t nibbles = letters.find_first_of("pq");
  const at::Tensor t = nibbles == std::string::npos ? packed : unpackNibbles(packed, static_cast<int64_t>(nibbles), nibbleOrder);
  if (nibbles != std::string::npos) letters[nibbles] = letters[nibbles] == 'p' ? 'k' : 'n';
  // a 'g' dim is k's: each of its elements repeated kGroup times below
  const size_t group = letters.find('g');
  if (group != std::string::npos) letters[group] = 'k';
  TORCH_INTERNAL_ASSERT(t.dim() == static_cast<int64_t>(letters.size()));
  const std::string order = spaceLetters(space, gemm);
  std::vector<int64_t> perm;
  std::vector<int64_t> shape;
  for (char L : order) {
    int64_t size = 1;
    for (size_t d = 0; d < letters.size(); ++d)
      if (letters[d] == L) {
        perm.push_back(static_cast<int64_t>(d));
        size *= t.size(static_cast<int64_t>(d));
      }
    shape.push_back(size);
  }
  // '1' dims go last in the permutation and vanish in the reshape (their size is 1).
  for (size_t d = 0; d < letters.size(); ++d)
    if (letters[d] == '1') perm.push_back(static_cast<int64_t>(d));
  TORCH_INTERNAL_ASSERT(perm.size() == letters.size(), "dims [", dims, "] outside space ",
                        order);
  // permute and reshape are a dispatcher call and a new view each, also when they change
  // nothing, which is the common case (A as [m,k], B as [k,n], a full residual). Skipped then,
  // with the strides reshape would give (it recomputes those of size-1 dims, which cuBLAS reads).
  bool identity = true;
  for (size_t d = 0; d < perm.size(); ++d) identity = identity && perm[d] == static_cast<int64_t>(d);
  const at::Tensor p = identity ? t : t.permute(perm);
  if (group != std::string::npos) {
    TORCH_INTERNAL_ASSERT(kGroup > 0, "fxfuse: a 'g' dim without a kgroup");
    const int64_t kPos = static_cast<int64_t>(order.find('k'));
    return p.reshape(shape).repeat_interleave(kGroup, kPos);
  }
  if (p.sizes() == c10::IntArrayRef(shape)) {
    const auto strides = at::detail::computeStride(p.sizes(), p.strides(), c10::IntArrayRef(shape));
    if (strides && c10::IntArrayRef(*strides) == p.strides()) return p;
  }
  return p.reshape(shape);
}

namespace {

std::vector<at::Tensor> gemmChainMeta(at::TensorList inputs, c10::string_view specText) {
  const auto entry = specFor(specText);
  const ChainShape shape = checkInputs(entry->spec, inputs);
  std::vector<at::Tensor> outputs;
  for (int id : entry->spec.outputs) {
    const auto dtype = toScalarType(entry->spec.values[id].dtype);
    outputs.push_back(at::empty_symint(shape.outputShape(), inputs[0].options().dtype(dtype)));
  }
  return outputs;
}

std::vector<at::Tensor> gemmChainCpu(at::TensorList inputs, c10::string_view specText) {
  const auto entry = specFor(specText);
  const ChainShape shape = checkInputs(entry->spec, inputs);
  checkExpects(entry->spec, inputs, shape.K.expect_int());  // before computing: never a wrong answer
  stats().cpuCalls++;
  // the values read only their own inputs; the expect lines' were for the check above
  return evaluateReference(entry->spec, inputs.slice(0, static_cast<size_t>(entry->spec.numInputSlots())), shape);
}

std::vector<at::Tensor> callBelowAutograd(at::TensorList inputs, c10::string_view spec) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("fxfuse::gemm_chain", "")
                             .typed<std::vector<at::Tensor>(at::TensorList, c10::string_view)>();
  at::AutoDispatchBelowADInplaceOrView guard;
  return op.call(inputs, spec);
}

// Not differentiable: forward works with inputs that require grad (a model called without
// no_grad() must still run), and backward raises instead of silently dropping gradients.
struct GemmChainFunction : public torch::autograd::Function<GemmChainFunction> {
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx,
                                                at::TensorList inputs, std::string spec) {
    auto outputs = callBelowAutograd(inputs, spec);
    for (const at::Tensor& o : outputs)
      if (!at::isFloatingType(o.scalar_type())) ctx->mark_non_differentiable({o});
    return outputs;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext*,
                                                 torch::autograd::variable_list) {
    TORCH_CHECK(false,
                "fxfuse::gemm_chain is not differentiable: fxfuse rewrites inference graphs. "
                "Run the rewritten model under torch.no_grad()/torch.inference_mode(), or "
                "keep the unfused model for training.");
  }
};

std::vector<at::Tensor> gemmChainAutograd(at::TensorList inputs, c10::string_view spec) {
  // Forward-mode AD (torch.func.jvp, forward_ad.make_dual): dual inputs do not require grad, so
  // without this check their tangents were dropped and the output's tangent read as zero.
  // Level 0 is the only one: PyTorch refuses a nested dual_level ("Nested forward mode AD is not
  // supported"), and torch.func.jvp reaches this kernel with its tangents at level 0 too.
  for (const at::Tensor& t : inputs)
    TORCH_CHECK(!t.defined() || !t._fw_grad(/*level=*/0).defined(),
                "fxfuse::gemm_chain has no forward-mode derivative: fxfuse rewrites inference graphs. "
                "Keep the unfused model for torch.func.jvp / forward-mode AD.");
  const bool gradMode = at::GradMode::is_enabled();
  const CallerGradMode callerMode(gradMode);
  bool needsGrad = false;
  if (gradMode)
    for (const at::Tensor& t : inputs) needsGrad = needsGrad || t.requires_grad();
  if (!needsGrad) return callBelowAutograd(inputs, spec);
  return GemmChainFunction::apply(inputs, std::string(spec));
}

// -1: not recorded (CallerGradMode::enabled reads grad mode itself); else 0 / 1 for this thread's current call
thread_local int callerGradMode = -1;

}  // namespace

CallerGradMode::CallerGradMode(bool enabled) : previous_(callerGradMode) { callerGradMode = enabled ? 1 : 0; }
CallerGradMode::~CallerGradMode() { callerGradMode = previous_; }
bool CallerGradMode::enabled() { return callerGradMode < 0 ? at::GradMode::is_enabled() : callerGradMode == 1; }
}  // namespace fxfuse::runtime

// Argument types (Tensor[], str) are ones AOTInductor's proxy executor accepts.
TORCH_LIBRARY(fxfuse, m) {
  m.def("gemm_chain(Tensor[] inputs, str spec) -> Tensor[]");
}
TORCH_LIBRARY_IMPL(fxfuse, Meta, m) {
  m.impl("gemm_chain", &fxfuse::runtime::gemmChainMeta);
}
TORCH_LIBRARY_IMPL(fxfuse, CPU, m) {
  m.impl("gemm_chain", &fxfuse::runtime::gemmChainCpu);
}
TORCH_LIBRARY_IMPL(fxfuse, CUDA, m) {
  m.impl("gemm_chain", &fxfuse::runtime::gemmChainCuda);
}
TORCH_LIBRARY_IMPL(fxfuse, Autograd, m) {
  m.impl("gemm_chain", &fxfuse::runtime::gemmChainAutograd);
}
