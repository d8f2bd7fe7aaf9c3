// Rounding of sizes and offsets to an alignment, for host and plugins alike.
#pragma once

#include <cstddef>

namespace loom::common {

// v rounded up to a multiple of a (a > 0; any a, not only powers of two).
constexpr size_t align_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

}  // namespace loom::common
