#pragma once
// Argument checks the ops share: each throws an Error naming the op and what
// is wrong.
#include <initializer_list>

#include "runtime/context.h"
#include "runtime/tensor.h"

namespace lockstep::ops {

// `t` (called `what` in the message) is allocated, f32 and on ctx's device.
void check_tensor(const char* op, Context& ctx, const char* what, const Tensor& t);

}  // namespace lockstep::ops
