// What `loom worker` does with one request: decode it, check every field
// (sizes, offsets, buffer and tensor ids, op parameters through the op
// table's rules) and act on this rank's devices through the registry. No
// MPI here: a request is bytes in and a reply is bytes out, so a malformed
// message is answered with an error reply (never a crash) and the whole
// validation is unit tested without mpirun (tests/mpi). The MPI loop around
// it is worker_loop.cpp. Not thread-safe: one request at a time.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/mpi_wire.h"
#include "loom/registry/registry.hpp"
#include "loom/runtime/status.hpp"
#include "loom/runtime/tensor.hpp"
#include "worker/path_map.hpp"
#include "worker/peer_link.hpp"
#include "worker/tensor_decode.hpp"

namespace loom::cli::worker {

class WorkerServer {
 public:
  // devices: borrowed (the registry outlives the server); rank: this
  // process's rank, for messages.
  WorkerServer(std::vector<registry::Device*> devices, std::string loom_version, int rank, std::string host);
  ~WorkerServer();

  // Answer one message from rank 0 (header included) into *reply. Returns
  // false once the message was a shutdown (the reply is still written).
  bool handle(const uint8_t* msg, size_t n, std::vector<uint8_t>* reply);

  // Where this rank finds the files rank 0 names (load_file requests):
  // LOOM_MPI_PATH_MAP's value. A malformed spec is kept as the error every
  // load_file answers (rank 0 then streams the weights, with a warning).
  void set_path_map(const std::string& spec);

  // How rank to rank copies reach the other workers (borrowed, outlives the
  // server); without one, copies requests are refused.
  void set_peer_link(PeerLink* link) { link_ = link; }

  // Load_file requests answered so far, and the bytes they read.
  uint64_t files_loaded() const { return files_loaded_; }
  uint64_t file_bytes_loaded() const { return file_bytes_loaded_; }

  // Cached graphs (the bound keeps a worker's memory flat when shapes keep
  // changing; rank 0 keeps a copy of the cache by the same rule,
  // wire::kWireMaxGraphs, and sends a dropped graph again before its run).
  size_t cached_graphs() const { return graphs_.size(); }
  static constexpr size_t kMaxGraphs = common::mpi::kWireMaxGraphs;

 private:
  struct Allocation {
    uint32_t device = 0;
    Buffer buffer;
  };
  struct CachedGraph {
    uint32_t device = 0;
    std::vector<Tensor> tensors;  // sized once: nodes and sources point into it
    std::vector<loom_tensor_t*> nodes;
  };

  Status dispatch(uint32_t kind, const uint8_t* p, size_t n, std::vector<uint8_t>* reply);
  Status hello(std::vector<uint8_t>* reply);
  Status alloc(const uint8_t* p, size_t n, std::vector<uint8_t>* reply);
  Status free_buffer(const uint8_t* p, size_t n);
  Status clear(const uint8_t* p, size_t n);
  Status set_tensor(const uint8_t* p, size_t n);
  Status get_tensor(const uint8_t* p, size_t n, std::vector<uint8_t>* reply);
  Status supports(const uint8_t* p, size_t n, std::vector<uint8_t>* reply);
  Status graph(const uint8_t* p, size_t n);
  Status run(const uint8_t* p, size_t n, std::vector<uint8_t>* reply);
  Status load_file(const uint8_t* p, size_t n);  // worker_file_load.cpp
  // worker_batch.cpp: a stream's queued writes and reads (batch, and the
  // writes a run carries), each checked like a single set/get before any
  // is done; loom.threads of a device and its memory now.
  struct QueuedAccess {
    uint32_t op = 0;  // wire::Access
    Tensor tensor{};
    uint64_t offset = 0, size = 0;
    const uint8_t* bytes = nullptr;  // a write's bytes, inside the request
  };
  Status decode_accesses(common::mpi::Reader& r, const char* what, bool reads_allowed, std::vector<QueuedAccess>* out);
  Status apply_accesses(const char* what, const std::vector<QueuedAccess>& items, std::vector<uint8_t>* reply);
  Status batch(const uint8_t* p, size_t n, std::vector<uint8_t>* reply);
  Status threads(const uint8_t* p, size_t n, std::vector<uint8_t>* reply);
  Status memory(const uint8_t* p, size_t n, std::vector<uint8_t>* reply);  // a device's memory now
  // worker_copy.cpp: rank to rank copies (sends, receives) and copies
  // between two buffers of this rank, all checked before any moves.
  struct CopyItem;
  Status copies(const uint8_t* p, size_t n);
  Status check_copy(CopyItem* c);
  void settle(const std::vector<CopyItem>& items);  // tell the other sides of refused items
  Status run_copies(std::vector<CopyItem>* items);
  // Placement of a tensor by buffer id: any of this worker's buffers, or
  // (device >= 0) only those on that device.
  BufferLookup buffer_lookup(int64_t device = -1);

  StatusOr<registry::Device*> device(uint32_t index) const;
  StatusOr<Allocation*> allocation(uint64_t id);
  Stream* stream(uint32_t device);

  std::vector<registry::Device*> devices_;
  std::string loom_version_;
  int rank_;
  std::string host_;
  uint64_t next_id_ = 1;
  std::map<uint64_t, Allocation> buffers_;
  std::map<uint64_t, std::unique_ptr<CachedGraph>> graphs_;
  std::map<uint32_t, Stream> streams_;
  PeerLink* link_ = nullptr;
  PathMap path_map_;
  Status path_map_error_;
  uint64_t files_loaded_ = 0;
  uint64_t file_bytes_loaded_ = 0;

  friend class GraphDecoder;
};

}  // namespace loom::cli::worker
