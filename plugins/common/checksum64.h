// The 64-bit checksum of bytes that a loader computes over a file's slice
// and a device recomputes over what it read (the `loom.file_load` extension,
// docs/plugin-abi.md): fast, well defined, not cryptographic. It detects a
// different or changed file, not an attacker.
//
// Definition: FNV-1a 64 (offset basis 0xcbf29ce484222325, prime
// 0x100000001b3) over the bytes taken as little-endian 64-bit words, one
// word per step (h = (h ^ word) * prime), then the remaining n % 8 bytes one
// per step (h = (h ^ byte) * prime), then one last step over n itself as a
// word (so a zero tail of another length differs). Word steps make it about
// eight times faster than byte-wise FNV-1a; tests/mpi pins known values.
#pragma once

#include <cstddef>
#include <cstdint>

namespace loom::common {

constexpr uint64_t kChecksum64Basis = 0xcbf29ce484222325ull;
constexpr uint64_t kChecksum64Prime = 0x100000001b3ull;

// The checksum of [p, p + n) (n == 0: a value for the empty slice; p may be
// null then). Thread-safe, no state.
uint64_t checksum64(const void* p, size_t n);

}  // namespace loom::common
