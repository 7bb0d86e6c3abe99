#include "pass/chain_planner.h"

#include <algorithm>
#include <set>

#include "pass/activation_canonicalization.h"
#include "pass/aten_ops.h"
#include "pass/epilogue_region.h"
#include "pass/gemm_anchor.h"
#include "pass/operand_prologue.h"
#include "pass/profitability.h"
#include "pass/region_outputs.h"

namespace fxfuse::pass {
namespace {

struct GemmCore {
  PrologueResult a, b;
  int result = -1;  // the spec value of the anchor's result (after the bias add)
  bool ok = true;
};

// Prologues, mm and the anchor's own bias:
//   addmm(bias, A, B, beta=β, alpha=α)  ->  `%p = mm %A %B : f32`, `mul %p α : f32`,
//                                           `mul %bias β : f32`, `add … : <addmm dtype> addmm`
//                                           (beta 0: `mul %p α : <addmm dtype> addmm`, no bias)
//   mm(A, B)                             ->  `mm %A %B : <mm dtype>`
//   linear(A, W, bias) on a non-contiguous A of 3+ dims (at::linear's matmul path): `mm : <dtype>`, then the add
GemmCore emitCore(const GraphIndex& index, const GemmMatch& m, ChainBuilder& builder, const std::vector<bool>& claimed,
                  const PassOptions& options) {
  GemmCore core;
  OperandPrologue prologue(index, builder, claimed, options.prologue, &options.unroundedGroups,
                           /*sharedStayBuffers=*/options.baseline == "inductor");
  core.a = prologue.build(m.a, m.aLetters, spec::Space::A);
  core.b = prologue.build(m.b, m.bLetters, spec::Space::B);
  if (core.a.value < 0 || core.b.value < 0) return core.ok = false, core;
  spec::DType outDtype = index.tensor(m.anchor)->dtype;
  bool hasBias = m.bias && m.beta != 0.0;
  bool scaled = m.alpha != 1.0;
  // unrounded where the bias or alpha join the product in one rounding (addmm; not linear's matmul path)
  const bool unrounded = (hasBias && !m.biasAfterRoundedProduct) || scaled;
  int v = builder.mm(core.a.value, core.b.value, unrounded ? spec::DType::F32 : outDtype);
  if (scaled) v = builder.op("mul", {v, builder.constant(m.alpha, spec::DType::F32)}, hasBias ? spec::DType::F32 : outDtype);
  if (hasBias) {
    std::set<int> region = regionSet(m, {});
    EpilogueOperands operands(index, m, builder, region);
    int bias = operands.tensor(*m.bias);
    if (bias < 0) return core.ok = false, core;
    if (m.beta != 1.0) bias = builder.op("mul", {bias, builder.constant(m.beta, spec::DType::F32)}, spec::DType::F32);
    v = builder.op("add", {v, bias}, outDtype);
  }
  // Eager computed it in one addmm call (at::linear's too), which sums and scales in BLAS's order, not as an mm and
  // then a mul and an add do: marked so, the CPU reference makes that call. In f32 nothing else tells it from
  // `x @ w + b`, two calls in eager. The kernels compute the ops as written.
  if (unrounded) builder.markAddmmResult(v);
  core.result = v;
  builder.bind(index.node(m.anchor).name, v);
  // the root: the anchor itself, or a 3-D linear's output view. Not the A-side view of transparentViews, which is
  // x, not the product (review, session 56: `o + a.view(B, S, K)` had read the GEMM result twice where N == K)
  builder.bind(index.node(m.root).name, v);
  return core;
}

// `result`: the spec value of the anchor's result; the ops after it are the epilogue.
std::string describe(const GemmMatch& m, const GemmCore& core, const spec::ChainSpec& spec, int result) {
  // the scalars as the chain computes them: a bias with beta 0 is no operand (session 59's hunt: `baddbmm(beta=0)`
  // had read "+bias", alpha and beta had not shown)
  const bool hasBias = m.bias && m.beta != 0.0;
  std::string s = m.anchorKind;
  if (m.alpha != 1.0) s += "(alpha " + spec::formatConstant(m.alpha) + ")";
  if (hasBias) s += m.beta != 1.0 ? "+bias(beta " + spec::formatConstant(m.beta) + ")" : "+bias";
  auto prologue = [](const char* which, const std::vector<std::string>& ops) {
    std::string p;
    for (const std::string& op : ops) p += (p.empty() ? "" : ",") + op;
    return p.empty() ? p : std::string(" [") + which + ": " + p + "]";
  };
  s += prologue("A", core.a.ops) + prologue("B", core.b.ops);
  if (spec.kGroup > 0) s += " (scales per " + std::to_string(spec.kGroup) + " k)";  // a group-wise dequantization
  for (const spec::Value& v : spec.values)
    if (v.kind == spec::ValueKind::Input && v.dims.find('p') != std::string::npos) {
      s += " (4-bit weights, " + std::to_string(spec::nibblesPerElement(v.dtype)) + " per " +
           spec::dtypeName(v.dtype) + ")";  // a packed int4 weight read as its bytes
      break;
    }
  for (const spec::Value& v : spec.values)
    if (v.kind == spec::ValueKind::Input && v.dims.find('q') != std::string::npos) {
      // (GPTQ's zero points; any input packed along n: a review found a weight so packed called zero points)
      s += " (4-bit values along n, " + std::to_string(spec::nibblesPerElement(v.dtype)) + " per " +
           spec::dtypeName(v.dtype);
      if (!v.order.empty()) s += " in the " + spec::formatOrder(v.order);  // AWQ's words
      s += ")";
      break;
    }
  const auto& values = spec.values;
  for (size_t i = result + 1; i < values.size(); ++i)
    if (values[i].kind == spec::ValueKind::Op) s += " → " + values[i].op;
  return s;
}

// Region nodes whose every user is in the set (outputs stay regardless: their users are
// redirected to the op). What is left out stays in the graph for its other users. export's metadata check
// beside a `.to()` is no such user: the rewrite drops it with the value it checks (aten_ops.h isMetadataAssert);
// it had kept the whole unfused chain in the graph beside the fused op, computed twice (session 56).
std::vector<int> replacedNodes(const GraphIndex& index, std::set<int> set, const std::vector<int>& outputs) {
  bool changed = true;
  while (changed) {
    changed = false;
    for (auto it = set.begin(); it != set.end();) {
      int id = *it;
      bool isOutput = std::find(outputs.begin(), outputs.end(), id) != outputs.end();
      if (!isOutput && usedOutside(index, id, set)) {
        it = set.erase(it);
        changed = true;
      } else {
        ++it;
      }
    }
  }
  return std::vector<int>(set.begin(), set.end());
}

// What the op infers the problem shape from (runtime checkInputs): M and its lead dims from
// the first A-space input with an m dim, B from an input with a b dim, K from an A or B input,
// N from a B or output-space input. A problem dim of size 1 must still be named by some
// input; an empty string when the spec names them all.
std::string unnamedProblemDim(const spec::ChainSpec& spec, const GemmMatch& m) {
  auto has = [&](char letter, std::initializer_list<spec::Space> spaces) {
    for (const spec::Value& v : spec.values) {
      if (v.kind != spec::ValueKind::Input || v.dims.find(letter) == std::string::npos) continue;
      for (spec::Space s : spaces)
        if (v.space == s) return &v;
    }
    return static_cast<const spec::Value*>(nullptr);
  };
  const spec::Value* a = has('m', {spec::Space::A});
  if (!a) return "no A input has an m dim";
  if (countM(a->dims) != countM(m.aLetters)) return "the A input's m dims do not match the output's";
  if (m.kind == spec::GemmKind::Bmm && !has('b', {spec::Space::A, spec::Space::B, spec::Space::Out}))
    return "no input has a b dim";
  if (!has('k', {spec::Space::A, spec::Space::B})) return "no A or B input has a k dim";
  // (n packed, 'q', carries n too: an AWQ weight without a scale along n; the op reads N from it)
  if (!has('n', {spec::Space::B, spec::Space::Out}) && !has('q', {spec::Space::B}))
    return "no B or output input has an n dim (or n packed)";
  return "";
}

GemmOutcome rejected(GemmOutcome o, const char* reason, std::string detail) {
  o.rejection = Rejection{reason, std::move(detail)};
  return o;
}

// A mutating node strictly between the plan's first and last replaced node that may write one of
// its inputs or replaced values (pass/aten_ops.h writesAliasOf).
std::optional<int> writeInsideChain(const GraphIndex& index, const FusionPlan& plan) {
  if (plan.replaced.empty()) return std::nullopt;
  const auto [lo, hi] = std::minmax_element(plan.replaced.begin(), plan.replaced.end());
  std::vector<int> read(plan.replaced.begin(), plan.replaced.end());
  for (const std::string& name : plan.inputs) read.push_back(index.find(name));
  for (int id = *lo + 1; id < *hi; ++id)
    if (isMutating(index.node(id)) && writesAliasOf(index, id, read)) return id;
  return std::nullopt;
}

}  // namespace

GemmOutcome planChain(const GraphIndex& index, int anchor, const std::vector<bool>& claimed,
                      const PassOptions& options) {
  GemmOutcome out;
  out.gemm = index.node(anchor).name;
  std::string why;
  // A dtype outside the spec table (complex64, …) is unsupported, not unknown meta.
  for (int id : index.operands(anchor)) {
    const ir::Type& t = index.node(id).type;
    if (t.isTensor() && !t.tensor.otherDtype.empty())
      return rejected(out, "unsupported_dtype", t.tensor.otherDtype + " operand %" + index.node(id).name);
  }
  if (index.node(anchor).type.isTensor() && !index.node(anchor).type.tensor.otherDtype.empty())
    return rejected(out, "unsupported_dtype", index.node(anchor).type.tensor.otherDtype + " result");
  std::optional<GemmMatch> match = matchGemm(index, anchor, &why);
  if (!match) return rejected(out, why.find("meta") != std::string::npos ? "unknown_meta" : "unsupported_shape", why);
  const GemmMatch& m = *match;

  ChainBuilder builder(m.kind);
  GemmCore core = emitCore(index, m, builder, claimed, options);
  if (!core.ok) return rejected(out, "unsupported_shape", "an operand or bias the chain cannot read");
  OperandFacts facts{&core.a, &core.b, builder.dtypeOf(core.a.value), builder.dtypeOf(core.b.value)};
  if (auto r = checkLegality(index, m, facts, options, &out.notes)) {
    out.rejection = *r;
    return out;
  }
  if (builder.numSlots() > options.maxInputs)
    return rejected(out, "too_many_inputs", std::to_string(builder.numSlots()) + " inputs before the epilogue");

  // With the "epilogue" option off nothing after the GEMM (its own bias aside) joins the chain.
  EpilogueGrowth growth = options.epilogue ? growEpilogue(index, m, builder, claimed, options) : EpilogueGrowth{};
  out.notes.insert(out.notes.end(), growth.notes.begin(), growth.notes.end());
  OutputChoice choice = chooseOutputs(index, m, growth.nodes, options);
  out.notes.insert(out.notes.end(), choice.notes.begin(), choice.notes.end());
  // a prologue op left outside a chain that fuses anyway (its epilogue) is a note; on a bare GEMM, its reason (below)
  std::vector<std::string>& stops = out.prologueStops;
  if (!core.a.stop.empty()) stops.push_back("A's prologue stops at " + core.a.stop);
  if (!core.b.stop.empty()) stops.push_back("B's prologue stops at " + core.b.stop);
  out.notes.insert(out.notes.end(), stops.begin(), stops.end());
  bool hasPrologue = !core.a.ops.empty() || !core.b.ops.empty();
  // the epilogue's nodes that compute (a dropout or view passed through is no epilogue: a Linear -> Dropout alone is
  // still a bare GEMM, and eager runs no kernel for it; review, session 56)
  const int computing = static_cast<int>(std::count_if(choice.nodes.begin(), choice.nodes.end(),
                                                       [&](int id) { return !growth.passThrough.count(id); }));
  if (computing == 0 && !hasPrologue) {
    // the alias check is conservative: it cannot tell the op's written operand from one it only reads
    if (growth.mutationOfResult) return rejected(out, "mutation", "an in-place op writes or reads the GEMM result");
    // where an op after the GEMM was refused, its reason belongs on this line, not in the notes alone (hunt A,
    // session 53: a bias broadcasting along part of M read as "a bare GEMM")
    std::string refused;
    for (const std::string& note : growth.notes)
      if (refused.empty() && note.find(" not fused: ") != std::string::npos) refused = "; " + note;
    // so do the options that cut the region, and a prologue op left outside (session 59's hunts: a group-wise
    // dequantization, extra_outputs off, the epilogue option off had all read as "a bare GEMM: cuBLAS is as good")
    if (!options.epilogue) refused += "; the epilogue option is off";
    for (const std::string& cut : choice.cuts) refused += "; " + cut;
    for (const std::string& stop : stops) refused += "; " + stop;
    const std::string end = growth.firstUnlowered.empty() ? "" : "; the epilogue ends at " + growth.firstUnlowered;
    return rejected(out, "no_epilogue_no_prologue",
                    (refused.empty() ? "a bare GEMM: cuBLAS is as good" : "a bare GEMM, as nothing around it joined" +
                                                                              refused) + end);
  }
  if (choice.outputs.empty()) return rejected(out, "not_profitable", "the chain's result is unused");

  // Emit the final chain from scratch: the region may have shrunk since it was grown.
  ChainBuilder final(m.kind);
  core = emitCore(index, m, final, claimed, options);
  std::vector<int> views;
  if (!core.ok || !emitEpilogue(index, m, final, choice.nodes, &views))
    return rejected(out, "internal_error", "re-emitting the chosen region failed (please report a bug)");
  for (int o : choice.outputs) final.addOutput(final.boundValue(index.node(o).name));

  std::string unnamed = unnamedProblemDim(final.spec(), m);
  if (!unnamed.empty()) return rejected(out, "unsupported_shape", unnamed);

  FusionPlan plan;
  plan.spec = final.finalSpec();
  // Decomposed SiLU/GELU back to the composite ops, before the spec is printed and judged:
  // the planner and codegen's fast paths know only those. CUDA chains only
  // (activation_canonicalization.h says why).
  int result = core.result;
  if (index.tensor(m.anchor)->onCuda()) result = canonicalizeActivations(plan.spec)[core.result];
  if (result < 0) return rejected(out, "internal_error", "canonicalization removed the GEMM result (please report a bug)");
  try {
    spec::validateSpec(plan.spec);
    plan.specText = spec::printSpec(plan.spec);
  } catch (const spec::SpecError& e) {
    return rejected(out, "internal_error", std::string("invalid spec (please report a bug): ") + e.what());
  }
  const Profitability profitable = checkProfitable(index, m, plan.spec, options, computing);
  if (profitable.rejection) {
    out.rejection = *profitable.rejection;
    return out;
  }
  if (profitable.unfusedPath) {
    out.notes.push_back(*profitable.unfusedPath);
    plan.unfusedPath = true;
  }
  std::set<int> candidates(choice.nodes.begin(), choice.nodes.end());
  candidates.insert(m.anchor);
  candidates.insert(m.root);
  using NodeList = const std::vector<int>*;
  for (NodeList list : std::initializer_list<NodeList>{&core.a.absorbed, &core.b.absorbed, &m.transparentViews, &views})
    candidates.insert(list->begin(), list->end());
  plan.inputs = final.opInputNodes();
  // A value the op reads as an input stays in the graph, also where the prologue computes it too
  // (`xs = x * s; relu(xs @ w + xs)`: replaced and read, the rewrite was refused; hunt A, session 53).
  for (const std::string& name : plan.inputs) candidates.erase(index.find(name));
  plan.replaced = replacedNodes(index, candidates, choice.outputs);
  // The op reads all its inputs at once, where the chain's first output was; eager read each
  // where its node was. A write between the chain's first and last node to anything the chain
  // reads or computes (through a view too) would be seen by one and not the other. The epilogue's
  // growth already ends at such a write; this also covers the prologue and the GEMM's operands.
  if (std::optional<int> writer = writeInsideChain(index, plan))
    return rejected(out, "mutation", "%" + index.node(*writer).name + " writes in place a value the chain reads");
  plan.outputs = choice.outputs;
  plan.chain = describe(m, core, plan.spec, result);
  // the buffers whose contents the fold relies on: the op checks them and raises where they changed (say so up front)
  std::string expected;
  for (const spec::Expect& e : plan.spec.expects)
    expected += (expected.empty() ? "" : ", ") + std::string("%") + plan.inputs[static_cast<size_t>(e.slot)];
  if (!expected.empty()) plan.chain += " (relies on the contents of " + expected + ", checked at each call)";
  out.plan = std::move(plan);
  return out;
}

}  // namespace fxfuse::pass
