// loom under an MPI launcher (mpirun, srun): one binary, two roles. main()
// asks run_under_mpi first: outside a launcher it returns -1 and the command
// runs as always. Under one, MPI is initialised before any registry loads
// (errors returned, not fatal); ranks >= 1 serve rank 0's requests (`loom
// worker`) whatever command they were given, and rank 0 runs the command,
// then tells every worker to stop and finalises MPI. Plugins are probed in
// this process there (LOOM_PLUGIN_PROBE=inline unless set): a forked probe
// child of an MPI rank must not start MPI. docs/distributed.md.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace loom::cli::worker {

// This process's rank from the launcher's environment (OMPI_COMM_WORLD_RANK,
// PMIX_RANK, PMI_RANK), -1 when none started it.
int launcher_rank();

// -1: not under a launcher (run the command as usual). Else the exit code:
// a worker's after serving, rank 0's after `command` and the shutdown.
int run_under_mpi(const std::string& name, const std::vector<std::string>& args,
                  const std::function<int()>& command);

// MPI's words for an error code (MPI_Error_string).
std::string mpi_error(int rc);

// Serve rank 0 until it says stop (MPI must be initialised; rank >= 1).
// args: the command line's, for --plugin-path. Returns the exit code.
int serve(const std::vector<std::string>& args);

}  // namespace loom::cli::worker
