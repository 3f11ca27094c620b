#pragma once
// The process group of an MPI job (built only when CMake finds MPI).
//
// Threading: MPI_Init_thread asks for MPI_THREAD_SERIALIZED, not MULTIPLE.
// MPI is called from the main thread between steps and from local replica
// 0's thread during a step, never from two at once, and a mutex around every
// call makes that a guarantee rather than a habit. SERIALIZED is what every
// MPI library provides without a slower, fully locked build, and keeping MPI
// on one thread at a time means non-blocking collectives are driven by
// explicit MPI_Test calls (progress()), which is also where the collective
// timeout is measured.
#include <memory>
#include <string>

#include "distributed/process_group.h"

namespace lockstep {

// Initialises MPI on the first call and returns the world's group; later
// calls return the same group. MPI is finalised when the last reference goes.
std::shared_ptr<ProcessGroup> join_mpi_world();
// The first line of MPI_Get_library_version, e.g. "Open MPI v4.1.4".
std::string mpi_library_version();

}  // namespace lockstep
