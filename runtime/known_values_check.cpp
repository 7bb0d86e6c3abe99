// checkExpects: the facts of a spec's expect lines (docs/spec.md) checked against the op's inputs, each tensor
// read once and then remembered until it changes, so that the check costs a lookup per call.
#include "runtime/known_values_check.h"

#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <ATen/ATen.h>
#include <c10/core/TensorImpl.h>
#include <c10/core/UndefinedTensorImpl.h>
#include <c10/util/Exception.h>
#include <c10/util/intrusive_ptr.h>

#include "runtime/runtime_stats.h"

namespace fxfuse::runtime {
namespace {

using spec::Expect;

// A fact's identity: what a remembered tensor was checked against (a tensor may feed chains with different facts).
// Mixed word by word, per call and without allocating; kGroup is part of a kgroups fact only.
uint64_t factHash(const Expect& e, int kGroup) {
  uint64_t h = 0x9E3779B97F4A7C15ull;
  auto mix = [&h](uint64_t x) {
    h ^= x + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    h *= 0xff51afd7ed558ccdull;
  };
  mix(static_cast<uint64_t>(e.kind));
  mix(static_cast<uint64_t>(e.dtype));
  mix(e.kind == Expect::Kind::KGroups ? static_cast<uint64_t>(kGroup) : 0);
  mix(e.sizes.size());
  for (int64_t s : e.sizes) mix(static_cast<uint64_t>(s));
  mix(e.values.size());
  for (int64_t v : e.values) mix(static_cast<uint64_t>(v));
  return h;
}

// What a validated tensor looked like. The weak reference keeps the TensorImpl's memory (not its storage) from
// being freed, so no other tensor can come to have its address while the entry exists; the version counter moves
// with every in-place write (load_state_dict's copy_ too), and `t.data = other` or set_() change the data pointer,
// offset, sizes or strides.
struct Validated {
  c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl> impl;
  uint32_t version = 0;
  const void* data = nullptr;
  int64_t offset = 0;
  std::vector<int64_t> sizes, strides;
  at::ScalarType dtype = at::kInt;
  bool neg = false;

  explicit Validated(const at::Tensor& t, uint32_t v)
      : impl(t.getIntrusivePtr()), version(v), data(t.const_data_ptr()), offset(t.storage_offset()),
        sizes(t.sizes().vec()), strides(t.strides().vec()), dtype(t.scalar_type()), neg(t.is_neg()) {}

  bool matches(const at::Tensor& t, uint32_t v) const {
    return version == v && data == t.const_data_ptr() && offset == t.storage_offset() && dtype == t.scalar_type() &&
           neg == t.is_neg() && t.sizes() == c10::IntArrayRef(sizes) && t.strides() == c10::IntArrayRef(strides);
  }
};

struct Key {
  const c10::TensorImpl* impl;
  uint64_t fact;
  bool operator==(const Key& o) const { return impl == o.impl && fact == o.fact; }
};
struct KeyHash {
  size_t operator()(const Key& k) const noexcept {
    return std::hash<const void*>()(k.impl) ^ static_cast<size_t>(k.fact * 0x9E3779B97F4A7C15ull);
  }
};

struct Cache {
  std::mutex mutex;
  std::unordered_map<Key, Validated, KeyHash> map;
};

Cache& cache() {
  static auto* c = new Cache();  // leaked: ops may run during static destruction
  return *c;
}

// A model has a handful of such tensors per layer; past this many, the dead ones go, and if that is not enough
// (tensors made per call) all of them: they are read again at their next call.
constexpr size_t kMaxEntries = 4096;

bool remembered(const Key& key, const at::Tensor& t, uint32_t version) {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  auto it = c.map.find(key);
  return it != c.map.end() && it->second.matches(t, version);
}

void remember(const Key& key, Validated v) {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  if (c.map.size() >= kMaxEntries) {
    for (auto it = c.map.begin(); it != c.map.end();) it = it->second.impl.expired() ? c.map.erase(it) : std::next(it);
    if (c.map.size() >= kMaxEntries) c.map.clear();
  }
  c.map.insert_or_assign(key, std::move(v));
}

std::string listText(const std::vector<int64_t>& xs) {
  std::string out = "[";
  for (size_t i = 0; i < xs.size(); ++i) out += (i ? ", " : "") + std::to_string(xs[i]);
  return out + "]";
}

// "the group of each k, arange(K) // 128" / "the values [0, 4, ...] of a [1, 8] tensor"
std::string factText(const Expect& e, int kGroup) {
  if (e.kind == Expect::Kind::KGroups) return "the group of each k, arange(K) // " + std::to_string(kGroup);
  return "the values " + listText(e.values) + " of a " + listText(e.sizes) + " tensor";
}

// "5", or "[0, 3]" for an element of a tensor of several dims (row-major index `flat`).
std::string elementText(const std::vector<int64_t>& sizes, int64_t flat) {
  if (sizes.size() <= 1) return std::to_string(flat);
  std::vector<int64_t> index(sizes.size());
  for (size_t d = sizes.size(); d-- > 0;) {
    index[d] = flat % sizes[d];
    flat /= sizes[d];
  }
  return listText(index);
}

// Reads `t` (a copy on the CPU, as int64) and raises at its first element that differs from the fact.
void checkFact(const Expect& e, const at::Tensor& t, int kGroup, int64_t K) {
  const at::Tensor host =
      t.resolve_conj().resolve_neg().to(at::TensorOptions().device(at::kCPU).dtype(at::kLong)).contiguous();
  const int64_t* got = host.const_data_ptr<int64_t>();
  const int64_t n = host.numel();
  const bool groups = e.kind == Expect::Kind::KGroups;
  TORCH_INTERNAL_ASSERT(groups ? n == K : n == static_cast<int64_t>(e.values.size()),
                        "fxfuse: expect input ", e.slot, " of ", n, " elements passed checkInputs");
  for (int64_t i = 0; i < n; ++i) {
    const int64_t want = groups ? i / kGroup : e.values[static_cast<size_t>(i)];
    TORCH_CHECK(got[i] == want, "fxfuse::gemm_chain: input ", e.slot,
                " no longer holds what the chain was fused for (", factText(e, kGroup), "; element ",
                elementText(groups ? std::vector<int64_t>{n} : e.sizes, i), " is ", got[i], ", not ", want,
                "): re-run fxfuse.rewrite / recompile after changing it");
  }
}

}  // namespace

void checkExpects(const spec::ChainSpec& spec, at::TensorList inputs, int64_t K, CaptureQuery capturing) {
  for (const Expect& e : spec.expects) {
    TORCH_INTERNAL_ASSERT(e.slot >= 0 && static_cast<size_t>(e.slot) < inputs.size(), "fxfuse: expect slot ", e.slot,
                          " of ", inputs.size(), " inputs");
    const at::Tensor& t = inputs[e.slot];
    const c10::VariableVersion& counter = t.unsafeGetTensorImpl()->version_counter();
    // an inference tensor has no version counter: its in-place writes cannot be seen, so it is read every call
    const bool tracked = counter.enabled();
    const uint32_t version = tracked ? counter.current_version() : 0;
    const Key key{t.unsafeGetTensorImpl(), factHash(e, spec.kGroup)};
    if (tracked && remembered(key, t, version)) continue;
    TORCH_CHECK(!(capturing && capturing(t)), "fxfuse::gemm_chain: input ", e.slot, " (", factText(e, spec.kGroup),
                ", a fact the chain was fused for) is checked by reading it, which cannot be done while a CUDA "
                "graph is being captured: ",
                tracked ? "run the model once before capturing it (a tensor checked once is not read again until "
                          "it is written in place or replaced)"
                        : "it is an inference tensor (made under torch.inference_mode), whose in-place writes "
                          "PyTorch does not count, so it is read at every call; make it outside inference mode");
    if (!tracked) {
      TORCH_WARN_ONCE("fxfuse::gemm_chain: input ", e.slot, " is an inference tensor (made under "
                      "torch.inference_mode), whose in-place writes PyTorch does not count: the chain reads it at "
                      "every call to check what it was fused for (a copy to the CPU each time). Make it outside "
                      "inference mode to have it checked once.");
    }
    // the version and pointers as they were before the read: a write racing with it makes the entry stale
    Validated snapshot(t, version);
    checkFact(e, t, spec.kGroup, K);
    stats().expectReads++;
    if (tracked) remember(key, std::move(snapshot));
  }
}

}  // namespace fxfuse::runtime
