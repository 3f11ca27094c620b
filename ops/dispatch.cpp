#include "ops/dispatch.h"

#include "base/error.h"

namespace lockstep::ops {

void fail_without_cuda(const char* op, const Context& ctx) {
  LS_FAIL(op, " on ", ctx.device().str(), ": this build has no CUDA backend");
}

}  // namespace lockstep::ops
