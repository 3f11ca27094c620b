#pragma once
// The suites of lockstep-bench, one file each. Each measures (or, for
// projection, computes), fills a SuiteResult with its table, JSON rows and
// notes, and draws its figure; main() prints and writes it.
#include "common.h"
#include "distributed/process_group.h"

namespace lockstep::bench {

SuiteResult run_scaling(const Options& o);
SuiteResult run_projection(const Options& o);
SuiteResult run_batch_sweep(const Options& o);
SuiteResult run_envs(const Options& o);
SuiteResult run_allreduce(const Options& o);
SuiteResult run_kernels(const Options& o);
SuiteResult run_peers(const Options& o);
// Computes, measures nothing (roofline.cpp, gpu_peaks.h).
SuiteResult run_roofline(const Options& o);
// One replica's step layer by layer against the roofline bound (profile.cpp, profile_steps.h).
SuiteResult run_profile(const Options& o);

// Flags that make a child (`_steps`) measure `global_batch` samples a step
// with the given replicas, the model and shape of `o`.
std::vector<std::string> step_flags(const Options& o, const std::vector<Device>& replicas, int64_t global_batch);

// scaling's model, input, batch, steps and warm-up when not given.
void scaling_defaults(Options& o, bool gpu);
// scaling under an MPI launcher (`mpirun -np P lockstep-bench scaling`): P
// processes against one, on the CPU (scaling_processes.cpp).
SuiteResult run_process_scaling(const Options& o, ProcessGroup& world);

}  // namespace lockstep::bench
