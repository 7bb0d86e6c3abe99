// The disk kernel cache: keys, round trips, and every way an entry or directory can be bad.
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <cstdlib>

#include "runtime/cuda_driver.h"
#include "runtime/kernel_cache.h"
#include "test_dir.h"

namespace fxfuse::runtime {
namespace {

namespace fs = std::filesystem;

class KernelCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::freshTestDir("fxfuse_cache_test_");
  }
  void TearDown() override {
    std::error_code ec;
    fs::permissions(dir_, fs::perms::owner_all, ec);
    fs::remove_all(dir_, ec);
  }
  DiskCache cache(std::vector<std::string>* warnings) {
    return DiskCache(dir_.string(), [warnings](const std::string& m) { warnings->push_back(m); });
  }
  fs::path dir_;
};

const std::string kKey = cacheKey("__global__ void k() {}", "13.0", "sm_90a");
const std::string kImage = std::string("\x7f" "ELF cubin bytes\0with a zero", 27);

TEST(CacheKey, StableAndSensitiveToEveryPart) {
  EXPECT_EQ(kKey.size(), 32u);
  EXPECT_EQ(kKey, cacheKey("__global__ void k() {}", "13.0", "sm_90a"));
  EXPECT_NE(kKey, cacheKey("__global__ void k() {} ", "13.0", "sm_90a"));
  EXPECT_NE(kKey, cacheKey("__global__ void k() {}", "13.1", "sm_90a"));
  EXPECT_NE(kKey, cacheKey("__global__ void k() {}", "13.0", "sm_90"));
  // Length prefixes: moving a character between parts changes the key.
  EXPECT_NE(cacheKey("ab", "c", "d"), cacheKey("a", "bc", "d"));
}

TEST_F(KernelCacheTest, MissThenStoreThenHit) {
  std::vector<std::string> warnings;
  DiskCache c = cache(&warnings);
  std::string image;
  EXPECT_EQ(c.load(kKey, &image), DiskCache::Lookup::Miss);
  ASSERT_TRUE(c.store(kKey, kImage));
  EXPECT_TRUE(fs::exists(c.entryPath(kKey)));
  ASSERT_EQ(c.load(kKey, &image), DiskCache::Lookup::Hit);
  EXPECT_EQ(image, kImage);
  EXPECT_TRUE(warnings.empty());
  // No temp files left behind.
  for (const auto& e : fs::directory_iterator(dir_))
    EXPECT_EQ(e.path().extension(), ".cubin") << e.path();
}

TEST_F(KernelCacheTest, TruncatedEntryIsCorruptAndRewritten) {
  std::vector<std::string> warnings;
  DiskCache c = cache(&warnings);
  ASSERT_TRUE(c.store(kKey, kImage));
  fs::resize_file(c.entryPath(kKey), DiskCache::kHeaderBytes + 5);
  std::string image;
  EXPECT_EQ(c.load(kKey, &image), DiskCache::Lookup::Corrupt);
  fs::resize_file(c.entryPath(kKey), 10);  // shorter than the header
  EXPECT_EQ(c.load(kKey, &image), DiskCache::Lookup::Corrupt);
  ASSERT_TRUE(c.store(kKey, kImage));
  ASSERT_EQ(c.load(kKey, &image), DiskCache::Lookup::Hit);
  EXPECT_EQ(image, kImage);
}

TEST_F(KernelCacheTest, FlippedByteIsCorrupt) {
  std::vector<std::string> warnings;
  DiskCache c = cache(&warnings);
  ASSERT_TRUE(c.store(kKey, kImage));
  {
    std::fstream f(c.entryPath(kKey), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(DiskCache::kHeaderBytes + 3);
    f.put('#');
  }
  std::string image;
  EXPECT_EQ(c.load(kKey, &image), DiskCache::Lookup::Corrupt);
}

TEST_F(KernelCacheTest, EntryUnderAnotherKeyIsCorrupt) {
  std::vector<std::string> warnings;
  DiskCache c = cache(&warnings);
  const std::string other = cacheKey("other", "13.0", "sm_90a");
  ASSERT_TRUE(c.store(other, kImage));
  fs::copy_file(c.entryPath(other), c.entryPath(kKey));
  std::string image;
  EXPECT_EQ(c.load(kKey, &image), DiskCache::Lookup::Corrupt);
}


TEST_F(KernelCacheTest, DirectoryThatIsAFileWarnsOnce) {
  std::ofstream(dir_.string()) << "not a directory";
  std::vector<std::string> warnings;
  DiskCache c = cache(&warnings);
  std::string image;
  EXPECT_EQ(c.load(kKey, &image), DiskCache::Lookup::Miss);
  EXPECT_FALSE(c.store(kKey, kImage));
  EXPECT_FALSE(c.store(kKey, kImage));
  EXPECT_FALSE(c.readable());
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("memory only"), std::string::npos) << warnings[0];
  // the reason is create_directories', not the "Success" is_directory left in a shared error code
  EXPECT_EQ(warnings[0].find("Success"), std::string::npos) << warnings[0];
  fs::remove(dir_);
}

// An entry that cannot be read (a directory in its place here; EIO on a failing disk takes the same path)
// is a corrupt entry, which the caller recompiles; std::ifstream had thrown out of load(), and every call
// of the op raised. Storing over it fails for that entry alone: later entries are still written.
TEST_F(KernelCacheTest, UnreadableEntryIsCorruptAndBlocksOnlyItself) {
  std::vector<std::string> warnings;
  DiskCache c = cache(&warnings);
  std::string image;
  ASSERT_EQ(c.load(kKey, &image), DiskCache::Lookup::Miss);  // makes the directory
  fs::create_directories(c.entryPath(kKey) + "/inside");
  EXPECT_EQ(c.load(kKey, &image), DiskCache::Lookup::Corrupt);
  EXPECT_FALSE(c.store(kKey, kImage));
  const std::string other = cacheKey("other", "13.0", "sm_90a");
  EXPECT_TRUE(c.store(other, kImage));
  ASSERT_EQ(c.load(other, &image), DiskCache::Lookup::Hit);
  EXPECT_TRUE(warnings.empty()) << warnings[0];
}

TEST_F(KernelCacheTest, ReadOnlyDirectoryStillReadsAndWarnsOnce) {
  if (::geteuid() == 0) GTEST_SKIP() << "root writes to read-only directories";
  std::vector<std::string> warnings;
  {
    DiskCache writer = cache(&warnings);
    ASSERT_TRUE(writer.store(kKey, kImage));
  }
  fs::permissions(dir_, fs::perms::owner_read | fs::perms::owner_exec);
  DiskCache c = cache(&warnings);
  std::string image;
  EXPECT_EQ(c.load(kKey, &image), DiskCache::Lookup::Hit);
  EXPECT_FALSE(c.store(cacheKey("x", "13.0", "sm_90a"), kImage));
  EXPECT_FALSE(c.store(cacheKey("y", "13.0", "sm_90a"), kImage));
  EXPECT_EQ(warnings.size(), 1u);
}

TEST_F(KernelCacheTest, SetDirectoryReEnables) {
  std::ofstream(dir_.string()) << "not a directory";
  std::vector<std::string> warnings;
  DiskCache c = cache(&warnings);
  EXPECT_FALSE(c.store(kKey, kImage));
  fs::remove(dir_);
  c.setDirectory(dir_.string());
  EXPECT_TRUE(c.store(kKey, kImage));
  EXPECT_TRUE(c.writable());
}

TEST_F(KernelCacheTest, ConcurrentWritersNeverLeaveAPartialEntry) {
  std::vector<std::string> warnings;
  DiskCache c = cache(&warnings);
  const std::string big(1 << 20, 'x');
  std::vector<std::thread> threads;
  std::atomic<int> badReads{0};
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10; ++i) {
        c.store(kKey, big + std::to_string(t));
        std::string image;
        const auto r = c.load(kKey, &image);
        if (r != DiskCache::Lookup::Hit || image.size() != big.size() + 1) badReads++;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(badReads.load(), 0);
}

TEST(DefaultCacheDir, EnvironmentOrder) {
  // the variables are put back after: later tests in this process look for NVRTC under HOME
  struct RestoreEnv {
    std::string name;
    bool had;
    std::string value;
    explicit RestoreEnv(const char* n) : name(n), had(std::getenv(n) != nullptr), value(had ? std::getenv(n) : "") {}
    ~RestoreEnv() { had ? ::setenv(name.c_str(), value.c_str(), 1) : ::unsetenv(name.c_str()); }
  } home("HOME"), xdg("XDG_CACHE_HOME"), fx("FXFUSE_CACHE_DIR");
  ::setenv("FXFUSE_CACHE_DIR", "/x/fx", 1);
  EXPECT_EQ(defaultCacheDir(), "/x/fx");
  ::unsetenv("FXFUSE_CACHE_DIR");
  ::setenv("XDG_CACHE_HOME", "/x/xdg", 1);
  EXPECT_EQ(defaultCacheDir(), "/x/xdg/fxfuse");
  ::unsetenv("XDG_CACHE_HOME");
  ::setenv("HOME", "/x/home", 1);
  EXPECT_EQ(defaultCacheDir(), "/x/home/.cache/fxfuse");
}

TEST(CudaDriver, MissingDriverIsReportedNotThrown) {
  std::string why;
  const CudaDriver* d = loadCudaDriver(&why);
  if (d) GTEST_SKIP() << "a CUDA driver is present: " << d->path;
  EXPECT_FALSE(why.empty());
}

}  // namespace
}  // namespace fxfuse::runtime
