#include "base/environment.h"

#include <cstdlib>

namespace lockstep {

const std::vector<EnvironmentVariableInfo>& library_environment() {
  static const std::vector<EnvironmentVariableInfo> table{
      {EnvironmentVariable::cpu_threads, "LOCKSTEP_CPU_THREADS",
       "the CPU compute pool's threads (1 to 4096; default: the hardware's)"},
      {EnvironmentVariable::cpu_conv, "LOCKSTEP_CPU_CONV",
       "onednn (the default where oneDNN is built in) or im2col: the CPU convolutions' implementation"},
      {EnvironmentVariable::memory_plan, "LOCKSTEP_MEMORY_PLAN",
       "on (the default) or off: activations share one planned buffer, or each value has its own"},
      {EnvironmentVariable::cuda_allocator, "LOCKSTEP_CUDA_ALLOCATOR",
       "segments (the default) or per-block: each GPU block its own cudaMalloc, for memory checkers"},
      {EnvironmentVariable::cudnn_log, "LOCKSTEP_CUDNN_LOG",
       "set and not 0: print each convolution algorithm cuDNN's timing chose, with its format"},
      {EnvironmentVariable::fashion_mnist, "LOCKSTEP_FASHION_MNIST",
       "the folder of the default data set (default /usr/share/datasets/fashion-mnist)"},
      {EnvironmentVariable::collective_timeout, "LOCKSTEP_COLLECTIVE_TIMEOUT",
       "lockstep train: seconds a collective may wait for the other replicas and processes before the run fails"},
  };
  return table;
}

const char* environment_name(EnvironmentVariable v) {
  for (const EnvironmentVariableInfo& info : library_environment())
    if (info.variable == v) return info.name;
  return "LOCKSTEP_?";
}

std::optional<std::string> environment_value(EnvironmentVariable v) {
  const char* value = std::getenv(environment_name(v));
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

}  // namespace lockstep
