#pragma once
// The world of a run: this process alone, or the processes an MPI launcher
// (mpirun, srun) started. join_world() reads the launcher's environment; with
// no launcher, or a world of one process, it returns null and lockstep runs
// exactly as a single process always has.
#include <memory>
#include <string>

#include "distributed/process_group.h"

namespace lockstep {

// The number of processes the launcher says it started (1 without one): from
// OMPI_COMM_WORLD_SIZE (Open MPI's mpirun), PMI_SIZE (MPICH's and Slurm's
// PMI) or SLURM_STEP_NUM_TASKS under srun with PMIx.
int launcher_world_size();

// Joins the launcher's world (MPI_Init_thread on the first call; the same
// group afterwards). Null when launcher_world_size() is 1. Throws when the
// launcher started several processes but this build has no MPI.
std::shared_ptr<ProcessGroup> join_world();

// "MPI (Open MPI v4.1.4, ...)" when built with MPI, else "none (built without MPI)".
std::string mpi_library();

}  // namespace lockstep
