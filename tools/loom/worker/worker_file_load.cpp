// The load_file request: rank 0 names a file (its path), a slice of it and
// the slice's checksum; this rank reads the slice from its own copy of the
// file (through LOOM_MPI_PATH_MAP) into a tensor of one of its buffers, so
// the weight never crosses the wire. Checked like the GGUF reader checks a
// file: a regular file, the slice inside it without overflow, the tensor's
// bytes inside its buffer, the checksum equal; each failure is an error
// naming the path and the values on both sides.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "common/checksum64.h"
#include "common/mpi_wire.h"
#include "loom/registry/plugin_calls.hpp"
#include "worker/tensor_decode.hpp"
#include "worker/worker_server.hpp"

namespace loom::cli::worker {
namespace {

namespace wire = common::mpi;

constexpr size_t kMaxPath = 4096;  // PATH_MAX on Linux

std::string hex(uint64_t v) {
  char b[24];
  std::snprintf(b, sizeof b, "0x%016" PRIx64, v);
  return b;
}

// Closes the descriptor on every path out.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) close(fd);
  }
};

// All of [offset, offset + out.size()) from fd, or why not.
Status read_slice(int fd, uint64_t offset, std::vector<uint8_t>* out, const std::string& who) {
  size_t done = 0;
  while (done < out->size()) {
    const ssize_t got = pread(fd, out->data() + done, out->size() - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return unavailable(who + "read failed at byte " + std::to_string(offset + done) + ": " + std::strerror(errno));
    if (got == 0) return invalid_argument(who + "the file ended at byte " + std::to_string(offset + done) + " while reading");
    done += static_cast<size_t>(got);
  }
  return Status::Ok();
}

}  // namespace

void WorkerServer::set_path_map(const std::string& spec) {
  StatusOr<PathMap> m = PathMap::parse(spec);
  path_map_error_ = m.ok() ? Status::Ok() : m.status();
  path_map_ = m.ok() ? std::move(m).value() : PathMap();
}

Status WorkerServer::load_file(const uint8_t* p, size_t n) {
  wire::Reader r(p, n);
  Tensor t{};
  const BufferLookup look = buffer_lookup();
  LOOM_RETURN_IF_ERROR(decode_placed_tensor(r, look, "load_file", &t));
  const std::string path = r.str(kMaxPath);
  const uint64_t file_offset = r.u64();
  const uint64_t size = r.u64();
  const uint64_t checksum = r.u64();
  if (r.failed()) return invalid_argument("[worker.load_file] message ends early (or a path over 4096 bytes)");
  if (r.remaining() != 0) {
    return invalid_argument("[worker.load_file] " + std::to_string(r.remaining()) + " bytes left over after the request");
  }
  const std::string who = "[worker.load_file] rank " + std::to_string(rank_) + ": ";
  if (path.empty() || path[0] != '/' || path.find('\0') != std::string::npos) {
    return invalid_argument(who + "path '" + path.c_str() + "' is not an absolute path");
  }
  if (!path_map_error_.ok()) return Status(path_map_error_.code(), who + path_map_error_.message());
  if (size > SIZE_MAX) return invalid_argument(who + std::to_string(size) + " bytes exceed this host's size_t");
  LOOM_RETURN_IF_ERROR(registry::check_tensor_range("worker.load_file", t.buffer, &t, 0, static_cast<size_t>(size)));

  const std::string local = path_map_.apply(path);
  const std::string file = local == path ? path : local + " (" + path + " through LOOM_MPI_PATH_MAP)";
  Fd fd;
  fd.fd = open(local.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd.fd < 0) {
    const int e = errno;
    const std::string why = file + ": " + std::strerror(e);
    return e == ENOENT || e == ENOTDIR ? not_found(who + why) : unavailable(who + why);
  }
  struct stat sb {};
  if (fstat(fd.fd, &sb) != 0) return unavailable(who + file + ": " + std::strerror(errno));
  if (!S_ISREG(sb.st_mode)) return invalid_argument(who + file + " is not a regular file");
  const auto file_size = static_cast<uint64_t>(sb.st_size);
  if (file_offset > file_size || size > file_size - file_offset) {
    return invalid_argument(who + file + ": bytes [" + std::to_string(file_offset) + ", " + std::to_string(file_offset) +
                            " + " + std::to_string(size) + ") lie past its end (" + std::to_string(file_size) + " bytes)");
  }
  std::vector<uint8_t> bytes(static_cast<size_t>(size));
  LOOM_RETURN_IF_ERROR(read_slice(fd.fd, file_offset, &bytes, who + file + ": "));
  const uint64_t mine = common::checksum64(bytes.data(), bytes.size());
  if (mine != checksum) {
    return invalid_argument(who + file + ": checksum of bytes [" + std::to_string(file_offset) + ", +" +
                            std::to_string(size) + ") is " + hex(mine) + ", rank 0's is " + hex(checksum) +
                            " (another or a changed file)");
  }
  LOOM_RETURN_IF_ERROR(registry::buffer_set_tensor(t.buffer, &t, bytes.data(), 0, bytes.size()));
  files_loaded_ += 1;
  file_bytes_loaded_ += size;
  return Status::Ok();
}

}  // namespace loom::cli::worker
