// A fast 64-bit hash over words (multiply + xor-shift), not cryptographic:
// graph and plan fingerprints run on every compute, so they hash words,
// not bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace loom {

struct WordHash {
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

}  // namespace loom
