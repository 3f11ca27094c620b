#pragma once
// A command under an MPI launcher: every process reports its own error
// ("lockstep: error: process R of P on HOST: ..."), then ends the whole job,
// since the others would wait for it at their next collective. Without a
// world (null) the body runs as is and errors reach main().
#include <functional>
#include <memory>

#include "base/error.h"
#include "distributed/process_group.h"

namespace lockstep::app {

// An error every process found alike, which the first process reports for
// all: a process after the first throws this instead, says nothing, and
// waits for the first's report to end the job (or ends it itself after the
// collective timeout).
class ReportedByFirstProcess : public Error {
public:
  using Error::Error;
};

int run_in_world(const std::shared_ptr<ProcessGroup>& world, const std::function<int()>& body);

}  // namespace lockstep::app
