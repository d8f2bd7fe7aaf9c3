// GGUF model files (versions 2 and 3): metadata key/values and tensor infos.
//
// A GgufFile is a validated, read-only view of one GGUF image. open() maps the
// file read-only (mmap), so tensor data can be handed to devices straight from
// the page cache with no host copy; parse() reads an image the caller already
// has in memory (tests, the fuzzer) without taking ownership of it.
//
// Everything the parser checks happens up front: once open()/parse() returns a
// GgufFile, every string, array and tensor range it exposes lies inside the
// image. Errors are statuses "[gguf.open] <file>: <what>: <values>"; bad input
// never aborts, crashes or makes the parser allocate more than the image size
// justifies.
//
// Lifetime: string_views, array data and tensor data pointers handed out point
// into the image. They stay valid while the GgufFile that made them is alive
// (moving the GgufFile keeps them valid; the mapping does not move). For
// parse(), the caller's buffer must also outlive the GgufFile.
// Thread-safety: a GgufFile is immutable after construction; concurrent const
// calls are safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "loom/plugin.h"
#include "loom/runtime/status.hpp"

namespace loom {

// Metadata value types; the values are GGUF's on-disk ids.
enum class GgufType : uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};

// "uint8", ..., "float64"; "invalid" for an id outside the enum.
const char* gguf_type_name(GgufType type);
// Bytes of one element of a scalar type; 0 for STRING, ARRAY and invalid ids.
size_t gguf_type_size(GgufType type);

// Element types a GGUF tensor may have in loom (a subset of ggml's), with
// their block layout. Returns false for ids loom does not know.
bool gguf_tensor_type_known(uint32_t type);
int64_t gguf_tensor_type_block_size(uint32_t type);  // elements per block, 0 if unknown
size_t gguf_tensor_type_size(uint32_t type);         // bytes per block, 0 if unknown
const char* gguf_tensor_type_name(uint32_t type);    // "f32", ..., "unknown"

// Nested arrays deeper than this are rejected (arrays of arrays of ...).
constexpr int kGgufMaxArrayDepth = 8;
constexpr uint32_t kGgufDefaultAlignment = 32;

// One metadata value. Scalars are held decoded; strings are views into the
// image; arrays of scalars keep a pointer to their packed little-endian
// elements (read them with the GgufFile array getters or elem_*()), arrays of
// strings are indexed as views, arrays of arrays hold their elements.
class GgufValue {
 public:
  GgufType type() const { return type_; }

  // Scalars (valid for the matching type() only; the file getters check).
  uint64_t as_u64() const { return u_; }    // all unsigned integer types
  int64_t as_i64() const { return i_; }     // all signed integer types
  double as_f64() const { return f_; }      // FLOAT32 and FLOAT64
  bool as_bool() const { return u_ != 0; }  // BOOL
  std::string_view as_str() const { return str_; }  // STRING

  // Arrays.
  GgufType elem_type() const { return elem_type_; }
  uint64_t size() const { return count_; }
  // Element i of a scalar array as an integer / float (caller checks i < size()
  // and the element type). Unaligned-safe.
  int64_t elem_int(uint64_t i) const;
  uint64_t elem_uint(uint64_t i) const;
  double elem_float(uint64_t i) const;
  const std::vector<std::string_view>& strings() const { return strs_; }  // STRING arrays
  const std::vector<GgufValue>& arrays() const { return elems_; }         // ARRAY arrays
  const uint8_t* raw_data() const { return data_; }                      // scalar arrays

 private:
  friend class GgufParser;
  GgufType type_ = GgufType::kUint8;
  uint64_t u_ = 0;
  int64_t i_ = 0;
  double f_ = 0;
  std::string_view str_;
  GgufType elem_type_ = GgufType::kUint8;
  uint64_t count_ = 0;
  const uint8_t* data_ = nullptr;
  std::vector<std::string_view> strs_;
  std::vector<GgufValue> elems_;
};

struct GgufKv {
  std::string_view key;  // into the image
  GgufValue value;
};

struct GgufTensorInfo {
  std::string name;
  uint32_t type = 0;                 // loom_type_t value (== GGUF's ggml_type id)
  uint32_t n_dims = 0;               // 1..4 as stored
  int64_t ne[4] = {1, 1, 1, 1};      // extents, ne[0] innermost; unused dims are 1
  uint64_t offset = 0;               // byte offset relative to the data section
  uint64_t nbytes = 0;               // bytes of data
  const void* data = nullptr;        // into the image; valid while the GgufFile lives
  int64_t n_elements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
};

class GgufFile {
 public:
  // Map `path` read-only and parse it. The mapping is released by the
  // destructor. NOT_FOUND when the file does not exist. Like any mmap reader,
  // a file truncated by another process while mapped faults (SIGBUS) on access.
  static StatusOr<GgufFile> open(const std::string& path);
  // Parse an image in memory; does not copy or own `data`, which must outlive
  // the result. `name` stands for the file in error messages.
  static StatusOr<GgufFile> parse(const void* data, size_t size, std::string name = "<memory>");

  GgufFile(GgufFile&& other) noexcept;
  GgufFile& operator=(GgufFile&& other) noexcept;
  GgufFile(const GgufFile&) = delete;
  GgufFile& operator=(const GgufFile&) = delete;
  ~GgufFile();

  const std::string& name() const { return name_; }
  uint32_t version() const { return version_; }
  uint32_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }  // start of the data section in the image
  const uint8_t* image() const { return base_; }
  size_t image_size() const { return size_; }
  bool is_mapped() const { return mapped_; }

  // ---- metadata
  const std::vector<GgufKv>& kvs() const { return kvs_; }
  bool has(std::string_view key) const { return find(key) != nullptr; }
  const GgufValue* find(std::string_view key) const;  // nullptr when absent

  // Typed getters: NOT_FOUND when the key is absent, INVALID_ARGUMENT naming
  // the key, the expected and the actual type when the type differs.
  StatusOr<uint8_t> get_u8(std::string_view key) const;
  StatusOr<int8_t> get_i8(std::string_view key) const;
  StatusOr<uint16_t> get_u16(std::string_view key) const;
  StatusOr<int16_t> get_i16(std::string_view key) const;
  StatusOr<uint32_t> get_u32(std::string_view key) const;
  StatusOr<int32_t> get_i32(std::string_view key) const;
  StatusOr<uint64_t> get_u64(std::string_view key) const;
  StatusOr<int64_t> get_i64(std::string_view key) const;
  StatusOr<float> get_f32(std::string_view key) const;
  StatusOr<double> get_f64(std::string_view key) const;
  StatusOr<bool> get_bool(std::string_view key) const;
  StatusOr<std::string_view> get_str(std::string_view key) const;
  // Any integer type (writers disagree on uint32 vs int32 for the same key);
  // uint64 values above INT64_MAX are an error.
  StatusOr<int64_t> get_int(std::string_view key) const;

  // Arrays. get_arr_int accepts any integer element type, get_arr_f32 FLOAT32
  // (and FLOAT64, narrowed). Wrong type → INVALID_ARGUMENT naming key and types.
  StatusOr<const GgufValue*> get_arr(std::string_view key) const;
  StatusOr<std::vector<std::string_view>> get_arr_str(std::string_view key) const;
  StatusOr<std::vector<float>> get_arr_f32(std::string_view key) const;
  StatusOr<std::vector<int64_t>> get_arr_int(std::string_view key) const;

  // ---- tensors, in file order
  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  const GgufTensorInfo* find_tensor(std::string_view name) const;  // nullptr when absent
  StatusOr<const GgufTensorInfo*> get_tensor(std::string_view name) const;

 private:
  friend class GgufParser;
  GgufFile() = default;
  void release();
  Status type_error(std::string_view key, const char* expected, GgufType actual) const;
  StatusOr<const GgufValue*> lookup(std::string_view key) const;

  std::string name_;
  const uint8_t* base_ = nullptr;
  size_t size_ = 0;
  bool mapped_ = false;  // base_ came from mmap and is unmapped by the destructor
  uint32_t version_ = 0;
  uint32_t alignment_ = kGgufDefaultAlignment;
  uint64_t data_offset_ = 0;
  std::vector<GgufKv> kvs_;
  std::unordered_map<std::string_view, size_t> kv_index_;  // keys view the image
  std::vector<GgufTensorInfo> tensors_;
  std::unordered_map<std::string, size_t> tensor_index_;
};

}  // namespace loom
