// Whether a matched GEMM can run as a generated kernel at all: dtypes, device, shapes,
// strides, alignment. A failed check is a named rejection (docs/interfaces.md), not an error.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "pass/chain_builder.h"
#include "pass/gemm_anchor.h"
#include "pass/operand_prologue.h"
#include "pass/pass_options.h"

namespace fxfuse::pass {

struct Rejection {
  std::string reason;  // stable name: "unsupported_dtype", …
  std::string detail;  // for people
};

struct OperandFacts {
  const PrologueResult* a = nullptr;
  const PrologueResult* b = nullptr;
  spec::DType aDtype = spec::DType::F32;  // after the prologue
  spec::DType bDtype = spec::DType::F32;
};

// Notes that do not reject (misaligned rows with require_aligned off, the device) go to `notes`.
std::optional<Rejection> checkLegality(const GraphIndex& index, const GemmMatch& match, const OperandFacts& facts,
                                       const PassOptions& options, std::vector<std::string>* notes);

}  // namespace fxfuse::pass
