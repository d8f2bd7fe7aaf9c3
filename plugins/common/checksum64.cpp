#include "common/checksum64.h"

#include <cstring>

namespace loom::common {

uint64_t checksum64(const void* p, size_t n) {
  const auto* b = static_cast<const uint8_t*>(p);
  uint64_t h = kChecksum64Basis;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, b + i, 8);  // every supported host is little-endian (the wire says so too)
    h = (h ^ w) * kChecksum64Prime;
  }
  for (; i < n; ++i) h = (h ^ b[i]) * kChecksum64Prime;
  return (h ^ static_cast<uint64_t>(n)) * kChecksum64Prime;
}

}  // namespace loom::common
