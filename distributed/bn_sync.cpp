#include "distributed/bn_sync.h"

#include "ops/batchnorm.h"
#include "kernels/bn_math.h"

namespace lockstep {

namespace {
// All-reduces a host vector through a buffer on the rank's device.
void all_reduce_host(std::vector<float>& values, Context& ctx, Communicator& comm, int rank) {
  Tensor buffer = Tensor::from_vector(Shape{static_cast<int64_t>(values.size())}, values, ctx.device());
  comm.all_reduce_sum(rank, ctx, buffer.data(), buffer.numel());
  comm.wait(rank, ctx);
  values = buffer.to_vector();
}
}  // namespace

void synchronize_batch_norm(Model& model, Context& ctx, Communicator* comm, int rank, float weight) {
  std::vector<BatchNormState*> layers = model.batch_norms();
  if (layers.empty()) return;
  if (!comm || comm->size() == 1) {
    for (BatchNormState* bn : layers)
      ops::batchnorm_update_running(ctx, *bn, bn->batch_mean, bn->batch_var, bn->values_per_channel);
    return;
  }
  // First all-reduce: weighted means, and the number of values per channel.
  std::vector<std::vector<float>> means, vars;
  std::vector<float> packed;
  for (BatchNormState* bn : layers) {
    means.push_back(bn->batch_mean.to_vector());
    vars.push_back(bn->batch_var.to_vector());
    for (float m : means.back()) packed.push_back(bn_mean_term(weight, m));
    packed.push_back(static_cast<float>(bn->values_per_channel));
  }
  all_reduce_host(packed, ctx, *comm, rank);
  std::vector<std::vector<float>> global_mean(layers.size());
  std::vector<int64_t> global_count(layers.size());
  size_t at = 0;
  for (size_t l = 0; l < layers.size(); ++l) {
    global_mean[l].assign(packed.begin() + at, packed.begin() + at + means[l].size());
    at += means[l].size();
    global_count[l] = static_cast<int64_t>(packed[at++]);
  }
  // Second all-reduce: weighted variances around the global mean.
  packed.clear();
  for (size_t l = 0; l < layers.size(); ++l)
    for (size_t c = 0; c < means[l].size(); ++c)
      packed.push_back(bn_var_term(weight, means[l][c], vars[l][c], global_mean[l][c]));
  all_reduce_host(packed, ctx, *comm, rank);
  at = 0;
  for (size_t l = 0; l < layers.size(); ++l) {
    int64_t channels = static_cast<int64_t>(means[l].size());
    std::vector<float> var(packed.begin() + at, packed.begin() + at + channels);
    at += channels;
    Tensor m = Tensor::from_vector(Shape{channels}, global_mean[l], ctx.device());
    Tensor v = Tensor::from_vector(Shape{channels}, var, ctx.device());
    ops::batchnorm_update_running(ctx, *layers[l], m, v, global_count[l]);
  }
}

}  // namespace lockstep
