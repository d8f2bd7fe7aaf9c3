// `loom worker`: serve rank 0's device requests under an MPI launcher. Ranks
// >= 1 run it whatever command line they were given (main.cpp asks
// worker::run_under_mpi first), so `mpirun -np 3 loom run ...` needs no
// separate worker command; this entry is for MPMD launches
// (`mpirun -np 1 loom run ... : -np 2 loom worker`) and says what to do
// when started by hand.
#include <cstdio>

#include "cli.hpp"
#include "worker/mpi_session.hpp"

namespace loom::cli {

int cmd_worker(std::vector<std::string> args) {
  CommonOptions common;
  ParsedOptions parsed;
  if (std::string e = parse_command(kWorker, args, &common, &parsed); !e.empty()) {
    std::fprintf(stderr, "loom worker: %s (try 'loom worker --help')\n", e.c_str());
    return 2;
  }
  // Under a launcher main() never gets here for ranks >= 1: they serve first.
  std::fprintf(stderr,
               "loom worker: not started by an MPI launcher; run it as ranks >= 1 of an MPI job, e.g. "
               "'mpirun -np 3 loom run -m MODEL --device r1.cpu,r2.cpu,cpu' (docs/distributed.md)\n");
  return 2;
}

}  // namespace loom::cli
