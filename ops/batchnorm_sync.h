#pragma once
// Synchronised batch norm (--sync-bn, kernels/bn_sync.h): the training
// forward and backward of ops/batchnorm.h with the statistics, and the
// gradient's means through them, taken over every replica of `group`.
//  - forward: the replica's own mean and biased variance go to batch_mean and
//    batch_var (the end-of-step combination of running statistics needs them
//    as before); saved_mean and saved_inv_std, which normalise and which
//    backward reads, are those of all replicas' values (two all-reduces);
//  - backward: dgamma and dbeta are the replica's own sums (the gradient
//    all-reduce adds them up); dx uses mean(dy) and mean(dy * xhat) over all
//    replicas' values (one all-reduce).
// `sync_buffer` is the layer's, at least batchnorm_sync_buffer_floats(C)
// floats on ctx's device, kept from forward to backward. Every replica of the
// group must make every call, in the same order (the replica manager refuses
// a batch that would leave a replica without samples when batch norm is
// synchronised, as such a replica runs no layer).
#include "runtime/context.h"
#include "runtime/replica_group.h"
#include "runtime/tensor.h"

namespace lockstep::ops {

int64_t batchnorm_sync_buffer_floats(int64_t channels);

void batchnorm_forward_train_synced(Context& ctx, ReplicaGroup& group, const Tensor& x, const Tensor& gamma,
                                    const Tensor& beta, float eps, Tensor& y, Tensor& batch_mean, Tensor& batch_var,
                                    Tensor& saved_mean, Tensor& saved_inv_std, Tensor& sync_buffer);

void batchnorm_backward_synced(Context& ctx, ReplicaGroup& group, const Tensor& x, const Tensor& dy,
                               const Tensor& gamma, const Tensor& saved_mean, const Tensor& saved_inv_std,
                               Tensor& dgamma, Tensor& dbeta, Tensor* dx, bool accumulate, Tensor& sync_buffer);

}  // namespace lockstep::ops
