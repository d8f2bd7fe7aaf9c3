// GGUF parsing and validation: turns image bytes into a GgufFile, checking
// every length, count and offset against the image size before it is used.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <string>

#include "loom/runtime/gguf.hpp"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the GGUF reader assumes a little-endian host"
#endif

namespace loom {

namespace {

// Smallest possible encodings, used to reject counts the remaining bytes
// cannot hold before anything is allocated for them.
constexpr uint64_t kMinKvBytes = 8 + 4 + 1;              // key length, type, 1-byte value
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 8 + 4 + 8;  // name length, n_dims, 1 dim, type, offset
constexpr uint64_t kMinArrayBytes = 4 + 8;               // element type, count

bool valid_value_type(uint32_t t) { return t <= static_cast<uint32_t>(GgufType::kFloat64); }

std::string quoted(std::string_view s) {
  // Keys and names come from the file: keep messages printable and short.
  std::string out = "'";
  size_t n = 0;
  for (char c : s) {
    if (++n > 80) {
      out += "...";
      break;
    }
    unsigned char u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f) {
      out += c;
    } else {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", u);
      out += buf;
    }
  }
  return out + "'";
}

std::string u64s(uint64_t v) { return std::to_string(v); }

// What a non-regular file is, for messages.
const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "a special file";
}

}  // namespace

// Reads one image front to back. Friend of GgufFile and GgufValue.
class GgufParser {
 public:
  GgufParser(const uint8_t* p, size_t n, const std::string& name) : p_(p), n_(n), name_(name) {}

  Status run(GgufFile* f);

 private:
  Status fail(const std::string& what) const {
    return invalid_argument("[gguf.open] " + name_ + ": " + what);
  }
  uint64_t left() const { return n_ - pos_; }
  // Fails unless `bytes` more bytes are available; `what` names the field.
  Status need(uint64_t bytes, const std::string& what) const {
    if (bytes > left()) {
      return fail("truncated: " + what + " at offset " + u64s(pos_) + " needs " + u64s(bytes) +
                  " bytes, " + u64s(left()) + " left (file is " + u64s(n_) + " bytes)");
    }
    return Status::Ok();
  }
  template <typename T>
  Status read(T* out, const std::string& what) {
    LOOM_RETURN_IF_ERROR(need(sizeof(T), what));
    std::memcpy(out, p_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return Status::Ok();
  }
  Status read_string(std::string_view* out, const std::string& what);
  Status read_value(uint32_t type, GgufValue* out, int depth, std::string_view key);
  Status read_array(GgufValue* out, int depth, std::string_view key);
  Status read_kvs(GgufFile* f, uint64_t kv_count);
  Status read_tensor_info(GgufTensorInfo* t, uint64_t index);
  Status place_tensors(GgufFile* f);

  const uint8_t* p_;
  uint64_t n_;
  const std::string& name_;
  uint64_t pos_ = 0;
};

Status GgufParser::read_string(std::string_view* out, const std::string& what) {
  uint64_t len = 0;
  LOOM_RETURN_IF_ERROR(read(&len, what + " length"));
  if (len > left()) {
    return fail(what + ": string length " + u64s(len) + " at offset " + u64s(pos_ - 8) +
                " past the end of the file (" + u64s(left()) + " bytes left, file is " + u64s(n_) +
                " bytes)");
  }
  *out = std::string_view(reinterpret_cast<const char*>(p_ + pos_), static_cast<size_t>(len));
  pos_ += len;
  return Status::Ok();
}

Status GgufParser::read_value(uint32_t type, GgufValue* out, int depth, std::string_view key) {
  const std::string ctx = "key " + quoted(key);
  if (!valid_value_type(type)) return fail(ctx + ": unknown value type " + u64s(type));
  out->type_ = static_cast<GgufType>(type);
  switch (out->type_) {
    case GgufType::kUint8: { uint8_t v{}; LOOM_RETURN_IF_ERROR(read(&v, ctx + " value")); out->u_ = v; break; }
    case GgufType::kInt8: { int8_t v{}; LOOM_RETURN_IF_ERROR(read(&v, ctx + " value")); out->i_ = v; break; }
    case GgufType::kUint16: { uint16_t v{}; LOOM_RETURN_IF_ERROR(read(&v, ctx + " value")); out->u_ = v; break; }
    case GgufType::kInt16: { int16_t v{}; LOOM_RETURN_IF_ERROR(read(&v, ctx + " value")); out->i_ = v; break; }
    case GgufType::kUint32: { uint32_t v{}; LOOM_RETURN_IF_ERROR(read(&v, ctx + " value")); out->u_ = v; break; }
    case GgufType::kInt32: { int32_t v{}; LOOM_RETURN_IF_ERROR(read(&v, ctx + " value")); out->i_ = v; break; }
    case GgufType::kUint64: { uint64_t v{}; LOOM_RETURN_IF_ERROR(read(&v, ctx + " value")); out->u_ = v; break; }
    case GgufType::kInt64: { int64_t v{}; LOOM_RETURN_IF_ERROR(read(&v, ctx + " value")); out->i_ = v; break; }
    case GgufType::kFloat32: { float v{}; LOOM_RETURN_IF_ERROR(read(&v, ctx + " value")); out->f_ = v; break; }
    case GgufType::kFloat64: { double v{}; LOOM_RETURN_IF_ERROR(read(&v, ctx + " value")); out->f_ = v; break; }
    case GgufType::kBool: { uint8_t v{}; LOOM_RETURN_IF_ERROR(read(&v, ctx + " value")); out->u_ = v != 0; break; }
    case GgufType::kString: return read_string(&out->str_, ctx + " value");
    case GgufType::kArray: return read_array(out, depth + 1, key);
  }
  return Status::Ok();
}

Status GgufParser::read_array(GgufValue* out, int depth, std::string_view key) {
  const std::string ctx = "key " + quoted(key);
  if (depth > kGgufMaxArrayDepth) {
    return fail(ctx + ": arrays nested deeper than " + std::to_string(kGgufMaxArrayDepth) + " levels");
  }
  uint32_t et = 0;
  uint64_t count = 0;
  LOOM_RETURN_IF_ERROR(read(&et, ctx + " array element type"));
  LOOM_RETURN_IF_ERROR(read(&count, ctx + " array length"));
  if (!valid_value_type(et)) return fail(ctx + ": array of unknown element type " + u64s(et));
  out->elem_type_ = static_cast<GgufType>(et);
  out->count_ = count;
  const uint64_t elem_min = out->elem_type_ == GgufType::kString  ? 8
                            : out->elem_type_ == GgufType::kArray ? kMinArrayBytes
                                                                  : gguf_type_size(out->elem_type_);
  // Every element needs at least elem_min bytes: this bounds count before any allocation.
  uint64_t min_bytes = 0;
  if (__builtin_mul_overflow(count, elem_min, &min_bytes) || min_bytes > left()) {
    return fail(ctx + ": array of " + u64s(count) + " " + gguf_type_name(out->elem_type_) +
                " elements at offset " + u64s(pos_) + " needs at least " +
                (min_bytes / elem_min == count ? u64s(min_bytes) : std::string("more than 2^64")) +
                " bytes, " + u64s(left()) + " left (file is " + u64s(n_) + " bytes)");
  }
  switch (out->elem_type_) {
    case GgufType::kString:
      // Grown as parsed: a claimed count only costs memory once its bytes are read.
      for (uint64_t i = 0; i < count; ++i) {
        std::string_view str;
        LOOM_RETURN_IF_ERROR(read_string(&str, ctx + " element " + u64s(i)));
        out->strs_.push_back(str);
      }
      break;
    case GgufType::kArray:
      // A GgufValue is ~10x its 12-byte minimum encoding: grow with the bytes
      // actually parsed rather than reserving for the claimed count.
      for (uint64_t i = 0; i < count; ++i) {
        GgufValue elem;
        LOOM_RETURN_IF_ERROR(read_value(static_cast<uint32_t>(GgufType::kArray), &elem, depth, key));
        out->elems_.push_back(std::move(elem));
      }
      break;
    default:
      out->data_ = p_ + pos_;
      pos_ += min_bytes;  // fixed-size elements: exactly count * size
      break;
  }
  return Status::Ok();
}

Status GgufParser::read_kvs(GgufFile* f, uint64_t kv_count) {
  // Grown as parsed (not resized to kv_count): a GgufKv is ~10x its minimum encoding.
  for (uint64_t i = 0; i < kv_count; ++i) {
    GgufKv kv;
    LOOM_RETURN_IF_ERROR(read_string(&kv.key, "key " + u64s(i)));
    uint32_t type = 0;
    LOOM_RETURN_IF_ERROR(read(&type, "key " + quoted(kv.key) + " value type"));
    LOOM_RETURN_IF_ERROR(read_value(type, &kv.value, 0, kv.key));
    if (!f->kv_index_.emplace(kv.key, i).second) {
      return fail("duplicate key " + quoted(kv.key) + " (entries " + u64s(f->kv_index_[kv.key]) + " and " +
                  u64s(i) + ")");
    }
    f->kvs_.push_back(std::move(kv));
  }
  return Status::Ok();
}

Status GgufParser::read_tensor_info(GgufTensorInfo* t, uint64_t index) {
  std::string_view name;
  LOOM_RETURN_IF_ERROR(read_string(&name, "tensor " + u64s(index) + " name"));
  const std::string ctx = "tensor " + quoted(name);
  if (name.size() >= LOOM_MAX_NAME) {
    return fail(ctx + ": name is " + u64s(name.size()) + " bytes, loom allows at most " +
                std::to_string(LOOM_MAX_NAME - 1));
  }
  t->name.assign(name.data(), name.size());
  LOOM_RETURN_IF_ERROR(read(&t->n_dims, ctx + " n_dims"));
  if (t->n_dims < 1 || t->n_dims > 4) {
    return fail(ctx + ": n_dims " + u64s(t->n_dims) + " outside 1..4");
  }
  for (uint32_t d = 0; d < t->n_dims; ++d) {
    uint64_t v = 0;
    LOOM_RETURN_IF_ERROR(read(&v, ctx + " dim " + u64s(d)));
    if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return fail(ctx + ": dim " + u64s(d) + " is " + u64s(v) + ", above INT64_MAX");
    }
    t->ne[d] = static_cast<int64_t>(v);
  }
  LOOM_RETURN_IF_ERROR(read(&t->type, ctx + " type"));
  LOOM_RETURN_IF_ERROR(read(&t->offset, ctx + " offset"));

  if (!gguf_tensor_type_known(t->type)) {
    return fail(ctx + ": unknown or unsupported tensor type id " + u64s(t->type) +
                " (loom reads f32, f16, bf16, q4_0, q8_0, i32, i64)");
  }
  int64_t n = 1;
  for (int d = 0; d < 4; ++d) {
    if (__builtin_mul_overflow(n, t->ne[d], &n)) {
      return fail(ctx + ": element count overflows: ne = [" + std::to_string(t->ne[0]) + ", " +
                  std::to_string(t->ne[1]) + ", " + std::to_string(t->ne[2]) + ", " +
                  std::to_string(t->ne[3]) + "]");
    }
  }
  const int64_t blk = gguf_tensor_type_block_size(t->type);
  if (t->ne[0] % blk != 0) {
    return fail(ctx + ": ne[0] = " + std::to_string(t->ne[0]) + " is not a multiple of the " +
                gguf_tensor_type_name(t->type) + " block size " + std::to_string(blk));
  }
  uint64_t bytes = static_cast<uint64_t>(t->ne[0] / blk);
  bool overflow = __builtin_mul_overflow(bytes, gguf_tensor_type_size(t->type), &bytes);
  for (int d = 1; d < 4; ++d) overflow |= __builtin_mul_overflow(bytes, static_cast<uint64_t>(t->ne[d]), &bytes);
  if (overflow) return fail(ctx + ": byte size overflows 64 bits");
  t->nbytes = bytes;
  return Status::Ok();
}

// Data section start and tensor ranges: only known once all infos are read.
Status GgufParser::place_tensors(GgufFile* f) {
  const uint64_t a = f->alignment_;
  uint64_t data_offset = 0;
  if (__builtin_add_overflow(pos_, a - 1, &data_offset)) return fail("data section offset overflows");
  data_offset -= data_offset % a;
  f->data_offset_ = data_offset;
  if (f->tensors_.empty()) return Status::Ok();
  if (data_offset > n_) {
    return fail("data section starts at " + u64s(data_offset) + " (tensor infos end at " + u64s(pos_) +
                ", alignment " + u64s(a) + "), past the end of the file (" + u64s(n_) + " bytes)");
  }
  for (GgufTensorInfo& t : f->tensors_) {
    const std::string ctx = "tensor " + quoted(t.name);
    if (t.offset % a != 0) {
      return fail(ctx + ": offset " + u64s(t.offset) + " is not a multiple of the alignment " + u64s(a));
    }
    uint64_t begin = 0, end = 0;
    if (__builtin_add_overflow(data_offset, t.offset, &begin) || __builtin_add_overflow(begin, t.nbytes, &end)) {
      return fail(ctx + " data [" + u64s(data_offset) + " + " + u64s(t.offset) + ", +" + u64s(t.nbytes) +
                  " bytes) overflows 64 bits, past the end of the file (" + u64s(n_) + " bytes)");
    }
    if (end > n_) {
      return fail(ctx + " data [" + u64s(begin) + ", " + u64s(end) + ") past the end of the file (" + u64s(n_) +
                  " bytes)");
    }
    t.data = p_ + begin;
  }
  return Status::Ok();
}

Status GgufParser::run(GgufFile* f) {
  char magic[4];
  LOOM_RETURN_IF_ERROR(read(&magic, "magic"));
  if (std::memcmp(magic, "GGUF", 4) != 0) {
    return fail("not a GGUF file: magic " + quoted(std::string_view(magic, 4)) + ", expected 'GGUF'");
  }
  LOOM_RETURN_IF_ERROR(read(&f->version_, "version"));
  if (f->version_ != 2 && f->version_ != 3) {
    std::string hint;
    if ((f->version_ & 0xffffu) == 0) hint = " (byte-swapped: a big-endian file?)";
    return fail("unsupported version " + u64s(f->version_) + hint + ", loom reads GGUF versions 2 and 3");
  }
  uint64_t tensor_count = 0, kv_count = 0;
  LOOM_RETURN_IF_ERROR(read(&tensor_count, "tensor count"));
  LOOM_RETURN_IF_ERROR(read(&kv_count, "metadata key count"));
  uint64_t kv_min = 0, ti_min = 0, all_min = 0;
  if (__builtin_mul_overflow(kv_count, kMinKvBytes, &kv_min) ||
      __builtin_mul_overflow(tensor_count, kMinTensorInfoBytes, &ti_min) ||
      __builtin_add_overflow(kv_min, ti_min, &all_min) || all_min > left()) {
    return fail("absurd counts: " + u64s(kv_count) + " metadata keys and " + u64s(tensor_count) +
                " tensors cannot fit in the " + u64s(left()) + " bytes after the header (file is " +
                u64s(n_) + " bytes)");
  }

  LOOM_RETURN_IF_ERROR(read_kvs(f, kv_count));
  if (const GgufValue* v = f->find("general.alignment")) {
    if (v->type() != GgufType::kUint32) {
      return fail(std::string("key 'general.alignment': expected uint32, got ") + gguf_type_name(v->type()));
    }
    const uint64_t a = v->as_u64();
    if (a == 0 || (a & (a - 1)) != 0) {
      return fail("key 'general.alignment': " + u64s(a) + " is not a power of two");
    }
    f->alignment_ = static_cast<uint32_t>(a);
  }

  // Grown as parsed (a GgufTensorInfo is ~3x its minimum encoding).
  for (uint64_t i = 0; i < tensor_count; ++i) {
    GgufTensorInfo t;
    LOOM_RETURN_IF_ERROR(read_tensor_info(&t, i));
    auto ins = f->tensor_index_.emplace(t.name, i);
    if (!ins.second) {
      return fail("duplicate tensor name " + quoted(t.name) + " (tensors " + u64s(ins.first->second) + " and " +
                  u64s(i) + ")");
    }
    f->tensors_.push_back(std::move(t));
  }
  return place_tensors(f);
}

StatusOr<GgufFile> GgufFile::parse(const void* data, size_t size, std::string name) {
  GgufFile f;
  f.name_ = std::move(name);
  // An empty image has no address to speak of; use a static byte so pointers stay non-null.
  static const uint8_t kEmpty = 0;
  f.base_ = data != nullptr ? static_cast<const uint8_t*>(data) : &kEmpty;
  f.size_ = data != nullptr ? size : 0;
  GgufParser parser(f.base_, f.size_, f.name_);
  LOOM_RETURN_IF_ERROR(parser.run(&f));
  return StatusOr<GgufFile>(std::move(f));
}

StatusOr<GgufFile> GgufFile::open(const std::string& path) {
  const std::string ctx = "[gguf.open] " + path + ": ";
  // Refuse FIFOs, devices and folders before open(): opening a FIFO blocks
  // until a writer appears, and /dev/zero would map endless zeros.
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    const int err = errno;
    std::string m = ctx + "cannot open: " + std::strerror(err);
    return err == ENOENT ? not_found(m) : invalid_argument(m);
  }
  if (!S_ISREG(st.st_mode)) return invalid_argument(ctx + "is " + file_kind(st.st_mode) + ", not a regular file");
  // O_NONBLOCK: should the path become a FIFO between stat and open, open
  // returns at once instead of waiting for a writer (the fstat below refuses it).
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    const int err = errno;
    std::string m = ctx + "cannot open: " + std::strerror(err);
    return err == ENOENT ? not_found(m) : invalid_argument(m);
  }
  if (fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return invalid_argument(ctx + "cannot stat: " + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return invalid_argument(ctx + "is " + file_kind(st.st_mode) + ", not a regular file");
  }
  if (st.st_size == 0) {
    ::close(fd);
    return invalid_argument(ctx + "empty file (0 bytes), not a GGUF file");
  }
  const size_t size = static_cast<size_t>(st.st_size);
  void* p = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  const int map_err = errno;
  ::close(fd);  // the mapping keeps its own reference to the file
  if (p == MAP_FAILED) {
    return resource_exhausted(ctx + "mmap of " + std::to_string(size) + " bytes failed: " + std::strerror(map_err));
  }
  GgufFile f;
  f.name_ = path;
  f.base_ = static_cast<const uint8_t*>(p);
  f.size_ = size;
  f.mapped_ = true;  // from here on the destructor unmaps, also on the error path below
  GgufParser parser(f.base_, f.size_, f.name_);
  LOOM_RETURN_IF_ERROR(parser.run(&f));
  return StatusOr<GgufFile>(std::move(f));
}

}  // namespace loom
