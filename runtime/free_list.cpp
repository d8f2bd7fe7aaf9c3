#include "runtime/free_list.hpp"

#include <algorithm>

namespace loom {

size_t FreeList::alloc(size_t size) {
  size_t best = blocks_.size();
  for (size_t i = 0; i < blocks_.size(); ++i) {
    if (blocks_[i].size >= size && (best == blocks_.size() || blocks_[i].size < blocks_[best].size)) {
      best = i;
    }
  }
  if (best == blocks_.size()) {
    size_t off = top_;
    top_ += size;
    peak_ = std::max(peak_, top_);
    return off;
  }
  size_t off = blocks_[best].offset;
  blocks_[best].offset += size;
  blocks_[best].size -= size;
  if (blocks_[best].size == 0) blocks_.erase(blocks_.begin() + static_cast<std::ptrdiff_t>(best));
  return off;
}

void FreeList::free(size_t offset, size_t size) {
  auto it = std::lower_bound(blocks_.begin(), blocks_.end(), offset,
                             [](const Block& b, size_t off) { return b.offset < off; });
  it = blocks_.insert(it, Block{offset, size});
  // Merge with the next block, then with the previous one.
  auto next = it + 1;
  if (next != blocks_.end() && it->offset + it->size == next->offset) {
    it->size += next->size;
    blocks_.erase(next);
  }
  if (it != blocks_.begin()) {
    auto prev = it - 1;
    if (prev->offset + prev->size == it->offset) {
      prev->size += it->size;
      it = blocks_.erase(it) - 1;
    }
  }
  // A free block that ends at the top lowers it.
  if (it->offset + it->size == top_) {
    top_ = it->offset;
    blocks_.erase(it);
  }
}

}  // namespace loom
