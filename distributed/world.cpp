#include "distributed/world.h"

#include <cstdlib>
#include <string>

#include "base/error.h"

#if LOCKSTEP_WITH_MPI
#include "distributed/mpi/mpi_process_group.h"
#endif

namespace lockstep {

namespace {
int env_int(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return 0;
  char* end = nullptr;
  long n = std::strtol(v, &end, 10);
  LS_CHECK(*end == '\0' && n >= 0 && n < (1L << 24), "environment variable ", name, "='", v,
           "' is not a process count");
  return static_cast<int>(n);
}
}  // namespace

int launcher_world_size() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})
    if (int n = env_int(name)) return n;
  if (std::getenv("PMIX_RANK"))
    if (int n = env_int("SLURM_STEP_NUM_TASKS")) return n;
  return 1;
}

std::shared_ptr<ProcessGroup> join_world() {
  int size = launcher_world_size();
  if (size <= 1) return nullptr;
#if LOCKSTEP_WITH_MPI
  return join_mpi_world();
#else
  LS_FAIL("the launcher started ", size, " processes, but this lockstep was built without MPI: "
          "install libopenmpi-dev and rebuild (cmake -DLOCKSTEP_MPI=ON)");
#endif
}

std::string mpi_library() {
#if LOCKSTEP_WITH_MPI
  return "MPI (" + mpi_library_version() + ")";
#else
  return "none (built without MPI)";
#endif
}

}  // namespace lockstep
