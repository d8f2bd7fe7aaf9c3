// The message layer between rank 0 (plugins/mpi, the client) and the ranks
// >= 1 that run `loom worker` (tools/loom/worker, the server): a versioned
// header, the request kinds, and bounds-checked writers and readers of their
// fields. No MPI here: these are plain bytes, so the same code is linked by
// the plugin and by the loom command, and the worker's validation is unit
// tested without mpirun. docs/distributed.md has the protocol on one page.
//
// Every message is one MPI message on tag kMpiTag: a WireHeader, then the
// kind's fields in order (little-endian host layout: every rank of a job runs
// the same build on the same architecture, which the header's loom version
// and size checks enforce). Not thread-safe per object; no global state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "loom/plugin.h"

namespace loom::common::mpi {

constexpr uint32_t kWireMagic = 0x4d4d4f4cu;  // "LOMM" read little-endian
constexpr uint32_t kWireProtocol = 6;         // bumped on any change of the fields below (2: load_file, supports answers a cost;
                                              // 3: batch, run carries queued writes, threads; 4: copies; 5: memory;
                                              // 6: runs posted, the graph cache's rule below is the protocol's)
// A worker keeps at most this many graphs (all its devices together): a
// graph message that finds it full clears it first, then keeps its graph.
// Rank 0 applies the same rule to a copy of each worker's cache, so it knows
// without asking whether a run will find its graph, and posts runs.
constexpr size_t kWireMaxGraphs = 64;
constexpr int kMpiTag = 0x1f00;               // the one tag of rank 0's requests and the workers' replies
// Rank to rank copies move their bytes between two workers on a tag of their
// own, kMpiCopyTagBase + (a copy's number mod kMpiCopyTags): below 32767, the
// least MPI_TAG_UB MPI allows, and never kMpiTag.
constexpr int kMpiCopyTagBase = 0x2000;
constexpr int kMpiCopyTags = 0x4000;
constexpr size_t kWireVersionLen = 16;        // the loom version string, NUL-padded

// Request kinds (rank 0 -> worker) and the two reply kinds (worker -> rank 0).
enum class Kind : uint32_t {
  kHello = 1,     // -> the worker's devices (names, memory, caps, alignment)
  kAlloc = 2,     // device, size -> buffer id
  kFree = 3,      // buffer id
  kClear = 4,     // buffer id, value
  kSet = 5,       // buffer id, tensor, offset, size, bytes
  kGet = 6,       // buffer id, tensor, offset, size -> bytes
  kSupports = 7,  // device, node and its sources -> bool, the device's estimate in us (f64, < 0: none)
  kGraph = 8,     // device, key, graph -> cached under key
  kRun = 9,       // device, key, the stream's queued writes (accesses) -> the writes done, then the cached graph computed
  kShutdown = 10, // -> ok, then the worker leaves its loop
  kLoadFile = 11, // buffer id, tensor, path, file offset, size, checksum64 -> the worker reads the bytes
  kBatch = 12,    // a stream's queued writes and reads (accesses), in order -> the reads' bytes, concatenated
  kThreads = 13,  // device, n (>= 1: set it; 0: only ask) -> the device's thread count (loom.threads)
  kCopies = 14,   // rank to rank copies (u32 count, WireCopy items: send, receive or local) -> ok once all moved
  kMemory = 15,   // device -> its memory now: total, free (u64 each; what its get_props says at this moment)
  kReplyOk = 100,
  kReplyError = 101,  // status code + message
};
const char* kind_name(uint32_t kind);

struct WireHeader {
  uint32_t magic;
  uint32_t protocol;
  uint32_t kind;
  uint32_t reserved;
  char loom_version[kWireVersionLen];
};
static_assert(sizeof(WireHeader) == 32, "the wire header is 32 bytes");

// The header of a message of `kind` from this build (`loom_version` cut to
// 15 bytes).
WireHeader make_header(Kind kind, const std::string& loom_version);
// "" when h comes from a peer that speaks this protocol and this loom
// version, else why not, naming both sides:
// "[mpi.wire] rank 1 runs loom 0.3.0 (protocol 1), this rank loom 0.4.0 (protocol 1)".
std::string check_header(const WireHeader& h, const std::string& loom_version, int peer_rank);

// Append-only message builder.
class Writer {
 public:
  Writer(Kind kind, const std::string& loom_version);
  void u32(uint32_t v) { raw(&v, sizeof v); }
  void i32(int32_t v) { raw(&v, sizeof v); }
  void u64(uint64_t v) { raw(&v, sizeof v); }
  void i64(int64_t v) { raw(&v, sizeof v); }
  void str(const std::string& s);  // u32 length + bytes
  void bytes(const void* p, size_t n) { raw(p, n); }
  const std::vector<uint8_t>& data() const { return buf_; }
  std::vector<uint8_t>& data() { return buf_; }

 private:
  void raw(const void* p, size_t n);
  std::vector<uint8_t> buf_;
};

// Reader over a received message's payload (after the header). Every read
// past the end sets failed() and yields zeros, so a short message is one
// check at the end, never an out-of-bounds read.
class Reader {
 public:
  Reader(const uint8_t* p, size_t n) : p_(p), n_(n) {}
  uint32_t u32();
  int32_t i32();
  uint64_t u64();
  int64_t i64();
  std::string str(size_t max_len);
  // A pointer to the next n bytes (nullptr and failed() when fewer remain).
  const uint8_t* bytes(size_t n);
  bool failed() const { return failed_; }
  size_t remaining() const { return n_ - pos_; }

 private:
  bool take(void* out, size_t n);
  const uint8_t* p_;
  size_t n_;
  size_t pos_ = 0;
  bool failed_ = false;
};

// One tensor of a request: its fields, where it lives (buffer id, byte
// offset of data from the buffer's base; buffer 0 = none) and, inside a
// graph, the indices of its sources and view base among the tensors sent
// before it (-1 = none).
struct WireTensor {
  int32_t type = 0;
  int32_t op = 0;
  int64_t ne[LOOM_MAX_DIMS] = {1, 1, 1, 1};
  uint64_t nb[LOOM_MAX_DIMS] = {0, 0, 0, 0};
  int32_t op_params[LOOM_MAX_OP_PARAMS] = {};
  uint32_t flags = 0;
  uint64_t buffer = 0;
  uint64_t offset = 0;
  int32_t src[LOOM_MAX_SRC] = {-1, -1, -1, -1};
  int32_t view_src = -1;
  uint64_t view_offset = 0;
  std::string name;
};
constexpr size_t kWireTensorMaxName = LOOM_MAX_NAME - 1;
// Most tensors one graph or supports request may carry (a 512-layer model's
// forward step stays far below; a length past it is a malformed message).
constexpr uint32_t kWireMaxTensors = 1u << 20;

void write_tensor(Writer& w, const WireTensor& t);
// false when the message ends early or the name is too long.
bool read_tensor(Reader& r, WireTensor* t);

// The fields of t that make a WireTensor (sources, view base, buffer and
// offset are the caller's: they depend on what else is sent).
WireTensor wire_fields(const loom_tensor_t& t);
// The reverse: t's type, op, ne, nb, params, flags and name (sources, view
// base, data and buffer are the caller's).
void apply_fields(const WireTensor& w, loom_tensor_t* t);

// One queued host<->tensor copy of a remote stream: an item of a batch, or a
// write carried by a run. On the wire: op, the tensor (placed: buffer id and
// offset), offset and size in it, and for a write its `size` bytes. Sent as
// u32 count, then the items; the worker checks every item (as a single set
// or get) before it acts on any.
enum class Access : uint32_t { kWrite = 1, kRead = 2 };
struct WireAccess {
  uint32_t op = 0;  // Access
  WireTensor tensor;
  uint64_t offset = 0;
  uint64_t size = 0;
  const uint8_t* bytes = nullptr;  // a write's bytes, inside the message being read
};
// Most items one message may carry, and most bytes its reads may ask for
// (rank 0 flushes long before either; past them the message is malformed).
constexpr uint32_t kWireMaxAccesses = 1u << 16;
constexpr uint64_t kWireMaxReadBytes = uint64_t{1} << 30;

void write_access(Writer& w, Access op, const WireTensor& t, uint64_t offset, uint64_t size, const void* bytes);
// false when the message ends early (a write's bytes included), the name is
// too long or the op is neither write nor read.
bool read_access(Reader& r, WireAccess* a);

// One item of a copies request: a side of a rank to rank copy (send on the
// source rank, receive on the destination) or a copy between two buffers of
// the worker (local). For send/receive: the other rank, the copy's tag, how
// long the worker waits for the other side (ms), and the bytes [offset,
// offset + size) of a placed tensor; for local: peer, tag and wait 0, then
// the destination tensor and, after size, the source tensor (the same
// offset and size in both). Rank 0 sends both sides of a copy before it
// waits for either reply, and lists a rank's items in the order of the
// copies, so the two workers meet their items in one order.
enum class CopyOp : uint32_t { kSend = 1, kRecv = 2, kLocal = 3 };
struct WireCopy {
  uint32_t op = 0;  // CopyOp
  int32_t peer = 0;
  uint32_t tag = 0;
  uint32_t wait_ms = 0;
  WireTensor tensor;
  uint64_t offset = 0;
  uint64_t size = 0;
  WireTensor src;  // local only
};
// Most bytes one item moves (rank 0 cuts larger copies), the longest wait
// it may ask for, and the most items one request may carry.
constexpr uint64_t kWireMaxCopyBytes = uint64_t{64} << 20;
constexpr uint32_t kWireMaxCopyWaitMs = 24u * 3600u * 1000u;
constexpr uint32_t kWireMaxCopies = 1u << 12;

void write_copy(Writer& w, const WireCopy& c);
// false when the message ends early, a name is too long or the op is not
// one of CopyOp.
bool read_copy(Reader& r, WireCopy* c);

// FNV-1a over bytes: the key of a serialised graph and of a supports query.
uint64_t wire_hash(const uint8_t* p, size_t n, uint64_t seed = 1469598103934665603ull);

}  // namespace loom::common::mpi
