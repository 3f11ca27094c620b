#include "world_errors.h"

#include <cstdio>
#include <exception>
#include <thread>

namespace lockstep::app {

int run_in_world(const std::shared_ptr<ProcessGroup>& world, const std::function<int()>& body) {
  if (!world) return body();
  try {
    return body();
  } catch (const ReportedByFirstProcess&) {
    std::this_thread::sleep_for(world->timeout());
    world->abort_all(1);
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "lockstep: error: process %d of %d on %s: %s\n", world->rank(), world->size(),
                 world->host().c_str(), e.what());
    std::fflush(stderr);
    world->abort_all(1);
  }
  return 1;  // not reached: abort_all ends the process
}

}  // namespace lockstep::app
