// Finding libnvrtc and the CUDA headers. Search order (first hit wins):
//   1. env FXFUSE_NVRTC_PATH (the library file, or a directory holding it)
//   2. the dynamic loader by soname: libnvrtc.so.13, .so.12, .so (LD_LIBRARY_PATH, ldconfig,
//      or a copy a process such as torch has already loaded)
//   3. the caller's NvrtcEnv::extra_lib_dirs
//   4. CUDA_HOME / CUDA_PATH / /usr/local/cuda lib64, then pip's nvidia/cu13/lib (and the
//      CUDA 12 layout nvidia/cuda_nvrtc/lib) in the usual Python prefixes.
#include <dlfcn.h>
#include <glob.h>
#include <sys/stat.h>

#include <cstdlib>
#include <mutex>
#include <vector>

#include "codegen/nvrtc_library.h"

namespace fxfuse::codegen {
namespace {

bool exists(const std::string& path) {
  struct stat st;
  return !path.empty() && ::stat(path.c_str(), &st) == 0;
}

bool isDir(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string envOr(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

std::string parentDir(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

void globInto(const std::string& pattern, std::vector<std::string>* out) {
  glob_t g;
  if (::glob(pattern.c_str(), 0, nullptr, &g) == 0)
    for (size_t i = 0; i < g.gl_pathc; ++i) out->push_back(g.gl_pathv[i]);
  ::globfree(&g);
}

// Python prefixes where pip puts nvidia/cu13 (or nvidia/cuda_nvrtc for CUDA 12 wheels).
std::vector<std::string> pipPackageDirs(const char* sub) {
  std::vector<std::string> prefixes = {"/usr/local/lib/python3*/*-packages", "/usr/lib/python3*/*-packages",
                                       "/opt/conda/lib/python3*/site-packages"};
  for (const char* env : {"VIRTUAL_ENV", "CONDA_PREFIX"})
    if (!envOr(env).empty()) prefixes.push_back(envOr(env) + "/lib/python3*/site-packages");
  std::string home = envOr("HOME");
  if (!home.empty()) {
    prefixes.push_back(home + "/.local/lib/python3*/site-packages");
    prefixes.push_back(home + "/.pyenv/versions/*/lib/python3*/site-packages");
  }
  std::vector<std::string> dirs;
  for (const std::string& p : prefixes) globInto(p + "/" + sub, &dirs);
  return dirs;
}

// NVRTC dlopens its builtins library by soname, which a bare loader search misses for a pip
// install, so the builtins are preloaded from the directory of the libnvrtc being loaded.
void preloadBuiltins(const std::string& dir) {
  std::vector<std::string> builtins;
  globInto(dir + "/libnvrtc-builtins.so.*", &builtins);
  for (const std::string& b : builtins)
    if (b.find(".alt.") == std::string::npos) ::dlopen(b.c_str(), RTLD_NOW | RTLD_GLOBAL);
}

// Loads dir/libnvrtc.so.*.
void* openInDir(const std::string& dir, std::string* path) {
  std::vector<std::string> libs;
  for (const char* name : {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"})
    if (exists(dir + "/" + name)) libs.push_back(dir + "/" + name);
  if (libs.empty()) return nullptr;
  preloadBuiltins(dir);
  void* h = ::dlopen(libs.front().c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h) *path = libs.front();
  return h;
}

std::string loadedPath(void* handle, void* symbol, const std::string& fallback) {
  Dl_info info;
  if (symbol && ::dladdr(symbol, &info) && info.dli_fname) return info.dli_fname;
  (void)handle;
  return fallback;
}

void* openNvrtc(const NvrtcEnv& env, std::string* path) {
  std::string forced = envOr("FXFUSE_NVRTC_PATH");
  if (!forced.empty()) {
    if (isDir(forced)) return openInDir(forced, path);
    preloadBuiltins(parentDir(forced));  // the NVRTC worker names its parent's library by file
    void* h = ::dlopen(forced.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h) *path = forced;
    return h;  // an explicit choice is not second-guessed by the other locations
  }
  for (const char* name : {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"}) {
    if (void* h = ::dlopen(name, RTLD_NOW | RTLD_LOCAL)) {
      *path = loadedPath(h, ::dlsym(h, "nvrtcVersion"), name);
      return h;
    }
  }
  std::vector<std::string> dirs = env.extra_lib_dirs;
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"})
    if (!envOr(var).empty()) dirs.push_back(envOr(var) + "/lib64");
  dirs.push_back("/usr/local/cuda/lib64");
  for (const char* sub : {"nvidia/cu13/lib", "nvidia/cuda_nvrtc/lib"})
    for (const std::string& d : pipPackageDirs(sub)) dirs.push_back(d);
  for (const std::string& d : dirs)
    if (void* h = openInDir(d, path)) return h;
  return nullptr;
}

std::string findIncludeDir(const NvrtcEnv& env, const std::string& libPath) {
  std::vector<std::string> dirs = env.extra_include_dirs;
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"})
    if (!envOr(var).empty()) dirs.push_back(envOr(var) + "/include");
  dirs.push_back("/usr/local/cuda/include");
  dirs.push_back(parentDir(parentDir(libPath)) + "/include");  // pip: nvidia/cu13/{lib,include}
  for (const std::string& d : pipPackageDirs("nvidia/cu13/include")) dirs.push_back(d);
  for (const std::string& d : pipPackageDirs("nvidia/cuda_runtime/include")) dirs.push_back(d);
  for (const std::string& d : dirs)
    if (exists(d + "/cuda_fp16.h") && exists(d + "/cuda_bf16.h")) return d;
  return "";
}

template <typename Fn>
bool bind(void* h, const char* name, Fn* fn) {
  *fn = reinterpret_cast<Fn>(::dlsym(h, name));
  return *fn != nullptr;
}

}  // namespace

const NvrtcApi* loadNvrtc(const NvrtcEnv& env, std::string* why) {
  static std::mutex mu;
  static NvrtcApi api;
  static bool loaded = false;
  std::lock_guard<std::mutex> lock(mu);
  if (loaded) return &api;
  std::string path;
  void* h = openNvrtc(env, &path);
  if (!h) {
    if (why)
      *why = "libnvrtc not found (set FXFUSE_NVRTC_PATH, put the CUDA toolkit's lib64 on LD_LIBRARY_PATH, "
             "or pip install nvidia-cuda-nvrtc)";
    return nullptr;
  }
  bool ok = bind(h, "nvrtcGetErrorString", &api.getErrorString) && bind(h, "nvrtcVersion", &api.version) &&
            bind(h, "nvrtcCreateProgram", &api.createProgram) &&
            bind(h, "nvrtcDestroyProgram", &api.destroyProgram) &&
            bind(h, "nvrtcCompileProgram", &api.compileProgram) &&
            bind(h, "nvrtcGetProgramLogSize", &api.getProgramLogSize) &&
            bind(h, "nvrtcGetProgramLog", &api.getProgramLog) && bind(h, "nvrtcGetPTXSize", &api.getPTXSize) &&
            bind(h, "nvrtcGetPTX", &api.getPTX) && bind(h, "nvrtcGetCUBINSize", &api.getCUBINSize) &&
            bind(h, "nvrtcGetCUBIN", &api.getCUBIN);
  if (!ok) {
    if (why) *why = path + " lacks an NVRTC entry point (nvrtcGetCUBIN needs CUDA 11.1+)";
    ::dlclose(h);
    return nullptr;
  }
  api.path = path;
  api.include_dir = findIncludeDir(env, path);
  loaded = true;
  return &api;
}

}  // namespace fxfuse::codegen
