// The variant table: which kernel template serves which variant and the grid it launches.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "codegen/codegen.h"
#include "codegen/hooks.h"
#include "codegen/tma_desc.h"

namespace fxfuse::codegen {

// Template file (relative to codegen/) of a variant, e.g. "kernels/generic_gemm.cuh";
// throws CodegenError for an unknown variant.
std::string templateFor(const std::string& variant);
GridPolicy gridFor(const std::string& variant);
// Whether the variant's template waits for the kernel before it (calls fx_grid_dependency_wait,
// device/fx_prelude.cuh) before it touches global memory: only such a kernel may be launched as a
// programmatic dependent (runtime launchesAsProgrammaticDependent). Read from the template itself,
// so that a template gaining or losing the wait needs no second edit.
bool templateWaitsForPreviousKernel(const std::string& variant);
// An environment knob of measurements and tests (e.g. FXFUSE_SM90_STAGED_STORE, FXFUSE_GEMV_WGMMA):
// "" when unset, else one of `values` ("0" or "1" for readBinaryKnob); any other value throws CodegenError.
// (generate.cpp)
std::string readKnob(const char* env, const std::vector<std::string>& values);
std::string readBinaryKnob(const char* env);
// Dynamic shared memory a config's kernel needs at launch (0: static only).
size_t dynamicSmemBytes(const KernelConfig& config);
// The Hopper template's own config (tma_desc.h) for a KernelConfig of variant sm90_wgmma: the
// runtime needs it for tensor maps and the generator for the FX_CONSUMERS macro.
sm90::GemmConfig sm90ConfigOf(const KernelConfig& config);
// CTAs of a gemv config that fit one SM by their shared memory (Hopper's 228 KB, 1 KB reserved
// per CTA), 1 to 4: the kernel's launch bounds (FX_GEMV_MIN_BLOCKS), so that ptxas spends the
// registers that occupancy leaves (kernels/gemv.cuh).
int gemvCtasPerSm(const KernelConfig& config);
// The split-K cluster size S of a gemv launch over nt column tiles, mz row blocks and ksteps
// k-steps: the largest power of two up to max_cluster (and 8) whose grid stays within ctas_per_sm
// CTAs per SM and leaves each CTA at least `stages` k-steps; forced (1 to 8; 0 = none) replaces
// the rule where the config allows clusters that large.
int gemvSplitK(long long nt, long long mz, long long ksteps, int ctas_per_sm, int stages, int max_cluster,
               int sm_count, int forced);
// gemvSplitK's S for a launch on a GPU of dram_bytes_per_s peak memory bandwidth (0: not known): 16-bit weights at
// 1-16 rows on a GPU with less bandwidth an SM than the H200's (an H100) take half an S of 4 or more.
int gemvSplitKForBandwidth(int s, const KernelConfig& config, int sm_count, double dram_bytes_per_s);
// The CTAs per SM a gemv config's split-K aims for: one for 16-bit weights, else gemvCtasPerSm
// up to three, four at M = 17-32 (all measured: config_table.cpp gemvSplitKCtasCap).
int gemvSplitKCtasPerSm(const KernelConfig& config);
// Bytes of the weight element a gemv config streams, 1 or 2 (KernelConfig::weight_bytes, else from bk).
int gemvWeightBytesOf(const KernelConfig& config);
// Bytes of the weight element the gemv streams for weights of this analysis: 1 (8-bit, FX_B_QUANT_SCALE) or 2.
int gemvWeightBytes(const OperandInfo& b);

}  // namespace fxfuse::codegen
