// Byte offsets in one buffer, handed out and taken back while a memory plan
// is made: a sorted free list (best fit, neighbours merged) below `top`;
// blocks freed at the top lower it again, and peak() is the buffer size the
// plan needs. Internal to libloom (runtime: the graph allocator and the
// scheduler's per-device memory plan). Not thread-safe; a plain value.
#pragma once

#include <cstddef>
#include <vector>

namespace loom {

class FreeList {
 public:
  // Offset of a block of `size` bytes (callers align sizes themselves).
  size_t alloc(size_t size);
  // Give back a block that alloc returned; it may be merged with neighbours.
  void free(size_t offset, size_t size);
  // The highest end any block has had.
  size_t peak() const { return peak_; }

 private:
  struct Block {
    size_t offset;
    size_t size;
  };
  std::vector<Block> blocks_;  // free blocks below top_, sorted by offset
  size_t top_ = 0;
  size_t peak_ = 0;
};

}  // namespace loom
