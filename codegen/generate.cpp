// generate(): one complete NVRTC translation unit for a spec and a config, laid out as
// docs/interfaces.md says: a header comment with the spec, includes, config macros,
// kernel_abi.h, the device prelude, the hooks, then the kernel template.
#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "codegen/code_writer.h"
#include "codegen/pointwise_table.h"
#include "codegen/codegen.h"
#include "codegen/config_table.h"
#include "codegen/embedded_sources.h"
#include "codegen/hooks.h"

namespace fxfuse::codegen {
namespace {

using spec::ChainSpec;
using spec::DType;

constexpr int kMaxInputs = 16;  // FxParams::in
constexpr int kMaxOutputs = 4;  // FxParams::out

// FNV-1a, 64 bit: stable across compilers and runs (std::hash is not), so names are too.
std::string hash16(const std::string& text) {
  unsigned long long h = 14695981039346656037ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return fmt::format("{:016x}", h);
}

const char* requireEmbedded(const std::string& path) {
  const char* text = embeddedFile(path);
  if (!text) throw CodegenError("kernel template " + path + " is not built into this fxfuse");
  return text;
}

// Validated copy, plus the limits of the kernel ABI (user errors: the pass must not emit these). Without the mark
// `addmm`, which only the CPU reference reads (spec::Value::addmmResult; the kernels compute the ops as written):
// a marked chain's kernel, its name, source and so its cubin's cache key, is the unmarked one's, and the kernels
// cached before the pass printed the mark are found again.
ChainSpec checkedSpec(const ChainSpec& spec) {
  ChainSpec s = spec;
  spec::validateSpec(s);
  for (spec::Value& v : s.values) v.addmmResult = false;
  if (s.numInputSlots() > kMaxInputs)
    throw CodegenError(fmt::format("too_many_inputs: {} inputs, the kernel ABI holds {}", s.numInputSlots(), kMaxInputs));
  if (static_cast<int>(s.outputs.size()) > kMaxOutputs)
    throw CodegenError(fmt::format("too_many_outputs: {} outputs, the kernel ABI holds {}", s.outputs.size(), kMaxOutputs));
  return s;
}

bool usesFp8(const ChainSpec& s) {
  for (const spec::Value& v : s.values)
    if (v.dtype == DType::F8E4M3 || v.dtype == DType::F8E5M2) return true;
  return false;
}

// True when every output is a 16- or 8-bit float: fast transcendentals whose error is far below
// the output's rounding are then exact enough (docs/spec.md keeps fp32 outputs libm-accurate).
// Integer and bool outputs are excluded: a comparison at its threshold could flip.
bool narrowOutputs(const ChainSpec& s) {
  for (int id : s.outputs) {
    const DType d = s.values[id].dtype;
    if (d != DType::F16 && d != DType::BF16 && d != DType::F8E4M3 && d != DType::F8E5M2) return false;
  }
  return true;
}


// Config macros a template reads. FX_WARPS_M × FX_WARPS_N tile the CTA's warps over bm × bn.
void emitConfig(const std::string& name, const KernelConfig& c, CodeWriter& w) {
  if (c.bm <= 0 || c.bn <= 0 || c.bk <= 0 || c.threads <= 0 || c.threads % 32 != 0)
    throw CodegenError("invalid kernel config: " + describeConfig(c));
  int warps = c.threads / 32;
  int warpsM = c.bm >= 128 && warps % 2 == 0 ? 2 : 1;
  w.line("// Kernel config: {}", describeConfig(c));
  w.line("#define FX_KERNEL_NAME {}", name);
  w.line("#define FX_BM {}", c.bm);
  w.line("#define FX_BN {}", c.bn);
  w.line("#define FX_BK {}", c.bk);
  w.line("#define FX_STAGES {}", c.stages);
  w.line("#define FX_THREADS {}", c.threads);
  w.line("#define FX_WARPS_M {}", warpsM);
  w.line("#define FX_WARPS_N {}", warps / warpsM);
  if (c.variant == "gemv") {
    // kernels/gemv.cuh: bm = 8 * FX_GEMV_MTILES; the split-K cluster is a launch attribute
    // (LaunchDims::cluster), so FX_GEMV_SPLITK stays 0.
    // bn: 128 columns per CTA, or 64 with the product by wgmma (FX_GEMV_NT)
    if (c.bm % 8 != 0 || c.bm / 8 > 8 || !(c.bn == 128 || (c.bn == 64 && c.wgmma)) || c.threads != 128 ||
        c.stages < 2 || c.stages > 8)
      throw CodegenError("invalid gemv config: " + describeConfig(c));
    w.line("#define FX_GEMV_MTILES {}", c.bm / 8);
    if (c.bn != 128) w.line("#define FX_GEMV_NT {}", c.bn);
    w.line("#define FX_GEMV_STAGES {}", c.stages);
    w.line("#define FX_GEMV_MIN_BLOCKS {}", gemvCtasPerSm(c));  // its launch bounds: registers
    if (c.wgmma) w.line("#define FX_GEMV_WGMMA 1");  // 8-bit or plain 16-bit weights (generate checks)
    if (c.wgmma && c.bk == 64) w.line("#define FX_GEMV_KT 64");  // 16-bit weights' own, or 8-bit K x N at 128 columns
    // measurement knob: FXFUSE_GEMV_NK_LDMATRIX=0 reads dense 16-bit N x K weights by 16-byte loads,
    // as before session 40 (bench/RESULTS.md Run BB: ldmatrix 0.3-5 % faster at 1-16 rows)
    static const std::string nk_ldmatrix = readBinaryKnob("FXFUSE_GEMV_NK_LDMATRIX");
    if (!nk_ldmatrix.empty()) w.line("#define FX_GEMV_NK_LDMATRIX {}", nk_ldmatrix);
    // packed int4 N x K weights on the mma.sync product expand in registers from the packed slot (kernels/gemv.cuh
    // kNibbleRegs): 0.86-0.90x the expanded tile's time at 1-16 rows (bench/RESULTS.md session 62); measurement knobs
    // FXFUSE_GEMV_NIBBLE_REGS=0 expands into the tile, FXFUSE_GEMV_NIBBLE_REGS_KN=1 K x N weights in registers too
    // (unmeasured), for A/B runs
    static const std::string nibble_regs = readBinaryKnob("FXFUSE_GEMV_NIBBLE_REGS");
    static const std::string nibble_regs_kn = readBinaryKnob("FXFUSE_GEMV_NIBBLE_REGS_KN");
    if (c.nibbles) w.line("#define FX_GEMV_NIBBLE_REGS {}", nibble_regs == "0" ? 0 : nibble_regs_kn == "1" ? 2 : 1);
    // group-wise scales and zero points: each lane reads one column a stage and its thread group shares them by
    // shuffles (kernels/gemv.cuh FX_GEMV_SCALE_SHFL, session 68); measurement knob FXFUSE_GEMV_SCALE_SHFL=0 reads
    // every column in every lane, as before, for A/B runs
    static const std::string scale_shfl = readKnob("FXFUSE_GEMV_SCALE_SHFL", {"0", "1"});
    if (!scale_shfl.empty()) w.line("#define FX_GEMV_SCALE_SHFL {}", scale_shfl);
  }
  if (c.variant == "sm90_wgmma") {
    // kernels/sm90_wgmma_gemm.cuh: one TMA producer warpgroup plus consumer warpgroups that
    // split each tile (bm / 64 of them) or, ping-pong, take whole tiles in turn (2).
    w.line("#define FX_CONSUMERS {}", sm90ConfigOf(c).consumers);
    w.line("#define FX_PINGPONG {}", c.pingpong ? 1 : 0);
    // split-K: the cluster shape is compiled in (__cluster_dims__), so launchDims' grid is a
    // multiple of it and the launch stays a plain cuLaunchKernel
    w.line("#define FX_SPLIT_K {}", c.split_k);
    // the overlapped epilogue (its hooks: emitHooks' hand-off; generate checks the config)
    w.line("#define FX_EPI_OVERLAP {}", c.epilogue_overlap ? 1 : 0);
    // the launch's dynamic shared memory, so that the template checks its own layout against it
    w.line("#define FX_DYN_SMEM_BYTES {}", sm90ConfigOf(c).dynSmemBytes());
    // measurement knob: FXFUSE_SM90_STAGED_STORE=0 stores a one-16-bit-output chain's pairs straight
    // from the fragment (1, the default, stages them for 16-byte stores), for A/B runs end to end
    static const std::string staged = readBinaryKnob("FXFUSE_SM90_STAGED_STORE");
    if (!staged.empty()) w.line("#define FX_SM90_STAGED_STORE {}", staged);
    // the staged epilogue's column values loaded before a 128-column tile's mainloop (the rule since session 60: its
    // Hopper tests passed in full, 197; 0.7-2.4 % at 512 x 4096 x 4096, bench/RESULTS.md session 59); measurement
    // knob FXFUSE_SM90_COLS_EARLY=0 loads them after it, for A/B runs
    static const std::string cols_early = readBinaryKnob("FXFUSE_SM90_COLS_EARLY");
    w.line("#define FX_SM90_COLS_EARLY {}", cols_early == "0" ? 0 : 1);
    // the consumers share the overlapped epilogue's last tile of a CTA with the three epilogue warps
    // (c.last_epilogue_shared: config_table.cpp overlapRule, or its measurement knob)
    if (c.epilogue_overlap) w.line("#define FX_EPI_LAST_SHARED {}", c.last_epilogue_shared ? 1 : 0);
  }
  w.blank();
}

std::string kernelName(const ChainSpec& s, const KernelConfig& c) {
  return "fxfuse_" + hash16(spec::printSpec(s) + "\n" + describeConfig(c));
}

void emitSpecComment(const ChainSpec& s, CodeWriter& w) {
  w.line("// Chain spec:");
  std::istringstream in(spec::printSpec(s));
  for (std::string l; std::getline(in, l);) w.line("//   {}", l);
}

}  // namespace

// A measurement or test knob's value: "" or one of `values` (config_table.h).
std::string readKnob(const char* env, const std::vector<std::string>& values) {
  const char* v = std::getenv(env);
  const std::string s = v ? v : "";
  if (s.empty() || std::find(values.begin(), values.end(), s) != values.end()) return s;
  std::string allowed;
  for (size_t i = 0; i < values.size(); ++i) allowed += (i == 0 ? "" : i + 1 == values.size() ? " or " : ", ") + values[i];
  throw CodegenError(std::string(env) + " must be " + allowed + ", not '" + s + "'");
}

std::string readBinaryKnob(const char* env) { return readKnob(env, {"0", "1"}); }

std::string generateHooks(const ChainSpec& spec, const KernelConfig& config) {
  ChainSpec s = checkedSpec(spec);
  CodeWriter w;
  emitSpecComment(s, w);
  emitConfig(kernelName(s, config), config, w);
  emitHooks(s, w, config.epilogue_overlap);
  return w.str();
}

KernelSource generate(const ChainSpec& spec, const KernelConfig& config) {
  ChainSpec s = checkedSpec(spec);
  KernelSource out;
  out.name = kernelName(s, config);
  out.config = config;
  out.grid = gridFor(config.variant);
  out.smem_bytes = dynamicSmemBytes(config);  // gemv: its pipeline; the others use static smem
  out.smem_optin = out.smem_bytes > 48 * 1024;
  const char* templ = requireEmbedded(templateFor(config.variant));
  if (config.variant == "gemv") {
    // The template streams the raw 8-bit weight when the FX_B_QUANT_SCALE hook exists, else
    // 16-bit elements; bk (its k per stage, 128 / bytes) sizes smem_bytes, so they must agree.
    const OperandInfo a = analyzeA(s), b = analyzeB(s);
    if ((a.elem != DType::BF16 && a.elem != DType::F16) || a.elem != b.elem)
      throw CodegenError("the gemv kernel needs A and B of one 16-bit dtype");
    // (or 64 k of 8-bit K x N weights for the product by wgmma at 128 columns: FX_GEMV_KT)
    const bool wgmma_kt64 = config.wgmma && b.quant_scale && !b.kmajor && config.bn == 128 && config.bk == 64;
    if (config.bk != 128 / gemvWeightBytes(b) && !wgmma_kt64)
      throw CodegenError("invalid gemv config for this spec (bk must be " + std::to_string(128 / gemvWeightBytes(b)) +
                         "): " + describeConfig(config));
    // a group-wise scale is read once per stage (kernels/gemv.cuh FX_B_SCALE_GROUP): its groups cover whole stages
    if (b.scale_group % config.bk != 0)
      throw CodegenError("the gemv reads a group-wise scale per stage: groups of " + std::to_string(b.scale_group) +
                         " k do not cover its stages of " + std::to_string(config.bk) + ": " + describeConfig(config));
    // packed int4 weights change the pipeline's shared memory (dynamicSmemBytes): the config must say so
    if (config.nibbles != b.nibbles)
      throw CodegenError(std::string("invalid gemv config for this spec (") +
                         (b.nibbles ? "packed int4 weights need" : "only packed int4 weights take") +
                         " 'nibbles'): " + describeConfig(config));
    // the shared memory is sized for the weight width the config says (dynamicSmemBytes): the spec's
    if (gemvWeightBytesOf(config) != gemvWeightBytes(b))
      throw CodegenError("invalid gemv config for this spec (its weights are " + std::to_string(8 * gemvWeightBytes(b)) +
                         "-bit): " + describeConfig(config));
    // the product by wgmma exists for 8-bit weights and plain 16-bit ones (kernels/gemv.cuh; gemvTakesWgmma)
    if (config.wgmma && !b.quant_scale && !b.plain)
      throw CodegenError("the gemv's wgmma product needs 8-bit weights with their scales or plain 16-bit ones: " +
                         describeConfig(config));
  }
  if ((config.wgmma || config.nibbles) && config.variant != "gemv")
    throw CodegenError("wgmma and nibbles are gemv options: " + describeConfig(config));
  // the overlapped epilogue: the Hopper template's cooperative 128-row tiles only (kernels/sm90_wgmma_gemm.cuh
  // FX_EPI_OVERLAP); the chain's hand-off value is emitHooks' check
  if (config.epilogue_overlap &&
      (config.variant != "sm90_wgmma" || config.pingpong || config.split_k != 1 || config.bm != 128))
    throw CodegenError("the overlapped epilogue needs the Hopper kernel's cooperative 128-row tile: " +
                       describeConfig(config));
  if (config.last_epilogue_shared && !config.epilogue_overlap)
    throw CodegenError("the shared last tile is a form of the overlapped epilogue: " + describeConfig(config));

  CodeWriter w;
  w.line("// Generated by fxfuse codegen: {}", out.name);
  w.line("// The hooks between the markers below are specific to this chain; the rest is shared.");
  if (usesFp8(s)) w.line("#define FX_USE_FP8 1");
  if (narrowOutputs(s)) w.line("#define FX_FAST_MATH 1");
  // test hook: FXFUSE_PDL_TRIGGER_AT_START=1 makes every kernel trigger its programmatic dependents
  // as it starts (device/fx_prelude.cuh fx_grid_dependency_wait), so that a test runs two dependent
  // kernels side by side and only the dependent's griddepcontrol.wait orders them
  // (test_programmatic_launch_waits_for_the_kernel_before). Defined before the prelude that reads
  // it: from 0f6cd61 it came after, with the config macros, the trigger was compiled out and the
  // test's overlapping cases overlapped nothing (found in Run BD call 3; CTest
  // Generate.PdlTriggerTestHookReachesThePrelude).
  // Read on every generate (not once per process), so that a test may set and clear it.
  if (readBinaryKnob("FXFUSE_PDL_TRIGGER_AT_START") == "1") w.line("#define FX_PDL_TRIGGER_AT_START 1");
  w.line("#include <cuda_fp16.h>");
  w.line("#include <cuda_bf16.h>");
  // gemv.cuh names the fp8 types and conversions of its quantized path for any raw type.
  if (usesFp8(s) || config.variant == "gemv") w.line("#include <cuda_fp8.h>");
  w.blank();
  w.line("// ---- kernel_abi.h ----");
  w.verbatim(requireEmbedded("kernel_abi.h"));
  w.blank();
  w.line("// ---- device/fx_prelude.cuh ----");
  w.verbatim(requireEmbedded("device/fx_prelude.cuh"));
  w.blank();
  w.line("// ---- hooks for this chain ----");
  w.verbatim(generateHooks(s, config));
  if (config.variant == "pointwise") {
    if (!pointwiseApplies(s)) throw CodegenError("the epilogue-alone kernel needs raw A and B and a free input slot");
    // The product the runtime computed: in the mm value's dtype when that is 16-bit (cuBLAS
    // rounds its fp32 accumulator once, as the hooks would: half the bytes), else fp32.
    const DType mmType = s.values[s.mmIndex()].dtype;
    const DType accType = spec::isHalfFloat(mmType) ? mmType : DType::F32;
    w.line("#define FX_ACC_SLOT {}  // the product the runtime computed", s.numInputSlots());
    w.line("#define FX_ACC_LOAD(ptr, i) {}(ptr, i)", loadFn(accType));
  }
  w.line("// ---- {} ----", templateFor(config.variant));
  w.verbatim(templ);
  out.code = w.str();
  return out;
}

}  // namespace fxfuse::codegen
