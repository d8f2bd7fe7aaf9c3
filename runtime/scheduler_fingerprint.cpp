// Structural fingerprint for plan reuse. Like Graph::fingerprint, but memory
// the scheduler placed itself counts as "none" (so computing the same graph
// twice, or a rebuilt one, gives the same value), and pins count.
#include <cstring>
#include <vector>

#include "scheduler_plan.hpp"

namespace loom::sched {
namespace {

// Mixes 64-bit words (multiply + xor-shift); fast, not cryptographic. This
// runs on every compute, so it hashes words, not bytes.
struct Hasher {
  uint64_t h = 0x9e3779b97f4a7c15ull;
  void word(uint64_t v) {
    h = (h ^ v) * 0xff51afd7ed558ccdull;
    h ^= h >> 29;
  }
  void bytes(const void* p, size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
      uint64_t w;
      std::memcpy(&w, b + i, 8);
      word(w);
    }
    if (i < n) {
      uint64_t w = 0;
      std::memcpy(&w, b + i, n - i);
      word(w ^ (static_cast<uint64_t>(n) << 56));
    }
  }
  template <typename T>
  void value(const T& v) {
    static_assert(sizeof(T) <= 8, "value() takes scalars");
    uint64_t w = 0;
    std::memcpy(&w, &v, sizeof(T));
    word(w);
  }
};

// Tensor pointer -> position, open addressing (the graph is fixed while it
// lives, so no erase).
class PtrIndex {
 public:
  explicit PtrIndex(size_t n) {
    size_t cap = 16;
    while (cap < 2 * n) cap <<= 1;
    keys_.assign(cap, nullptr);
    vals_.assign(cap, 0);
    mask_ = cap - 1;
  }
  void put(const void* k, int64_t v) {
    size_t i = slot(k);
    while (keys_[i] && keys_[i] != k) i = (i + 1) & mask_;
    keys_[i] = k;
    vals_[i] = v;
  }
  int64_t get(const void* k, int64_t missing) const {
    for (size_t i = slot(k); keys_[i]; i = (i + 1) & mask_) {
      if (keys_[i] == k) return vals_[i];
    }
    return missing;
  }

 private:
  size_t slot(const void* k) const {
    uint64_t x = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(k));
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return static_cast<size_t>(x) & mask_;
  }
  std::vector<const void*> keys_;
  std::vector<int64_t> vals_;
  size_t mask_ = 0;
};

}  // namespace

uint64_t fingerprint(const Graph& graph, const PinMap& pins, const OwnsBuffer& owns) {
  const auto& nodes = graph.nodes();
  const auto& leafs = graph.leafs();
  PtrIndex index(nodes.size() + leafs.size());
  for (size_t i = 0; i < leafs.size(); ++i) index.put(leafs[i], -static_cast<int64_t>(i) - 1);
  for (size_t i = 0; i < nodes.size(); ++i) index.put(nodes[i], static_cast<int64_t>(i));
  auto ref = [&](const loom_tensor_t* t) -> int64_t {
    return t ? index.get(t, INT64_MIN + 1) : INT64_MIN;
  };
  Hasher f;
  auto common = [&](const Tensor* t) {
    f.value(t->type);
    f.value(t->op);
    f.bytes(t->ne, sizeof(t->ne));
    f.bytes(t->nb, sizeof(t->nb));
    f.value(t->flags);
    // Where memory the application placed lives (its buffer, not its address).
    const bool placed = t->data != nullptr && !owns(t->buffer);
    f.value(static_cast<uint8_t>(placed));
    f.value(reinterpret_cast<uintptr_t>(placed ? t->buffer : nullptr));
  };
  f.value(static_cast<uint64_t>(leafs.size()));
  f.value(static_cast<uint64_t>(nodes.size()));
  for (const Tensor* t : leafs) common(t);
  for (const Tensor* t : nodes) {
    common(t);
    f.bytes(t->op_params, sizeof(t->op_params));
    for (int s = 0; s < LOOM_MAX_SRC; ++s) f.value(ref(t->src[s]));
    f.value(ref(t->view_src));
    f.value(static_cast<uint64_t>(t->view_offset));
    f.value(pinned_device(pins, t));
  }
  for (const Tensor* t : graph.outputs()) f.value(ref(t));
  return f.h;
}

}  // namespace loom::sched
