// Measured kernel choices (python/fxfuse/autotune.py). For one spec, one problem class (sizes,
// operand layout and alignment: what selects a kernel) and one GPU model, the kernel the op
// runs: a codegen::describeConfig text of one of codegen::candidateConfigs, or "aten" (the
// unfused path was measured fastest: cuBLAS + the epilogue kernel, or ATen ops), or "aten-ops". Held in memory and, when persisted, as a
// small entry of the disk kernel cache (same header, checksum and atomic rename as a cubin), so
// that a later process, also one that loads a compiled graph from Inductor's cache or a
// rewritten .pt2, runs the measured kernel without measuring again. Torch-free; thread-safe.
#pragma once

#include <string>

#include "codegen/codegen.h"
#include "runtime/spec_cache.h"

namespace fxfuse::runtime {

inline constexpr const char* kAtenChoice = "aten";
// The chain evaluated by ATen ops alone, no generated code at all (not even the unfused path's
// epilogue kernel): autotune's reference for every candidate. Outranks FXFUSE_FORCE_KERNEL.
inline constexpr const char* kAtenOpsChoice = "aten-ops";

// "B,M,N,K,a_kmajor,b_kmajor,align_a,align_b".
std::string problemClass(const codegen::ProblemShape& p);

// The choice for (spec, problem class, gpu): the one set in this process, else the disk entry
// (remembered); "" when none was made (the heuristic decides).
std::string lookupKernelChoice(const CachedSpec& spec, const std::string& problem, const std::string& gpu);

// Choices read or set in this process stay in force after the disk cache moves
// (fxfuse._C.set_cache_dir); only new lookups read the new directory.
//
// Sets the choice ("" = the heuristic, also over a disk entry) for this process; with persist,
// also writes it to the disk cache ("" removes nothing there: it is only not read again).
// False when persisting was asked and failed (the disk cache warned).
bool recordKernelChoice(const CachedSpec& spec, const std::string& problem, const std::string& gpu,
                        const std::string& choice, bool persist);

// The disk cache key of a choice: spec text, problem class, GPU and library version.
std::string choiceCacheKey(const std::string& specText, const std::string& problem, const std::string& gpu);

}  // namespace fxfuse::runtime
