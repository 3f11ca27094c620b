// The loader threads a training process starts by default (data/loader_threads.h).
#include <catch2/catch.hpp>

#include "data/loader_threads.h"

using lockstep::data::default_loader_threads;

TEST_CASE("loader threads: GPU replicas leave the rest of the process's cores to the loader", "[data][loader]") {
  CHECK(default_loader_threads(16, 1, 1) == 15);  // one GPU: every core but the one driving it
  CHECK(default_loader_threads(16, 1, 8) == 8);   // eight GPUs in one process
  CHECK(default_loader_threads(16, 4, 1) == 3);   // four processes of one GPU each share the host
  CHECK(default_loader_threads(128, 1, 1) == 32); // at most 32
  CHECK(default_loader_threads(4, 1, 4) == 2);    // at least 2
  CHECK(default_loader_threads(2, 8, 1) == 2);    // more processes than cores
}

TEST_CASE("loader threads: on the CPU the compute pool keeps the cores", "[data][loader]") {
  CHECK(default_loader_threads(64, 1, 0) == 2);
  CHECK(default_loader_threads(2, 1, 0) == 2);
  CHECK(default_loader_threads(1, 1, 0) == 1);
  CHECK(default_loader_threads(16, 16, 0) == 1);  // a process per core
}
