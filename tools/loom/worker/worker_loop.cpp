// `loom worker`'s MPI loop: receive a request from rank 0, answer it with the
// WorkerServer, until rank 0 says stop. Idle waits poll with a growing
// sleep (up to 100 us) so a waiting worker leaves the cores to the ranks that
// compute. (A 1 ms cap cost each decode step up to 1 ms per remote split:
// the worker sleeps through rank 0's own layers and answers the next
// request late.)
#ifdef LOOM_HAVE_MPI
#include <mpi.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "cli.hpp"
#include "common/mpi_wire.h"
#include "worker/mpi_session.hpp"
#include "worker/peer_link.hpp"
#include "worker/worker_server.hpp"

namespace loom::cli::worker {
namespace {

namespace wire = common::mpi;

// --plugin-path values of the command line this rank was started with.
CommonOptions plugin_paths(const std::vector<std::string>& args) {
  CommonOptions o;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--plugin-path" && i + 1 < args.size()) o.plugin_paths.push_back(args[++i]);
    else if (args[i].rfind("--plugin-path=", 0) == 0) o.plugin_paths.push_back(args[i].substr(14));
  }
  return o;
}

// Block (politely) until rank 0 sends something; its size in *count.
int wait_request(MPI_Status* st) {
  int idle = 0;
  for (;;) {
    int flag = 0;
    const int rc = MPI_Iprobe(0, wire::kMpiTag, MPI_COMM_WORLD, &flag, st);
    if (rc != MPI_SUCCESS || flag) return rc;
    if (++idle > 2000) std::this_thread::sleep_for(std::chrono::microseconds(idle > 20000 ? 100 : 50));
  }
}

}  // namespace

int serve(const std::vector<std::string>& args) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  std::unique_ptr<registry::Registry> reg = load_registry(plugin_paths(args));
  int rc = 0;
  {
    WorkerServer server(reg->devices(), LOOM_VERSION_STRING, rank, host);
    std::unique_ptr<PeerLink> link = make_mpi_peer_link();
    server.set_peer_link(link.get());
    const char* map = std::getenv("LOOM_MPI_PATH_MAP");
    server.set_path_map(map ? map : "");
    std::vector<uint8_t> in, out;
    for (bool more = true; more;) {
      MPI_Status st;
      int e = wait_request(&st);
      int count = 0;
      if (e == MPI_SUCCESS) e = MPI_Get_count(&st, MPI_BYTE, &count);
      if (e == MPI_SUCCESS) {
        in.resize(static_cast<size_t>(count));
        e = MPI_Recv(in.data(), count, MPI_BYTE, 0, wire::kMpiTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      }
      if (e == MPI_SUCCESS) {
        more = server.handle(in.data(), in.size(), &out);
        e = MPI_Send(out.data(), static_cast<int>(out.size()), MPI_BYTE, 0, wire::kMpiTag, MPI_COMM_WORLD);
      }
      if (e != MPI_SUCCESS) {
        std::fprintf(stderr, "loom worker (rank %d): %s\n", rank, mpi_error(e).c_str());
        rc = 1;
        break;
      }
    }
  }
  reg.reset();
  if (rc == 0) MPI_Finalize();
  return rc;
}

}  // namespace loom::cli::worker
#endif
