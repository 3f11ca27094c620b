#pragma once
// Each measured configuration runs in a child process of lockstep-bench
// (`lockstep-bench _steps ...` / `_train ...`), so its allocator peaks start
// from zero, no cache of an earlier configuration helps it, and a
// configuration that runs out of memory fails alone. The child prints one
// JSON line; on failure it carries "error".
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common.h"
#include "distributed/process_group.h"

namespace lockstep::bench {

// Timed training steps of a model on a fixed synthetic batch in pinned host
// memory. Reads: replica_devices, model, input, classes, batch (global),
// steps, warmup, threads, tf32, precision.
// With `processes` (a multi-process run) the batch is the global batch over
// every replica of every process; the figures are the first process's.
json measure_steps(const Options& o, std::shared_ptr<ProcessGroup> processes = nullptr);
// Epochs of real training through the prefetching loader and the trainer,
// then the test accuracy. Reads: replica_devices, model, data, limit,
// test_limit, epochs, batch (global), lr, threads, loader_threads.
json train_epochs(const Options& o);

// The child entry points: `lockstep-bench _steps|_train OPTIONS`.
int child_main(const std::string& mode, const Options& o);

// Runs this executable as a child with `mode` and flags, and returns its JSON.
json run_child(const std::string& mode, const std::vector<std::string>& flags);
// Runs a command (argv, with optional environment variables) and parses the
// last line it prints as JSON; {"error": ...} when it fails or prints none.
json run_json_command(const std::vector<std::string>& argv,
                      const std::vector<std::pair<std::string, std::string>>& env = {});

bool failed(const json& result);  // carries "error"

}  // namespace lockstep::bench
