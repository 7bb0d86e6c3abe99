#include "runtime/kernel_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

namespace fxfuse::runtime {
namespace {

constexpr char kMagic[8] = {'F', 'X', 'F', 'C', 'U', 'B', 'I', 'N'};
constexpr uint32_t kFormatVersion = 1;

struct Header {
  char magic[8];
  uint32_t version;
  uint32_t reserved;
  uint64_t payloadSize;
  uint64_t checksum;
  char key[32];
};
static_assert(sizeof(Header) == DiskCache::kHeaderBytes, "cache entry header layout");

std::string envOr(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : "";
}

std::string hex(uint64_t hi, uint64_t lo) {
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(hi),
                static_cast<unsigned long long>(lo));
  return buf;
}

bool writeAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

// The whole file, or false on a read error (EIO on a failing disk, EISDIR for an entry that is a directory),
// where std::ifstream's iterators threw out of load() instead of reporting a corrupt entry (hunt B, session 53).
bool readAll(int fd, std::string* out) {
  char buf[1 << 16];
  for (;;) {
    const ssize_t r = ::read(fd, buf, sizeof buf);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return false;
    if (r == 0) return true;
    out->append(buf, static_cast<size_t>(r));
  }
}

}  // namespace

uint64_t fnv1a64(const void* data, size_t size) {
  uint64_t h = 0xcbf29ce484222325ull;
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

std::string cacheKey(const std::string& source, const std::string& nvrtcVersion,
                     const std::string& arch) {
  // FNV-1a with the 128-bit parameters (prime 2^88 + 2^8 + 0x3b).
  unsigned __int128 h = (static_cast<unsigned __int128>(0x6c62272e07bb0142ull) << 64) |
                        0x62b821756295c58dull;
  const unsigned __int128 prime = (static_cast<unsigned __int128>(1) << 88) | 0x13b;
  auto feed = [&](const std::string& s) {
    const std::string part = std::to_string(s.size()) + ":" + s;
    for (unsigned char c : part) h = (h ^ c) * prime;
  };
  feed("fxfuse-cubin-v" + std::to_string(kFormatVersion));
  feed(source);
  feed(nvrtcVersion);
  feed(arch);
  return hex(static_cast<uint64_t>(h >> 64), static_cast<uint64_t>(h));
}

std::string defaultCacheDir() {
  if (std::string d = envOr("FXFUSE_CACHE_DIR"); !d.empty()) return d;
  if (std::string d = envOr("XDG_CACHE_HOME"); !d.empty()) return d + "/fxfuse";
  if (std::string d = envOr("HOME"); !d.empty()) return d + "/.cache/fxfuse";
  return "/tmp/fxfuse-cache-" + std::to_string(::getuid());
}

DiskCache::DiskCache(std::string dir, WarnFn warn) : dir_(std::move(dir)), warn_(std::move(warn)) {
  if (!warn_) warn_ = [](const std::string& m) { std::fprintf(stderr, "fxfuse: %s\n", m.c_str()); };
}

std::string DiskCache::directory() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return dir_;
}

void DiskCache::setWarnHandler(WarnFn warn) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (warn) warn_ = std::move(warn);
}

void DiskCache::setDirectory(std::string dir) {
  std::lock_guard<std::mutex> lock(mutex_);
  dir_ = std::move(dir);
  checked_ = false;
  readable_ = writable_ = true;
}

bool DiskCache::readable() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return readable_;
}

bool DiskCache::writable() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return writable_;
}

std::string DiskCache::entryPath(const std::string& key) const {
  return directory() + "/" + key + ".cubin";
}

void DiskCache::disable(bool reads, const std::string& why) {
  const bool wasEnabled = writable_ && (!reads || readable_);
  writable_ = false;
  if (reads) readable_ = false;
  if (wasEnabled)
    warn_("kernel cache directory " + dir_ + " " + why +
          (reads ? "; caching compiled kernels in memory only"
                 : "; not writing new entries (existing ones are still read)") +
          ". Set FXFUSE_CACHE_DIR or fxfuse._C.set_cache_dir() to a writable directory.");
}

bool DiskCache::ensureDirectory() {
  if (checked_) return readable_;
  checked_ = true;
  std::error_code created, checked;
  std::filesystem::create_directories(dir_, created);
  if (!std::filesystem::is_directory(dir_, checked)) {
    // is_directory clears its own code: the reason is create_directories' (a file of that name: File exists)
    disable(/*reads=*/true, "cannot be created (" + (created ? created : checked).message() + ")");
    return false;
  }
  if (::access(dir_.c_str(), W_OK) != 0) disable(/*reads=*/false, "is read-only");
  return true;
}

DiskCache::Lookup DiskCache::load(const std::string& key, std::string* image) {
  std::string path;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!ensureDirectory()) return Lookup::Miss;
    path = dir_ + "/" + key + ".cubin";
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Lookup::Miss;
  std::string bytes;
  const bool read = readAll(fd, &bytes);
  ::close(fd);
  if (!read || bytes.size() < kHeaderBytes) return Lookup::Corrupt;
  Header h;
  std::memcpy(&h, bytes.data(), sizeof h);
  if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0 || h.version != kFormatVersion ||
      std::memcmp(h.key, key.data(), std::min(key.size(), sizeof h.key)) != 0 ||
      h.payloadSize != bytes.size() - kHeaderBytes ||
      h.checksum != fnv1a64(bytes.data() + kHeaderBytes, h.payloadSize))
    return Lookup::Corrupt;
  image->assign(bytes, kHeaderBytes, std::string::npos);
  return Lookup::Hit;
}

bool DiskCache::store(const std::string& key, const std::string& image) {
  std::string dir;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!ensureDirectory() || !writable_) return false;
    dir = dir_;
  }
  Header h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.version = kFormatVersion;
  h.payloadSize = image.size();
  h.checksum = fnv1a64(image.data(), image.size());
  std::memcpy(h.key, key.data(), std::min(key.size(), sizeof h.key));

  // Unique per process and thread: no two writers ever share a temp file.
  static std::atomic<uint64_t> counter{0};
  const std::string tmp = dir + "/." + key + "." + std::to_string(::getpid()) + "." +
                          std::to_string(std::hash<std::thread::id>()(std::this_thread::get_id())) +
                          "." + std::to_string(counter++) + ".tmp";
  const std::string path = dir + "/" + key + ".cubin";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  bool ok = fd >= 0;
  bool entryBlocked = false;
  const int openErrno = errno;
  if (ok) {
    ok = writeAll(fd, reinterpret_cast<const char*>(&h), sizeof h) &&
         writeAll(fd, image.data(), image.size()) && ::fsync(fd) == 0;
    ok = (::close(fd) == 0) && ok;
    if (ok && ::rename(tmp.c_str(), path.c_str()) != 0) {
      // the entry's own path is taken by a directory: this entry only, the directory is writable
      entryBlocked = errno == EISDIR || errno == ENOTEMPTY || errno == EEXIST;
      ok = false;
    }
    if (!ok) ::unlink(tmp.c_str());
  }
  if (!ok && !entryBlocked) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (dir == dir_)
      disable(/*reads=*/false, std::string("is not writable (") +
                                   std::strerror(fd >= 0 ? errno : openErrno) + ")");
  }
  return ok;
}

DiskCache& diskCache() {
  static auto* cache = new DiskCache(defaultCacheDir());  // leaked, like the other caches
  return *cache;
}

}  // namespace fxfuse::runtime
