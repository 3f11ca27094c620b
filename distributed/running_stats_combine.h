#pragma once
// Exact combination of the batch-norm batch statistics of the replicas into
// the running statistics after each step (every batch-norm layer normalises
// by its own replica's batch; --sync-bn, ops/batchnorm_sync.h, is the other
// thing: statistics shared inside forward).
// Replica r with n_r of the B samples has per-channel mean m_r and biased
// variance v_r; with w_r = n_r / B,
//   m = sum_r w_r m_r,   v = sum_r w_r (v_r + (m_r - m)^2),
// two all-reduces of doubles for all BN layers together (the one-pass
// E[x^2] - m^2 would lose the variance of a channel whose mean is large).
// Every replica then updates its running statistics once with the same
// global m and v, so they stay identical. On a GPU everything is queued on
// the replica's streams (ops/batchnorm_combine.h): nothing waits.
#include "distributed/communicator.h"
#include "ops/batchnorm_combine.h"
#include "runtime/model.h"

namespace lockstep {

// One per replica: keeps the packed buffers from step to step.
class RunningStatsCombine {
public:
  // Called by every rank after its backward; `weight` is n_r / B.
  void run(Model& model, Context& ctx, Communicator* comm, int rank, double weight);
  // --ema: after run(), the moving average of the running statistics
  // (ParameterArenas::ema_state) takes the combined ones, as timm's
  // ModelEmaV3 averages the buffers with the weights (ops::ema_average,
  // kernels/ema_math.h), at step `step` (read from `step_on_device` when set:
  // a replayed graph). Queued on the device; nothing waits.
  void average(Model& model, Context& ctx, double decay, uint64_t step, const uint64_t* step_on_device);

private:
  ops::BatchNormCombiner combiner_;
};

}  // namespace lockstep
