// Tensors and the Context that owns them.
//
// A Tensor is the ABI's loom_tensor_t plus the Context it belongs to, so the
// runtime hands nodes to plugins without conversion. Tensors are created only
// through a Context (or the op builders in loom/ops.hpp), live as long as it,
// and never move. A Context is not thread-safe.
#pragma once

#include <cstdint>
#include <deque>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "loom/plugin.h"
#include "loom/runtime/status.hpp"

namespace loom {

class Context;

struct Tensor : loom_tensor_t {
  Context* ctx = nullptr;  // owner; set by Context
  // Who placed the tensor in a compute buffer (an Executor, a Scheduler):
  // expired once that owner or that buffer is gone, and data / buffer
  // dangle; forget_gone_placements (allocator.hpp) then clears them, so the
  // next runner places the tensor again. Empty for memory the caller gave.
  std::weak_ptr<const void> placed_by;

  int64_t nelements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
  int64_t nrows() const { return ne[1] * ne[2] * ne[3]; }
  // Bytes spanned from data to the last element (dense size when contiguous).
  size_t nbytes() const;
  // Row-major dense layout (nb[0] = element/block size, nb[i] = nb[i-1]*ne[i-1]).
  bool is_contiguous() const;
  bool is_view() const { return view_src != nullptr; }
  // The tensor that owns the memory (view_src chain resolved).
  Tensor* base() { return view_src ? static_cast<Tensor*>(view_src) : this; }
  Tensor* source(int i) const { return static_cast<Tensor*>(src[i]); }
  std::string_view name_view() const { return std::string_view(name); }
  void set_name(std::string_view n);
  // "name f32 [4, 3, 1, 1]" for messages.
  std::string describe() const;
  template <typename T>
  T param(int i) const;
  template <typename T>
  void set_param(int i, T v);
};

// Op-param accessors (float params stored bit-for-bit).
template <typename T>
T Tensor::param(int i) const {
  static_assert(sizeof(T) == 4, "op params are 4-byte slots");
  T v;
  __builtin_memcpy(&v, &op_params[i], 4);
  return v;
}
template <typename T>
void Tensor::set_param(int i, T v) {
  static_assert(sizeof(T) == 4, "op params are 4-byte slots");
  __builtin_memcpy(&op_params[i], &v, 4);
}

class Context {
 public:
  Context() = default;
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  // A new leaf tensor (op NONE, no data yet). dims: 1 to 4 extents, each >= 1
  // (ne[0] a multiple of the block size for quantized types).
  StatusOr<Tensor*> new_tensor(loom_type_t type, std::initializer_list<int64_t> dims,
                               std::string_view name = {});
  StatusOr<Tensor*> new_tensor(loom_type_t type, const std::vector<int64_t>& dims,
                               std::string_view name = {});

  // Views (no copy): share a's memory.
  // reshape: same element count, a must be contiguous.
  StatusOr<Tensor*> reshape(Tensor* a, std::initializer_list<int64_t> dims);
  // view with explicit extents, byte strides (nb[0] is implied) and byte offset;
  // the view must lie inside a's memory.
  StatusOr<Tensor*> view(Tensor* a, std::initializer_list<int64_t> dims,
                         std::initializer_list<size_t> strides, size_t offset);
  // permute: axes[i] is where source dim i goes (a permutation of 0..3).
  StatusOr<Tensor*> permute(Tensor* a, int ax0, int ax1, int ax2, int ax3);
  StatusOr<Tensor*> transpose(Tensor* a);

  // Low level, for op builders: a new node of `op` with the given sources and
  // result shape; dense strides. Sources must belong to this context.
  StatusOr<Tensor*> new_node(loom_op_t op, loom_type_t type, const int64_t ne[4],
                             std::initializer_list<Tensor*> srcs);

  size_t size() const { return tensors_.size(); }
  // Mark and undo: checkpoint() is the current tensor count; rollback(mark)
  // destroys every tensor made after it (later tensors only, so earlier ones
  // keep their addresses). Lets a model keep its weights in a context and
  // build a throw-away graph per step in the same context. The caller must
  // not use the destroyed tensors afterwards; rollback to a mark above
  // size() does nothing.
  size_t checkpoint() const { return tensors_.size(); }
  void rollback(size_t mark);
  Tensor* at(size_t i) { return &tensors_[i]; }
  Tensor* find(std::string_view name);
  // Whether t was made by this context.
  bool owns(const Tensor* t) const { return t != nullptr && t->ctx == this; }

 private:
  Tensor* make(loom_type_t type, const int64_t ne[4]);
  std::deque<Tensor> tensors_;
};

}  // namespace loom
