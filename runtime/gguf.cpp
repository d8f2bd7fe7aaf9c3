// GgufFile accessors: type tables, typed metadata getters, tensor lookup and
// the mapping's lifetime. Parsing lives in gguf_parse.cpp.
#include "loom/runtime/gguf.hpp"

#include <sys/mman.h>

#include <cstring>
#include <limits>

#include "common/type_traits.h"

namespace loom {

const char* gguf_type_name(GgufType type) {
  switch (type) {
    case GgufType::kUint8: return "uint8";
    case GgufType::kInt8: return "int8";
    case GgufType::kUint16: return "uint16";
    case GgufType::kInt16: return "int16";
    case GgufType::kUint32: return "uint32";
    case GgufType::kInt32: return "int32";
    case GgufType::kFloat32: return "float32";
    case GgufType::kBool: return "bool";
    case GgufType::kString: return "string";
    case GgufType::kArray: return "array";
    case GgufType::kUint64: return "uint64";
    case GgufType::kInt64: return "int64";
    case GgufType::kFloat64: return "float64";
  }
  return "invalid";
}

size_t gguf_type_size(GgufType type) {
  switch (type) {
    case GgufType::kUint8: case GgufType::kInt8: case GgufType::kBool: return 1;
    case GgufType::kUint16: case GgufType::kInt16: return 2;
    case GgufType::kUint32: case GgufType::kInt32: case GgufType::kFloat32: return 4;
    case GgufType::kUint64: case GgufType::kInt64: case GgufType::kFloat64: return 8;
    case GgufType::kString: case GgufType::kArray: return 0;
  }
  return 0;
}

namespace {

template <typename T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));  // array data is packed, not aligned
  return v;
}

bool is_signed_int(GgufType t) {
  return t == GgufType::kInt8 || t == GgufType::kInt16 || t == GgufType::kInt32 || t == GgufType::kInt64;
}
bool is_unsigned_int(GgufType t) {
  return t == GgufType::kUint8 || t == GgufType::kUint16 || t == GgufType::kUint32 || t == GgufType::kUint64;
}

}  // namespace

// Tensor types are loom's (plugin.h ids equal GGUF's): one table for the
// reader, the runtime and every plugin (plugins/common/type_traits).
bool gguf_tensor_type_known(uint32_t type) {
  return type < static_cast<uint32_t>(LOOM_TYPE_COUNT) && common::type_is_valid(static_cast<int32_t>(type));
}
int64_t gguf_tensor_type_block_size(uint32_t type) {
  return gguf_tensor_type_known(type) ? common::type_traits(static_cast<int32_t>(type)).block_size : 0;
}
size_t gguf_tensor_type_size(uint32_t type) {
  return gguf_tensor_type_known(type) ? common::type_traits(static_cast<int32_t>(type)).type_size : 0;
}
const char* gguf_tensor_type_name(uint32_t type) {
  return gguf_tensor_type_known(type) ? common::type_traits(static_cast<int32_t>(type)).name : "unknown";
}

// ---------------------------------------------------------------- GgufValue

int64_t GgufValue::elem_int(uint64_t i) const {
  switch (elem_type_) {
    case GgufType::kInt8: return load<int8_t>(data_ + i);
    case GgufType::kInt16: return load<int16_t>(data_ + 2 * i);
    case GgufType::kInt32: return load<int32_t>(data_ + 4 * i);
    case GgufType::kInt64: return load<int64_t>(data_ + 8 * i);
    case GgufType::kUint8: case GgufType::kBool: return load<uint8_t>(data_ + i);
    case GgufType::kUint16: return load<uint16_t>(data_ + 2 * i);
    case GgufType::kUint32: return load<uint32_t>(data_ + 4 * i);
    case GgufType::kUint64: return static_cast<int64_t>(load<uint64_t>(data_ + 8 * i));
    default: return 0;
  }
}

uint64_t GgufValue::elem_uint(uint64_t i) const {
  if (elem_type_ == GgufType::kUint64) return load<uint64_t>(data_ + 8 * i);
  return static_cast<uint64_t>(elem_int(i));
}

double GgufValue::elem_float(uint64_t i) const {
  if (elem_type_ == GgufType::kFloat32) return load<float>(data_ + 4 * i);
  if (elem_type_ == GgufType::kFloat64) return load<double>(data_ + 8 * i);
  return static_cast<double>(elem_int(i));
}

// ----------------------------------------------------------------- GgufFile

GgufFile::GgufFile(GgufFile&& other) noexcept { *this = std::move(other); }

GgufFile& GgufFile::operator=(GgufFile&& other) noexcept {
  if (this == &other) return *this;
  release();
  name_ = std::move(other.name_);
  base_ = other.base_;
  size_ = other.size_;
  mapped_ = other.mapped_;
  version_ = other.version_;
  alignment_ = other.alignment_;
  data_offset_ = other.data_offset_;
  kvs_ = std::move(other.kvs_);
  kv_index_ = std::move(other.kv_index_);
  tensors_ = std::move(other.tensors_);
  tensor_index_ = std::move(other.tensor_index_);
  other.base_ = nullptr;
  other.size_ = 0;
  other.mapped_ = false;
  other.kvs_.clear();
  other.kv_index_.clear();
  other.tensors_.clear();
  other.tensor_index_.clear();
  return *this;
}

GgufFile::~GgufFile() { release(); }

void GgufFile::release() {
  if (mapped_ && base_ != nullptr) munmap(const_cast<uint8_t*>(base_), size_);
  base_ = nullptr;
  size_ = 0;
  mapped_ = false;
}

const GgufValue* GgufFile::find(std::string_view key) const {
  auto it = kv_index_.find(key);
  return it == kv_index_.end() ? nullptr : &kvs_[it->second].value;
}

Status GgufFile::type_error(std::string_view key, const char* expected, GgufType actual) const {
  std::string got = gguf_type_name(actual);
  if (actual == GgufType::kArray) {
    if (const GgufValue* v = find(key)) got = std::string("array of ") + gguf_type_name(v->elem_type());
  }
  return invalid_argument("[gguf.get] " + name_ + ": key '" + std::string(key) + "': expected " + expected +
                          ", got " + got);
}

StatusOr<const GgufValue*> GgufFile::lookup(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return not_found("[gguf.get] " + name_ + ": no key '" + std::string(key) + "'");
  return v;
}

// Exact-type scalar getters: the stored type must be exactly `gtype`.
#define LOOM_GGUF_GETTER(fn, ctype, gtype, field)                               \
  StatusOr<ctype> GgufFile::fn(std::string_view key) const {                  \
    LOOM_ASSIGN_OR_RETURN(const GgufValue* v, lookup(key));                    \
    if (v->type() != gtype) return type_error(key, gguf_type_name(gtype), v->type()); \
    return static_cast<ctype>(v->field);                                       \
  }
LOOM_GGUF_GETTER(get_u8, uint8_t, GgufType::kUint8, as_u64())
LOOM_GGUF_GETTER(get_i8, int8_t, GgufType::kInt8, as_i64())
LOOM_GGUF_GETTER(get_u16, uint16_t, GgufType::kUint16, as_u64())
LOOM_GGUF_GETTER(get_i16, int16_t, GgufType::kInt16, as_i64())
LOOM_GGUF_GETTER(get_u32, uint32_t, GgufType::kUint32, as_u64())
LOOM_GGUF_GETTER(get_i32, int32_t, GgufType::kInt32, as_i64())
LOOM_GGUF_GETTER(get_u64, uint64_t, GgufType::kUint64, as_u64())
LOOM_GGUF_GETTER(get_i64, int64_t, GgufType::kInt64, as_i64())
LOOM_GGUF_GETTER(get_f32, float, GgufType::kFloat32, as_f64())
LOOM_GGUF_GETTER(get_f64, double, GgufType::kFloat64, as_f64())
LOOM_GGUF_GETTER(get_bool, bool, GgufType::kBool, as_bool())
LOOM_GGUF_GETTER(get_str, std::string_view, GgufType::kString, as_str())
#undef LOOM_GGUF_GETTER

StatusOr<int64_t> GgufFile::get_int(std::string_view key) const {
  LOOM_ASSIGN_OR_RETURN(const GgufValue* v, lookup(key));
  if (is_signed_int(v->type())) return v->as_i64();
  if (is_unsigned_int(v->type())) {
    if (v->as_u64() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return invalid_argument("[gguf.get] " + name_ + ": key '" + std::string(key) + "': value " +
                              std::to_string(v->as_u64()) + " does not fit in int64");
    }
    return static_cast<int64_t>(v->as_u64());
  }
  return type_error(key, "an integer", v->type());
}

StatusOr<const GgufValue*> GgufFile::get_arr(std::string_view key) const {
  LOOM_ASSIGN_OR_RETURN(const GgufValue* v, lookup(key));
  if (v->type() != GgufType::kArray) return type_error(key, "array", v->type());
  return v;
}

StatusOr<std::vector<std::string_view>> GgufFile::get_arr_str(std::string_view key) const {
  LOOM_ASSIGN_OR_RETURN(const GgufValue* v, lookup(key));
  if (v->type() != GgufType::kArray || v->elem_type() != GgufType::kString) {
    return type_error(key, "array of string", v->type());
  }
  return v->strings();
}

StatusOr<std::vector<float>> GgufFile::get_arr_f32(std::string_view key) const {
  LOOM_ASSIGN_OR_RETURN(const GgufValue* v, lookup(key));
  if (v->type() != GgufType::kArray ||
      (v->elem_type() != GgufType::kFloat32 && v->elem_type() != GgufType::kFloat64)) {
    return type_error(key, "array of float32", v->type());
  }
  std::vector<float> out(v->size());
  for (uint64_t i = 0; i < v->size(); ++i) out[i] = static_cast<float>(v->elem_float(i));
  return out;
}

StatusOr<std::vector<int64_t>> GgufFile::get_arr_int(std::string_view key) const {
  LOOM_ASSIGN_OR_RETURN(const GgufValue* v, lookup(key));
  if (v->type() != GgufType::kArray || !(is_signed_int(v->elem_type()) || is_unsigned_int(v->elem_type()))) {
    return type_error(key, "array of integers", v->type());
  }
  std::vector<int64_t> out(v->size());
  for (uint64_t i = 0; i < v->size(); ++i) {
    if (v->elem_type() == GgufType::kUint64 &&
        v->elem_uint(i) > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return invalid_argument("[gguf.get] " + name_ + ": key '" + std::string(key) + "': element " +
                              std::to_string(i) + " = " + std::to_string(v->elem_uint(i)) +
                              " does not fit in int64");
    }
    out[i] = v->elem_int(i);
  }
  return out;
}

const GgufTensorInfo* GgufFile::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(std::string(name));
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

StatusOr<const GgufTensorInfo*> GgufFile::get_tensor(std::string_view name) const {
  const GgufTensorInfo* t = find_tensor(name);
  if (t == nullptr) return not_found("[gguf.tensor] " + name_ + ": no tensor '" + std::string(name) + "'");
  return t;
}

}  // namespace loom
