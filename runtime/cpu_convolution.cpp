#include "runtime/cpu_convolution.h"

#include <optional>
#include <string>

#include "base/environment.h"
#include "base/error.h"

#ifndef LOCKSTEP_WITH_DNNL
#error "LOCKSTEP_WITH_DNNL is set by kernels/cpu's CMake target, which runtime links"
#endif

namespace lockstep {

bool cpu_conv_on_dnnl() {
#if LOCKSTEP_WITH_DNNL
  static const bool on = [] {
    const std::optional<std::string> env = environment_value(EnvironmentVariable::cpu_conv);
    if (!env || *env == "onednn") return true;
    LS_CHECK(*env == "im2col", "LOCKSTEP_CPU_CONV=", *env, ": expected onednn or im2col");
    return false;
  }();
  return on;
#else
  return false;
#endif
}

}  // namespace lockstep
