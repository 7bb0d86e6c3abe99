// The on-disk kernel cache: one file per compiled kernel, so that a new process (or a rebuilt
// model) skips NVRTC. Torch-free; the CUDA launcher keeps the in-memory layer above it.
//
// Entry: `<dir>/<key>.cubin`, key = 128-bit hash of (generated source, NVRTC version, arch).
// File = 64-byte header (magic, format version, payload size, payload checksum, key) + cubin.
// Writers write a private temp file in the same directory and rename() it over the entry:
// rename is atomic, so a reader sees a whole old entry, a whole new one, or none, whatever
// other processes do. A reader that finds a truncated or corrupt entry reports it; the caller
// recompiles and stores again, replacing it.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>

namespace fxfuse::runtime {

// 32 hex digits of FNV-1a-128 over the parts (each length-prefixed, so parts cannot collide
// by concatenation).
std::string cacheKey(const std::string& source, const std::string& nvrtcVersion,
                     const std::string& arch);
uint64_t fnv1a64(const void* data, size_t size);

// $FXFUSE_CACHE_DIR, else $XDG_CACHE_HOME/fxfuse, else $HOME/.cache/fxfuse.
std::string defaultCacheDir();

class DiskCache {
 public:
  enum class Lookup { Hit, Miss, Corrupt };

  // Where warnings go (the torch side routes them to TORCH_WARN); default: stderr.
  using WarnFn = std::function<void(const std::string&)>;
  explicit DiskCache(std::string dir, WarnFn warn = {});

  std::string directory() const;
  void setWarnHandler(WarnFn warn);
  // Switches directories and re-enables the cache (a later failure warns again).
  void setDirectory(std::string dir);
  // False once the directory proved unusable: the process then caches in memory only.
  bool readable() const;
  bool writable() const;

  Lookup load(const std::string& key, std::string* image);
  // True when the entry is on disk. On failure, warns once per directory and stops writing.
  bool store(const std::string& key, const std::string& image);

  std::string entryPath(const std::string& key) const;

  static constexpr size_t kHeaderBytes = 64;

 private:
  bool ensureDirectory();  // requires mutex_ held
  void disable(bool reads, const std::string& why);

  mutable std::mutex mutex_;
  std::string dir_;
  WarnFn warn_;
  bool checked_ = false;  // the directory was created/probed
  bool readable_ = true;
  bool writable_ = true;
};

// The process-wide cache, at defaultCacheDir() until setDirectory().
DiskCache& diskCache();

}  // namespace fxfuse::runtime
