#include "common/mpi_wire.h"

#include <algorithm>
#include <cstring>

namespace loom::common::mpi {

const char* kind_name(uint32_t kind) {
  switch (static_cast<Kind>(kind)) {
    case Kind::kHello: return "hello";
    case Kind::kAlloc: return "alloc";
    case Kind::kFree: return "free";
    case Kind::kClear: return "clear";
    case Kind::kSet: return "set";
    case Kind::kGet: return "get";
    case Kind::kSupports: return "supports";
    case Kind::kGraph: return "graph";
    case Kind::kRun: return "run";
    case Kind::kShutdown: return "shutdown";
    case Kind::kLoadFile: return "load_file";
    case Kind::kBatch: return "batch";
    case Kind::kThreads: return "threads";
    case Kind::kCopies: return "copies";
    case Kind::kMemory: return "memory";
    case Kind::kReplyOk: return "ok";
    case Kind::kReplyError: return "error";
  }
  return "unknown";
}

WireHeader make_header(Kind kind, const std::string& loom_version) {
  WireHeader h{};
  h.magic = kWireMagic;
  h.protocol = kWireProtocol;
  h.kind = static_cast<uint32_t>(kind);
  std::strncpy(h.loom_version, loom_version.c_str(), kWireVersionLen - 1);
  return h;
}

std::string check_header(const WireHeader& h, const std::string& loom_version, int peer_rank) {
  const std::string who = "rank " + std::to_string(peer_rank);
  if (h.magic != kWireMagic) return "[mpi.wire] " + who + " sent a message that is not loom's (bad magic)";
  char theirs[kWireVersionLen + 1] = {};
  std::memcpy(theirs, h.loom_version, kWireVersionLen);
  const std::string mine = loom_version.substr(0, kWireVersionLen - 1);
  if (h.protocol != kWireProtocol || mine != theirs) {
    return "[mpi.wire] " + who + " runs loom " + theirs + " (protocol " + std::to_string(h.protocol) +
           "), this rank loom " + mine + " (protocol " + std::to_string(kWireProtocol) +
           "): every rank must run the same loom build";
  }
  return "";
}

Writer::Writer(Kind kind, const std::string& loom_version) {
  const WireHeader h = make_header(kind, loom_version);
  // Reserved first: GCC 12 takes the insert into an empty vector for an
  // overflow (-Wstringop-overflow, a known false positive).
  buf_.reserve(sizeof h + 256);
  raw(&h, sizeof h);
}

void Writer::raw(const void* p, size_t n) {
  const auto* b = static_cast<const uint8_t*>(p);
  buf_.insert(buf_.end(), b, b + n);
}

void Writer::str(const std::string& s) {
  u32(static_cast<uint32_t>(s.size()));
  raw(s.data(), s.size());
}

bool Reader::take(void* out, size_t n) {
  if (failed_ || n > n_ - pos_) {
    failed_ = true;
    std::memset(out, 0, n);
    return false;
  }
  std::memcpy(out, p_ + pos_, n);
  pos_ += n;
  return true;
}

uint32_t Reader::u32() {
  uint32_t v;
  take(&v, sizeof v);
  return v;
}
int32_t Reader::i32() {
  int32_t v;
  take(&v, sizeof v);
  return v;
}
uint64_t Reader::u64() {
  uint64_t v;
  take(&v, sizeof v);
  return v;
}
int64_t Reader::i64() {
  int64_t v;
  take(&v, sizeof v);
  return v;
}

std::string Reader::str(size_t max_len) {
  const uint32_t n = u32();
  if (failed_ || n > max_len || n > n_ - pos_) {
    failed_ = true;
    return "";
  }
  std::string s(reinterpret_cast<const char*>(p_ + pos_), n);
  pos_ += n;
  return s;
}

const uint8_t* Reader::bytes(size_t n) {
  if (failed_ || n > n_ - pos_) {
    failed_ = true;
    return nullptr;
  }
  const uint8_t* p = p_ + pos_;
  pos_ += n;
  return p;
}

void write_tensor(Writer& w, const WireTensor& t) {
  w.i32(t.type);
  w.i32(t.op);
  for (int64_t v : t.ne) w.i64(v);
  for (uint64_t v : t.nb) w.u64(v);
  for (int32_t v : t.op_params) w.i32(v);
  w.u32(t.flags);
  w.u64(t.buffer);
  w.u64(t.offset);
  for (int32_t v : t.src) w.i32(v);
  w.i32(t.view_src);
  w.u64(t.view_offset);
  w.str(t.name);
}

bool read_tensor(Reader& r, WireTensor* t) {
  t->type = r.i32();
  t->op = r.i32();
  for (int64_t& v : t->ne) v = r.i64();
  for (uint64_t& v : t->nb) v = r.u64();
  for (int32_t& v : t->op_params) v = r.i32();
  t->flags = r.u32();
  t->buffer = r.u64();
  t->offset = r.u64();
  for (int32_t& v : t->src) v = r.i32();
  t->view_src = r.i32();
  t->view_offset = r.u64();
  t->name = r.str(kWireTensorMaxName);
  return !r.failed();
}

void write_access(Writer& w, Access op, const WireTensor& t, uint64_t offset, uint64_t size, const void* bytes) {
  w.u32(static_cast<uint32_t>(op));
  write_tensor(w, t);
  w.u64(offset);
  w.u64(size);
  if (op == Access::kWrite) w.bytes(bytes, static_cast<size_t>(size));
}

bool read_access(Reader& r, WireAccess* a) {
  a->op = r.u32();
  if (!read_tensor(r, &a->tensor)) return false;
  a->offset = r.u64();
  a->size = r.u64();
  a->bytes = nullptr;
  if (r.failed()) return false;
  if (a->op == static_cast<uint32_t>(Access::kWrite)) {
    if (a->size > r.remaining()) return false;  // also keeps size_t casts exact
    a->bytes = r.bytes(static_cast<size_t>(a->size));
    return a->bytes != nullptr || a->size == 0;
  }
  return a->op == static_cast<uint32_t>(Access::kRead);
}

void write_copy(Writer& w, const WireCopy& c) {
  w.u32(c.op);
  w.i32(c.peer);
  w.u32(c.tag);
  w.u32(c.wait_ms);
  write_tensor(w, c.tensor);
  w.u64(c.offset);
  w.u64(c.size);
  if (c.op == static_cast<uint32_t>(CopyOp::kLocal)) write_tensor(w, c.src);
}

bool read_copy(Reader& r, WireCopy* c) {
  c->op = r.u32();
  c->peer = r.i32();
  c->tag = r.u32();
  c->wait_ms = r.u32();
  if (!read_tensor(r, &c->tensor)) return false;
  c->offset = r.u64();
  c->size = r.u64();
  if (r.failed() || c->op < static_cast<uint32_t>(CopyOp::kSend) || c->op > static_cast<uint32_t>(CopyOp::kLocal)) return false;
  return c->op != static_cast<uint32_t>(CopyOp::kLocal) || read_tensor(r, &c->src);
}

WireTensor wire_fields(const loom_tensor_t& t) {
  WireTensor w;
  w.type = t.type;
  w.op = t.op;
  for (int d = 0; d < LOOM_MAX_DIMS; ++d) {
    w.ne[d] = t.ne[d];
    w.nb[d] = t.nb[d];
  }
  std::memcpy(w.op_params, t.op_params, sizeof w.op_params);
  w.flags = t.flags;
  w.name = std::string(t.name, strnlen(t.name, LOOM_MAX_NAME - 1));
  return w;
}

void apply_fields(const WireTensor& w, loom_tensor_t* t) {
  t->type = w.type;
  t->op = w.op;
  for (int d = 0; d < LOOM_MAX_DIMS; ++d) {
    t->ne[d] = w.ne[d];
    t->nb[d] = static_cast<size_t>(w.nb[d]);
  }
  std::memcpy(t->op_params, w.op_params, sizeof w.op_params);
  t->flags = w.flags;
  std::memset(t->name, 0, sizeof t->name);
  std::memcpy(t->name, w.name.data(), std::min(w.name.size(), sizeof t->name - 1));
}

uint64_t wire_hash(const uint8_t* p, size_t n, uint64_t seed) {
  uint64_t h = seed;
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

}  // namespace loom::common::mpi
