// Text files compiled into the library (kernel templates, kernel_abi.h, the device prelude),
// so a generated kernel never depends on the source tree being present at run time.
// The table is generated at configure time by codegen/embed_sources.cmake.
#pragma once

#include <cstddef>
#include <string>

namespace fxfuse::codegen {

struct EmbeddedFile {
  const char* path;  // relative to codegen/: "kernels/generic_gemm.cuh", "kernel_abi.h", …
  const char* text;
};

// All embedded files, sorted by path.
const EmbeddedFile* embeddedFiles(size_t* count);
// The text of one file, or nullptr when it was not present at build time.
const char* embeddedFile(const std::string& path);

}  // namespace fxfuse::codegen
