// The check of a spec's `expect` lines (docs/spec.md): the values of op inputs that no value reads but that the
// pass relied on when it folded the chain (GPTQ's shift table `wf` and group index `g_idx`). A chain whose fact no
// longer holds raises instead of computing: an error, never a wrong answer.
#pragma once

#include <cstdint>

#include <ATen/core/Tensor.h>

#include "spec/chain_spec.h"

namespace fxfuse::runtime {

// Whether reading `t`'s data now would break a CUDA graph capture (the CUDA kernel's: its current stream is
// capturing); null where no capture can be under way (the CPU kernel).
using CaptureQuery = bool (*)(const at::Tensor& t);

// Raises (TORCH_CHECK, naming the input, the fact and the first element that differs) unless every expect input
// of `inputs` (the op's, numOpInputs() of them, already through checkInputs: dtypes and sizes hold) holds its
// fact; K is the problem's. Reads each input's data (a copy to the CPU) only the first time it is seen: a tensor
// that passed is remembered (its TensorImpl, version counter, data pointer, offset, sizes, strides and the fact)
// until any of them changes, so a later call costs a lookup. An input not yet seen while `capturing` says a CUDA
// graph is being captured raises (it cannot be read then): run the model once before capturing. PyTorch does not
// count in-place writes to an inference tensor (made under torch.inference_mode), so such an input is read at
// every call (and cannot be checked while capturing). Thread-safe. Writes that bypass the version counter (through
// `t.data`, another tensor set_() to the same storage, a numpy or DLPack view, `untyped_storage().copy_`, a kernel
// writing its memory) are not seen once validated, and a CUDA graph's replays run no check at all (the op is not
// called): a buffer changed after capture is read as it was fused for. README's GPTQ entry names both.
void checkExpects(const spec::ChainSpec& spec, at::TensorList inputs, int64_t K, CaptureQuery capturing = nullptr);

}  // namespace fxfuse::runtime
