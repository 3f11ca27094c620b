#pragma once
// The library's environment variables: each named and described here once,
// and read through environment_value() alone, so one list (docs/building.md,
// "Environment variables", checked by tests/build/test_environment.py) says
// everything the environment can change. The emulated GPU's own variables
// (LOCKSTEP_EMU_*) belong to the emulator, not the library, and are listed
// in docs/emulated-gpu.md.
#include <optional>
#include <string>
#include <vector>

namespace lockstep {

enum class EnvironmentVariable {
  cpu_threads,       // LOCKSTEP_CPU_THREADS
  cpu_conv,          // LOCKSTEP_CPU_CONV
  memory_plan,       // LOCKSTEP_MEMORY_PLAN
  cuda_allocator,    // LOCKSTEP_CUDA_ALLOCATOR
  cudnn_log,         // LOCKSTEP_CUDNN_LOG
  fashion_mnist,     // LOCKSTEP_FASHION_MNIST
  collective_timeout,  // LOCKSTEP_COLLECTIVE_TIMEOUT (the lockstep program's)
};

struct EnvironmentVariableInfo {
  EnvironmentVariable variable;
  const char* name;  // "LOCKSTEP_CPU_THREADS"
  const char* what;  // one line: what it changes and its values
};
const std::vector<EnvironmentVariableInfo>& library_environment();

const char* environment_name(EnvironmentVariable v);
// The variable's value when it is set and not empty.
std::optional<std::string> environment_value(EnvironmentVariable v);

}  // namespace lockstep
