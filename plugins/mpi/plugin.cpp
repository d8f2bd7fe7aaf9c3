// The mpi plugin's entry: on rank 0 of an MPI job it shows every device of
// every other rank as a device of its own ("r1.cpu", ...). The loom command
// initialises MPI before any registry loads (tools/loom/worker/mpi_session);
// this plugin never does, so a probe child or a process outside mpirun finds
// it unavailable with the reason.
#include <mpi.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "common/env.h"
#include "common/glue.h"
#include "common/plugin_entry.h"
#include "device.h"
#include "loom/plugin.h"
#include "transport.h"

#ifndef LOOM_MPI_VERSION
#define LOOM_MPI_VERSION "0.0.0"
#endif

namespace loom::mpi {
namespace {

using common::guarded;
using common::make_status;
namespace wire = common::mpi;

struct PluginContext {
  std::unique_ptr<Transport> transport;
  std::vector<std::unique_ptr<RemoteDevice>> devices;
};

// The identity of a remote device: its host, rank, name and own identity
// mixed, so it never equals a local device's (the registry would hide it as
// a duplicate of the same physical CPU when all ranks share one host) nor
// another remote one's (devices without an identity, like cpu and blas,
// stay apart; the worker's registry already dropped its own duplicates).
void remote_uuid(int rank, const std::string& host, const std::string& name, const uint8_t* theirs, uint8_t out[16]) {
  uint64_t a = wire::wire_hash(reinterpret_cast<const uint8_t*>(host.data()), host.size());
  a = wire::wire_hash(reinterpret_cast<const uint8_t*>(&rank), sizeof rank, a);
  a = wire::wire_hash(reinterpret_cast<const uint8_t*>(name.data()), name.size(), a);
  const uint64_t b = wire::wire_hash(theirs, 16, a ^ 0x6d7069ull);
  std::memcpy(out, &a, 8);
  std::memcpy(out + 8, &b, 8);
}

// Ask worker `rank` for its devices.
loom_status_t* hello(PluginContext* ctx, int rank) {
  wire::Writer m(wire::Kind::kHello, ctx->transport->loom_version());
  std::vector<uint8_t> reply;
  const std::string who = "r" + std::to_string(rank);
  if (loom_status_t* st = ctx->transport->request(rank, who, m, &reply)) return st;
  wire::Reader r(reply.data(), reply.size());
  const std::string host = r.str(256);
  const uint32_t n = r.u32();
  for (uint32_t i = 0; i < n && !r.failed(); ++i) {
    RemoteInfo info;
    info.rank = rank;
    info.index = i;
    info.name = who + "." + r.str(LOOM_MAX_NAME);
    const std::string desc = r.str(1024);
    info.type = r.i32();
    info.memory_total = r.u64();
    info.memory_free = r.u64();
    info.caps = r.u32();
    info.alignment = r.u64();
    const uint8_t* uuid = r.bytes(16);
    info.threads = r.i32();
    if (r.failed()) break;
    info.description = desc + " (rank " + std::to_string(rank) + " on " + host + ")";
    remote_uuid(rank, host, info.name, uuid, info.uuid);
    if (info.alignment == 0 || (info.alignment & (info.alignment - 1)) != 0) info.alignment = 64;
    ctx->devices.push_back(std::make_unique<RemoteDevice>(ctx->transport.get(), std::move(info)));
  }
  if (r.failed()) return make_status(LOOM_STATUS_INTERNAL, "[mpi.init] rank " + std::to_string(rank) + " sent a malformed device list");
  return nullptr;
}

loom_status_t* plugin_init(void** out_context) {
  return guarded("mpi.init", [&]() -> loom_status_t* {
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited) {
      return make_status(LOOM_STATUS_UNAVAILABLE,
                         "MPI is not initialized in this process (run 'mpirun -np N loom <command>': rank 0 shows "
                         "the other ranks' devices, ranks >= 1 serve them)");
    }
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank != 0) {
      return make_status(LOOM_STATUS_UNAVAILABLE, "rank " + std::to_string(rank) + " is a worker: remote devices are shown on rank 0");
    }
    if (size < 2) return make_status(LOOM_STATUS_UNAVAILABLE, "no other ranks in this MPI job (mpirun -np 1)");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    const double timeout = static_cast<double>(common::plugin_env_int("LOOM_MPI_TIMEOUT", 1, 86400, 60));
    auto ctx = std::make_unique<PluginContext>();
    ctx->transport = std::make_unique<Transport>(rank, size, timeout, LOOM_MPI_VERSION);
    for (int r = 1; r < size; ++r) {
      if (loom_status_t* st = hello(ctx.get(), r)) return st;
    }
    common::plugin_log(LOOM_LOG_LEVEL_DEBUG, "mpi",
                       std::to_string(ctx->devices.size()) + " remote device(s) on " + std::to_string(size - 1) + " rank(s)");
    *out_context = ctx.release();
    return nullptr;
  });
}

// The messages sent, by kind, for people and for the plan-reuse test
// (LOOM_LOG=mpi:info).
void log_counts(const Transport& t) {
  const Transport::Counts c = t.counts();
  std::string line = "messages sent:";
  for (uint32_t k = 1; k < Transport::kKinds; ++k) {
    if (c.messages[k] == 0) continue;
    line += std::string(" ") + wire::kind_name(k) + " " + std::to_string(c.messages[k]) + " (" + std::to_string(c.bytes[k]) + " B)";
  }
  common::plugin_log(LOOM_LOG_LEVEL_INFO, "mpi", line);
  // Of those, the posted ones (runs, copies): rank 0 did not wait for their
  // replies, collected with a later one; the rest were round trips.
  line = "messages posted:";
  for (uint32_t k = 1; k < Transport::kKinds; ++k) {
    if (c.posted[k] != 0) line += std::string(" ") + wire::kind_name(k) + " " + std::to_string(c.posted[k]);
  }
  common::plugin_log(LOOM_LOG_LEVEL_INFO, "mpi", line);
  line = "replies received:";
  for (uint32_t k = 1; k < Transport::kKinds; ++k) {
    if (c.messages[k] == 0) continue;
    line += std::string(" ") + wire::kind_name(k) + " " + std::to_string(c.messages[k]) + " (" + std::to_string(c.reply_bytes[k]) + " B)";
  }
  common::plugin_log(LOOM_LOG_LEVEL_INFO, "mpi", line);
  // Activations that went through rank 0 show as bytes read back; those
  // that went rank to rank as copies (the rank-to-rank test reads this line).
  line = "tensor bytes read back:";
  for (size_t r = 1; r < c.read_back.size(); ++r) line += " rank " + std::to_string(r) + " " + std::to_string(c.read_back[r]) + " B";
  line += "; rank to rank copies: " + std::to_string(c.copies) + " (" + std::to_string(c.copy_bytes) + " B)";
  common::plugin_log(LOOM_LOG_LEVEL_INFO, "mpi", line);
}

void plugin_shutdown(void* context) {
  try {
    auto* ctx = static_cast<PluginContext*>(context);
    // Replies still owed for posted runs and copies, so that each worker's next
    // message is its answer to the shutdown (mpi_session).
    for (int r = 1; r < ctx->transport->size(); ++r) {
      if (loom_status_t* st = ctx->transport->collect(r)) common::host_services()->status_free(st);
    }
    log_counts(*ctx->transport);
    delete ctx;  // the workers are told to stop by the loom command (mpi_session), not here
  } catch (...) {
  }
}

size_t plugin_device_count(void* context) { return static_cast<PluginContext*>(context)->devices.size(); }

loom_device_t* plugin_device_get(void* context, size_t index) {
  auto* ctx = static_cast<PluginContext*>(context);
  return index < ctx->devices.size() ? ctx->devices[index]->raw() : nullptr;
}

const loom_plugin_t kPlugin = {
    sizeof(loom_plugin_t),
    LOOM_ABI_VERSION,
    "mpi",  // libloom-mpi.so
    "",
    LOOM_MPI_VERSION,
    nullptr,  // score: runs anywhere MPI does
    plugin_init,
    plugin_shutdown,
    plugin_device_count,
    plugin_device_get,
    nullptr,
};

}  // namespace
}  // namespace loom::mpi

LOOM_PLUGIN_DEFINE(&loom::mpi::kPlugin)
