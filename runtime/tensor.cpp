#include "loom/runtime/tensor.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "loom/runtime/types.hpp"

namespace loom {
namespace {

std::string dims_str(const int64_t* ne, size_t n) {
  std::string s = "[";
  for (size_t i = 0; i < n; ++i) s += (i ? ", " : "") + std::to_string(ne[i]);
  return s + "]";
}

std::string strides_str(const size_t* nb) {
  std::string s = "[";
  for (int i = 0; i < LOOM_MAX_DIMS; ++i) s += (i ? ", " : "") + std::to_string(nb[i]);
  return s + "]";
}

// Validates type and extents of a new dense tensor (shared by leafs and nodes).
// `op` names the operation for the message.
Status check_shape(const char* op, int32_t type, const int64_t* ne, size_t n_dims) {
  if (!type_is_valid(type)) {
    return invalid_argument(std::string("[") + op + "] unknown type id " + std::to_string(type));
  }
  if (n_dims < 1 || n_dims > LOOM_MAX_DIMS) {
    return invalid_argument(std::string("[") + op + "] " + std::to_string(n_dims) +
                            " dims given, need 1 to 4");
  }
  for (size_t i = 0; i < n_dims; ++i) {
    if (ne[i] < 1) {
      return invalid_argument(std::string("[") + op + "] extent ne[" + std::to_string(i) + "] = " +
                              std::to_string(ne[i]) + " in " + dims_str(ne, n_dims) +
                              " must be >= 1");
    }
  }
  const int64_t blck = type_block_size(type);
  if (ne[0] % blck != 0) {
    return invalid_argument(std::string("[") + op + "] " + type_name(type) + " ne[0] = " +
                            std::to_string(ne[0]) + " is not a multiple of the block size " +
                            std::to_string(blck));
  }
  int64_t count = 1;
  for (size_t i = 0; i < n_dims; ++i) {
    if (__builtin_mul_overflow(count, ne[i], &count)) {
      return invalid_argument(std::string("[") + op + "] element count of " + dims_str(ne, n_dims) +
                              " overflows int64");
    }
  }
  // Bytes must fit in a size_t and stay below 2^62 so offsets never wrap.
  size_t bytes = 0;
  if (__builtin_mul_overflow(static_cast<size_t>(count / blck), type_size(type), &bytes) ||
      bytes > (size_t{1} << 62)) {
    return invalid_argument(std::string("[") + op + "] " + type_name(type) + " " +
                            dims_str(ne, n_dims) + " needs more than 2^62 bytes");
  }
  return Status();
}

void dense_strides(Tensor* t) {
  t->nb[0] = type_size(t->type);
  t->nb[1] = t->nb[0] * static_cast<size_t>(t->ne[0] / type_block_size(t->type));
  for (int i = 2; i < LOOM_MAX_DIMS; ++i) t->nb[i] = t->nb[i - 1] * static_cast<size_t>(t->ne[i - 1]);
}

// Makes t a view of a: shares a's base memory at a's offset plus `offset`.
void link_view(Tensor* t, Tensor* a, size_t offset) {
  Tensor* base = a->base();
  t->view_src = base;
  t->view_offset = a->view_offset + offset;
  t->src[0] = a;
  if (base->data) {
    t->data = static_cast<char*>(base->data) + t->view_offset;
    t->buffer = base->buffer;
  }
}

std::string derived_name(const Tensor* a, const char* what) {
  std::string n = a->name[0] ? std::string(a->name) : std::string("tensor");
  return n + " (" + what + ")";
}

Status check_source(const char* op, const Context* ctx, const Tensor* a) {
  if (!a) return invalid_argument(std::string("[") + op + "] source tensor is null");
  if (!ctx->owns(a)) {
    return invalid_argument(std::string("[") + op + "] source " + a->describe() +
                            " belongs to another context");
  }
  return Status();
}

}  // namespace

size_t Tensor::nbytes() const {
  for (int i = 0; i < LOOM_MAX_DIMS; ++i) {
    if (ne[i] <= 0) return 0;
  }
  const int64_t blck = type_block_size(type);
  if (blck <= 0) return 0;
  // Elements of dim 0 are blocks for quantized types; the rest step by nb.
  size_t bytes = static_cast<size_t>(ne[0] / blck) * nb[0];
  if (blck == 1) bytes = type_size(type) + static_cast<size_t>(ne[0] - 1) * nb[0];
  for (int i = 1; i < LOOM_MAX_DIMS; ++i) bytes += static_cast<size_t>(ne[i] - 1) * nb[i];
  return bytes;
}

bool Tensor::is_contiguous() const {
  if (!type_is_valid(type)) return false;
  if (nb[0] != type_size(type)) return false;
  size_t next = nb[0] * static_cast<size_t>(ne[0] / type_block_size(type));
  for (int i = 1; i < LOOM_MAX_DIMS; ++i) {
    // The stride of a unit dim never addresses anything, so it may be anything.
    if (ne[i] != 1 && nb[i] != next) return false;
    next *= static_cast<size_t>(ne[i]);
  }
  return true;
}

void Tensor::set_name(std::string_view n) {
  size_t len = std::min(n.size(), static_cast<size_t>(LOOM_MAX_NAME - 1));
  if (len > 0) std::memcpy(name, n.data(), len);  // an empty view may have a null data()
  name[len] = '\0';
}

std::string Tensor::describe() const {
  std::string n = name[0] ? std::string(name) : std::string("(unnamed)");
  return n + " " + type_name(type) + " " + dims_str(ne, LOOM_MAX_DIMS);
}

Tensor* Context::make(loom_type_t type, const int64_t ne[4]) {
  tensors_.emplace_back();
  Tensor* t = &tensors_.back();
  // Zero the C part explicitly: loom_tensor_t has no initialisers of its own.
  std::memset(static_cast<loom_tensor_t*>(t), 0, sizeof(loom_tensor_t));
  t->struct_size = sizeof(loom_tensor_t);
  t->type = type;
  t->op = LOOM_OP_NONE;
  for (int i = 0; i < LOOM_MAX_DIMS; ++i) t->ne[i] = ne[i];
  t->ctx = this;
  dense_strides(t);
  return t;
}

StatusOr<Tensor*> Context::new_tensor(loom_type_t type, std::initializer_list<int64_t> dims,
                                      std::string_view name) {
  return new_tensor(type, std::vector<int64_t>(dims), name);
}

StatusOr<Tensor*> Context::new_tensor(loom_type_t type, const std::vector<int64_t>& dims,
                                      std::string_view name) {
  LOOM_RETURN_IF_ERROR(check_shape("tensor.new", type, dims.data(), dims.size()));
  int64_t ne[4] = {1, 1, 1, 1};
  std::copy(dims.begin(), dims.end(), ne);
  Tensor* t = make(type, ne);
  t->set_name(name);
  return t;
}

StatusOr<Tensor*> Context::new_node(loom_op_t op, loom_type_t type, const int64_t ne[4],
                                    std::initializer_list<Tensor*> srcs) {
  std::string what = std::string("tensor.new_node ") + op_name(op);
  if (op <= LOOM_OP_NONE || op >= LOOM_OP_COUNT) {
    return invalid_argument("[tensor.new_node] op id " + std::to_string(static_cast<int>(op)) +
                            " is not an op (1 to " + std::to_string(LOOM_OP_COUNT - 1) + ")");
  }
  if (srcs.size() > LOOM_MAX_SRC) {
    return invalid_argument("[" + what + "] " + std::to_string(srcs.size()) + " sources, at most " +
                            std::to_string(LOOM_MAX_SRC));
  }
  for (Tensor* s : srcs) LOOM_RETURN_IF_ERROR(check_source(what.c_str(), this, s));
  LOOM_RETURN_IF_ERROR(check_shape(what.c_str(), type, ne, LOOM_MAX_DIMS));
  Tensor* t = make(type, ne);
  t->op = op;
  int i = 0;
  for (Tensor* s : srcs) t->src[i++] = s;
  std::string n = op_name(op);
  for (char& c : n) c = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;  // "mul_mat"
  t->set_name(n);
  return t;
}

StatusOr<Tensor*> Context::reshape(Tensor* a, std::initializer_list<int64_t> dims) {
  LOOM_RETURN_IF_ERROR(check_source("tensor.reshape", this, a));
  std::vector<int64_t> d(dims);
  LOOM_RETURN_IF_ERROR(check_shape("tensor.reshape", a->type, d.data(), d.size()));
  if (!a->is_contiguous()) {
    return invalid_argument("[tensor.reshape] " + a->describe() + " is not contiguous (nb " +
                            strides_str(a->nb) + "); make it contiguous with op::cont first");
  }
  int64_t ne[4] = {1, 1, 1, 1};
  std::copy(d.begin(), d.end(), ne);
  int64_t n = ne[0] * ne[1] * ne[2] * ne[3];
  if (n != a->nelements()) {
    return invalid_argument("[tensor.reshape] " + a->describe() + " has " +
                            std::to_string(a->nelements()) + " elements, the new shape " +
                            dims_str(d.data(), d.size()) + " has " + std::to_string(n));
  }
  Tensor* t = make(static_cast<loom_type_t>(a->type), ne);
  t->op = LOOM_OP_RESHAPE;
  link_view(t, a, 0);
  t->set_name(derived_name(a, "reshaped"));
  return t;
}

StatusOr<Tensor*> Context::view(Tensor* a, std::initializer_list<int64_t> dims,
                                std::initializer_list<size_t> strides, size_t offset) {
  LOOM_RETURN_IF_ERROR(check_source("tensor.view", this, a));
  std::vector<int64_t> d(dims);
  LOOM_RETURN_IF_ERROR(check_shape("tensor.view", a->type, d.data(), d.size()));
  // strides are nb[1..]: one per dim after the first; extra ones (up to nb[3])
  // apply to unit dims and are accepted so callers can always pass three.
  if (strides.size() + 1 < d.size() || strides.size() > LOOM_MAX_DIMS - 1) {
    return invalid_argument("[tensor.view] " + std::to_string(d.size()) + " dims need " +
                            std::to_string(d.size() - 1) + " to 3 strides (nb[1..]), got " +
                            std::to_string(strides.size()));
  }
  int64_t ne[4] = {1, 1, 1, 1};
  std::copy(d.begin(), d.end(), ne);
  Tensor* t = make(static_cast<loom_type_t>(a->type), ne);
  int i = 1;
  for (size_t s : strides) t->nb[i++] = s;
  // Unspecified strides of trailing unit dims stay dense after the given ones.
  for (; i < LOOM_MAX_DIMS; ++i) t->nb[i] = t->nb[i - 1] * static_cast<size_t>(t->ne[i - 1]);
  const size_t span = t->nbytes();
  const size_t avail = a->nbytes();
  if (offset > avail || span > avail - offset) {
    tensors_.pop_back();  // nothing refers to it yet
    return invalid_argument("[tensor.view] view " + dims_str(d.data(), d.size()) + " nb " +
                            strides_str(t->nb) + " at offset " + std::to_string(offset) +
                            " spans bytes [" + std::to_string(offset) + ", " +
                            std::to_string(offset + span) + ") outside " + a->describe() + " (" +
                            std::to_string(avail) + " bytes)");
  }
  t->op = LOOM_OP_VIEW;
  link_view(t, a, offset);
  t->set_name(derived_name(a, "view"));
  return t;
}

StatusOr<Tensor*> Context::permute(Tensor* a, int ax0, int ax1, int ax2, int ax3) {
  LOOM_RETURN_IF_ERROR(check_source("tensor.permute", this, a));
  const int axes[4] = {ax0, ax1, ax2, ax3};
  bool seen[4] = {false, false, false, false};
  for (int i = 0; i < 4; ++i) {
    if (axes[i] < 0 || axes[i] > 3 || seen[axes[i]]) {
      return invalid_argument("[tensor.permute] axes (" + std::to_string(ax0) + ", " +
                              std::to_string(ax1) + ", " + std::to_string(ax2) + ", " +
                              std::to_string(ax3) + ") are not a permutation of 0..3");
    }
    seen[axes[i]] = true;
  }
  if (type_is_quantized(a->type) && ax0 != 0) {
    return invalid_argument("[tensor.permute] cannot move dim 0 of quantized " + a->describe() +
                            " (its elements are packed in blocks)");
  }
  int64_t ne[4];
  size_t nb[4];
  for (int i = 0; i < 4; ++i) {
    ne[axes[i]] = a->ne[i];
    nb[axes[i]] = a->nb[i];
  }
  Tensor* t = make(static_cast<loom_type_t>(a->type), ne);
  for (int i = 0; i < 4; ++i) t->nb[i] = nb[i];
  t->op = LOOM_OP_PERMUTE;
  for (int i = 0; i < 4; ++i) t->op_params[i] = axes[i];
  link_view(t, a, 0);
  t->set_name(derived_name(a, "permuted"));
  return t;
}

StatusOr<Tensor*> Context::transpose(Tensor* a) {
  LOOM_RETURN_IF_ERROR(check_source("tensor.transpose", this, a));
  if (type_is_quantized(a->type)) {
    return invalid_argument("[tensor.transpose] cannot transpose quantized " + a->describe() +
                            " (its elements are packed in blocks)");
  }
  const int64_t ne[4] = {a->ne[1], a->ne[0], a->ne[2], a->ne[3]};
  Tensor* t = make(static_cast<loom_type_t>(a->type), ne);
  t->nb[0] = a->nb[1];
  t->nb[1] = a->nb[0];
  t->nb[2] = a->nb[2];
  t->nb[3] = a->nb[3];
  t->op = LOOM_OP_TRANSPOSE;
  link_view(t, a, 0);
  t->set_name(derived_name(a, "transposed"));
  return t;
}

void Context::rollback(size_t mark) {
  // pop_back on a deque never moves the remaining elements.
  while (tensors_.size() > mark) tensors_.pop_back();
}

Tensor* Context::find(std::string_view name) {
  for (Tensor& t : tensors_) {
    if (t.name_view() == name) return &t;
  }
  return nullptr;
}

}  // namespace loom
