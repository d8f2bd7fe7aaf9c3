#include "worker/mpi_session.hpp"

#include <csignal>
#include <cstdio>
#include <cstdlib>

#ifdef LOOM_HAVE_MPI
#include <mpi.h>

#include <chrono>
#include <thread>

#include "common/mpi_wire.h"
#endif

namespace loom::cli::worker {

std::string mpi_error(int rc) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  MPI_Error_string(rc, text, &len);
  return std::string(text, static_cast<size_t>(len));
}
namespace {

int env_int(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return -1;
  char* end = nullptr;
  const long r = std::strtol(v, &end, 10);
  return (*end == '\0' && r >= 0 && r < (1 << 24)) ? static_cast<int>(r) : -1;
}

#ifdef LOOM_HAVE_MPI
namespace wire = common::mpi;

// Tell each worker to stop and wait (bounded) for its answer; true when all
// answered, so MPI_Finalize will not wait on a lost rank.
bool stop_workers(int size) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  bool all = true;
  for (int r = 1; r < size; ++r) {
    wire::Writer m(wire::Kind::kShutdown, LOOM_VERSION_STRING);
    MPI_Request req;
    if (MPI_Isend(m.data().data(), static_cast<int>(m.data().size()), MPI_BYTE, r, wire::kMpiTag, MPI_COMM_WORLD, &req) !=
        MPI_SUCCESS) {
      all = false;
      continue;
    }
    bool answered = false;
    while (!answered && std::chrono::steady_clock::now() < deadline) {
      int flag = 0;
      MPI_Status st;
      if (MPI_Iprobe(r, wire::kMpiTag, MPI_COMM_WORLD, &flag, &st) != MPI_SUCCESS) break;
      if (flag) {
        int count = 0;
        MPI_Get_count(&st, MPI_BYTE, &count);
        std::vector<uint8_t> in(static_cast<size_t>(count));
        MPI_Recv(in.data(), count, MPI_BYTE, r, wire::kMpiTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        answered = true;
      } else {
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
    }
    if (!answered) {
      std::fprintf(stderr, "loom: rank %d did not answer the shutdown; leaving without MPI_Finalize\n", r);
      all = false;
    }
  }
  return all;
}
#endif

}  // namespace

int launcher_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"}) {
    const int r = env_int(name);
    if (r >= 0) return r;
  }
  return -1;
}

int run_under_mpi(const std::string& name, const std::vector<std::string>& args, const std::function<int()>& command) {
  const int env_rank = launcher_rank();
  if (env_rank < 0) return -1;
  setenv("LOOM_PLUGIN_PROBE", "inline", 0);
#ifdef LOOM_HAVE_MPI
  int provided = 0;
  if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) {
    std::fprintf(stderr, "loom: MPI_Init failed under the launcher (rank %d from the environment)\n", env_rank);
    return 1;
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  // A write to the socket of a rank that died must be an error MPI returns
  // (the lost device's message, exit 1), not a SIGPIPE that ends this
  // process without a word.
  std::signal(SIGPIPE, SIG_IGN);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (rank != 0) return serve(args);
  if (name == "worker") {
    std::fprintf(stderr, "loom worker: rank 0 runs the command (e.g. 'mpirun -np 3 loom run ...'); ranks >= 1 serve\n");
    stop_workers(size);
    MPI_Finalize();
    return 2;
  }
  const int rc = command();
  if (!stop_workers(size)) {
    std::fflush(stdout);
    std::_Exit(rc != 0 ? rc : 1);  // MPI_Finalize would wait for the lost rank; the launcher ends the rest
  }
  MPI_Finalize();
  return rc;
#else
  (void)args;
  if (env_rank == 0 && name != "worker") return command();
  std::fprintf(stderr, "loom: started by an MPI launcher as rank %d, but this loom was built without MPI "
                       "(apt-get install libopenmpi-dev, then rebuild): nothing to serve\n", env_rank);
  return 1;
#endif
}

}  // namespace loom::cli::worker
