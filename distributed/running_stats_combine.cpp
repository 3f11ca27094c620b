#include "distributed/running_stats_combine.h"

#include "ops/sgd.h"

namespace lockstep {

void RunningStatsCombine::run(Model& model, Context& ctx, Communicator* comm, int rank, double weight) {
  std::vector<BatchNormState*> layers = model.batch_norms();
  if (layers.empty()) return;
  const bool alone = !comm || comm->size() == 1;
  combiner_.pack_means(ctx, layers, alone ? 1.0 : weight);
  if (!alone) {
    ops::BatchNormCombiner::Range sums = combiner_.means_and_counts();
    comm->all_reduce_sum(rank, ctx, sums.data, sums.count);
    comm->wait(rank, ctx);
  }
  combiner_.variance_terms(ctx, alone ? 1.0 : weight);
  if (!alone) {
    ops::BatchNormCombiner::Range sums = combiner_.variances();
    comm->all_reduce_sum(rank, ctx, sums.data, sums.count);
    comm->wait(rank, ctx);
  }
  combiner_.update_running(ctx);
}

void RunningStatsCombine::average(Model& model, Context& ctx, double decay, uint64_t step,
                                  const uint64_t* step_on_device) {
  if (model.batch_norms().empty()) return;
  ops::ema_average(ctx, model.arenas().ema_state, model.state_arena(), decay, step, step_on_device);
}

}  // namespace lockstep
