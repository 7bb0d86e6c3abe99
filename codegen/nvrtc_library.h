// libnvrtc, found and loaded at run time (dlopen), so that nothing links CUDA at build time
// and one build works with the toolkit's NVRTC and with pip's nvidia-cuda-nvrtc.
#pragma once

#include <cstddef>
#include <string>

#include "codegen/codegen.h"

namespace fxfuse::codegen {

// The NVRTC entry points fxfuse uses, with NVRTC's C types spelled locally (no nvrtc.h).
struct NvrtcApi {
  using Program = void*;
  using Result = int;  // nvrtcResult; 0 is NVRTC_SUCCESS
  const char* (*getErrorString)(Result);
  Result (*version)(int*, int*);
  Result (*createProgram)(Program*, const char*, const char*, int, const char* const*, const char* const*);
  Result (*destroyProgram)(Program*);
  Result (*compileProgram)(Program, int, const char* const*);
  Result (*getProgramLogSize)(Program, size_t*);
  Result (*getProgramLog)(Program, char*);
  Result (*getPTXSize)(Program, size_t*);
  Result (*getPTX)(Program, char*);
  Result (*getCUBINSize)(Program, size_t*);
  Result (*getCUBIN)(Program, char*);
  std::string path;         // the library loaded
  std::string include_dir;  // a directory holding cuda_fp16.h, or "" when none was found
};

// Loads NVRTC once per process (thread-safe); later calls return the same API. Returns
// nullptr and fills *why when no library is found.
const NvrtcApi* loadNvrtc(const NvrtcEnv& env, std::string* why);

}  // namespace fxfuse::codegen
