#include "support/bn_relu_check.h"

#include <catch2/catch.hpp>

#include <cstring>

#include "ops/batchnorm.h"
#include "ops/elementwise.h"
#include "ops/tensor_ops.h"
#include "runtime/context.h"
#include "support/layer_harness.h"

namespace lockstep::testing {

namespace {

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

void require_same(const char* what, const std::vector<float>& fused, const std::vector<float>& unfused) {
  INFO(what << ": fused against unfused, " << fused.size() << " values");
  if (!same_bits(fused, unfused))
    for (size_t i = 0; i < fused.size(); ++i) {
      INFO("first difference at " << i << ": fused " << fused[i] << ", unfused " << unfused[i]);
      REQUIRE(std::memcmp(&fused[i], &unfused[i], sizeof(float)) == 0);
    }
  REQUIRE(same_bits(fused, unfused));
}

// The inputs both checks draw: gamma of both signs, so that the ReLU clips
// some of every channel, and what dx held before an added gradient.
struct Inputs {
  Tensor x, gamma, beta, dy, dx_before;
};
Inputs draw_inputs(Device device, const Shape& shape, uint64_t seed) {
  const Shape channels{shape[1]};
  return {random_tensor(shape, seed, -2.0f, 3.0f, device), random_tensor(channels, seed + 1, -1.5f, 1.5f, device),
          random_tensor(channels, seed + 2, -0.5f, 0.5f, device), random_tensor(shape, seed + 3, -1.0f, 1.0f, device),
          random_tensor(shape, seed + 4, -1.0f, 1.0f, device)};
}

// The ReLU did clip: some outputs are 0 and some are not, so the mask mattered.
void require_clipped(const std::vector<float>& y) {
  int64_t zeros = 0;
  for (float v : y) zeros += v == 0.0f;
  REQUIRE(zeros > 0);
  REQUIRE(zeros < static_cast<int64_t>(y.size()));
}

}  // namespace

BnReluResult check_fused_bn_relu(Device device, const Shape& shape, uint64_t seed) {
  Context ctx(device);
  const Shape channels{shape[1]};
  const auto [x, gamma, beta, dy, dx_before] = draw_inputs(device, shape, seed);
  auto empty = [&](const Shape& s) { return Tensor::empty(s, device); };

  // Unfused: batch norm, then ReLU; ReLU backward, then batch norm backward.
  Tensor z = empty(shape), y = empty(shape), dz = empty(shape), dx = empty(shape);
  Tensor mean = empty(channels), var = empty(channels), saved_mean = empty(channels), saved_inv = empty(channels);
  Tensor dgamma = empty(channels), dbeta = empty(channels);
  ops::batchnorm_forward_train(ctx, x, gamma, beta, 1e-5f, z, mean, var, saved_mean, saved_inv);
  ops::relu_forward(ctx, z, y);
  ops::relu_backward(ctx, y, dy, dz, false);
  ops::batchnorm_backward(ctx, x, dz, gamma, saved_mean, saved_inv, dgamma, dbeta, &dx, false);
  Tensor dx_added = dx_before.to(device);
  ops::batchnorm_backward(ctx, x, dz, gamma, saved_mean, saved_inv, dgamma, dbeta, &dx_added, true);

  // Fused.
  Tensor fy = empty(shape), fdx = empty(shape);
  Tensor fmean = empty(channels), fvar = empty(channels), fsaved_mean = empty(channels), fsaved_inv = empty(channels);
  Tensor fdgamma = empty(channels), fdbeta = empty(channels);
  ops::batchnorm_relu_forward_train(ctx, x, gamma, beta, 1e-5f, fy, fmean, fvar, fsaved_mean, fsaved_inv);
  ops::batchnorm_relu_backward(ctx, x, fy, dy, gamma, fsaved_mean, fsaved_inv, fdgamma, fdbeta, &fdx, false);
  Tensor fdx_added = dx_before.to(device);
  ops::batchnorm_relu_backward(ctx, x, fy, dy, gamma, fsaved_mean, fsaved_inv, fdgamma, fdbeta, &fdx_added, true);
  // Parameter gradients alone (no dx wanted) are the same as with it.
  Tensor gdgamma = empty(channels), gdbeta = empty(channels);
  ops::batchnorm_relu_backward(ctx, x, fy, dy, gamma, fsaved_mean, fsaved_inv, gdgamma, gdbeta, nullptr, false);
  ctx.synchronize();

  BnReluResult r{fy.to_vector(),      fmean.to_vector(), fvar.to_vector(),    fdgamma.to_vector(),
                 fdbeta.to_vector(),  fdx.to_vector(),   fdx_added.to_vector()};
  require_same("y", r.y, y.to_vector());
  require_same("batch mean", r.mean, mean.to_vector());
  require_same("batch variance", r.var, var.to_vector());
  require_same("dgamma", r.dgamma, dgamma.to_vector());
  require_same("dbeta", r.dbeta, dbeta.to_vector());
  require_same("dx", r.dx, dx.to_vector());
  require_same("dx added", r.dx_added, dx_added.to_vector());
  require_same("dgamma without dx", gdgamma.to_vector(), r.dgamma);
  require_clipped(r.y);
  return r;
}

BnAddReluResult check_fused_bn_add_relu(Device device, const Shape& shape, uint64_t seed) {
  Context ctx(device);
  const Shape channels{shape[1]};
  const auto [x, gamma, beta, dy, dx_before] = draw_inputs(device, shape, seed);
  Tensor shortcut = random_tensor(shape, seed + 5, -1.0f, 1.0f, device);
  Tensor ds_before = random_tensor(shape, seed + 6, -1.0f, 1.0f, device);
  auto empty = [&](const Shape& s) { return Tensor::empty(s, device); };

  // Unfused, as the graph ran it: bn, add, relu nodes; relu backward, the
  // add handing dy to both inputs, bn backward from the bn's copy.
  Tensor z = empty(shape), u = empty(shape), y = empty(shape), du = empty(shape), dz = empty(shape);
  Tensor ds = empty(shape), dx = empty(shape);
  Tensor mean = empty(channels), var = empty(channels), saved_mean = empty(channels), saved_inv = empty(channels);
  Tensor dgamma = empty(channels), dbeta = empty(channels);
  ops::batchnorm_forward_train(ctx, x, gamma, beta, 1e-5f, z, mean, var, saved_mean, saved_inv);
  ops::add(ctx, z, shortcut, u);
  ops::relu_forward(ctx, u, y);
  ops::relu_backward(ctx, y, dy, du, false);
  ops::copy_or_add(ctx, du, dz, false);
  ops::copy_or_add(ctx, du, ds, false);
  ops::batchnorm_backward(ctx, x, dz, gamma, saved_mean, saved_inv, dgamma, dbeta, &dx, false);
  Tensor dx_added = dx_before.to(device), ds_added = ds_before.to(device);
  ops::copy_or_add(ctx, du, ds_added, true);
  ops::batchnorm_backward(ctx, x, dz, gamma, saved_mean, saved_inv, dgamma, dbeta, &dx_added, true);

  // Fused: written, added, and each gradient alone.
  Tensor fy = empty(shape), fdx = empty(shape), fds = empty(shape);
  Tensor fmean = empty(channels), fvar = empty(channels), fsaved_mean = empty(channels), fsaved_inv = empty(channels);
  Tensor fdgamma = empty(channels), fdbeta = empty(channels);
  ops::batchnorm_add_relu_forward_train(ctx, x, shortcut, gamma, beta, 1e-5f, fy, fmean, fvar, fsaved_mean,
                                        fsaved_inv);
  ops::batchnorm_add_relu_backward(ctx, x, fy, dy, gamma, fsaved_mean, fsaved_inv, fdgamma, fdbeta, &fdx, false, &fds,
                                   false);
  Tensor fdx_added = dx_before.to(device), fds_added = ds_before.to(device);
  Tensor adgamma = empty(channels), adbeta = empty(channels);
  ops::batchnorm_add_relu_backward(ctx, x, fy, dy, gamma, fsaved_mean, fsaved_inv, adgamma, adbeta, &fdx_added, true,
                                   &fds_added, true);
  Tensor only_dx = empty(shape), only_ds = empty(shape);
  Tensor odgamma = empty(channels), odbeta = empty(channels);
  ops::batchnorm_add_relu_backward(ctx, x, fy, dy, gamma, fsaved_mean, fsaved_inv, odgamma, odbeta, &only_dx, false,
                                   nullptr, false);
  Tensor pdgamma = empty(channels), pdbeta = empty(channels);
  ops::batchnorm_add_relu_backward(ctx, x, fy, dy, gamma, fsaved_mean, fsaved_inv, pdgamma, pdbeta, nullptr, false,
                                   &only_ds, false);
  ctx.synchronize();

  BnAddReluResult r{fy.to_vector(),     fmean.to_vector(), fvar.to_vector(),       fdgamma.to_vector(),
                    fdbeta.to_vector(), fdx.to_vector(),   fds.to_vector(),        fdx_added.to_vector(),
                    fds_added.to_vector()};
  require_same("y", r.y, y.to_vector());
  require_same("batch mean", r.mean, mean.to_vector());
  require_same("batch variance", r.var, var.to_vector());
  require_same("saved inverse std", fsaved_inv.to_vector(), saved_inv.to_vector());
  require_same("dgamma", r.dgamma, dgamma.to_vector());
  require_same("dbeta", r.dbeta, dbeta.to_vector());
  require_same("dx", r.dx, dx.to_vector());
  require_same("shortcut gradient", r.dshortcut, ds.to_vector());
  require_same("dx added", r.dx_added, dx_added.to_vector());
  require_same("shortcut gradient added", r.dshortcut_added, ds_added.to_vector());
  require_same("dgamma, gradients added", adgamma.to_vector(), r.dgamma);
  require_same("dx without the shortcut gradient", only_dx.to_vector(), r.dx);
  require_same("dgamma without the shortcut gradient", odgamma.to_vector(), r.dgamma);
  require_same("shortcut gradient without dx", only_ds.to_vector(), r.dshortcut);
  require_same("dbeta without dx", pdbeta.to_vector(), r.dbeta);
  require_clipped(r.y);
  return r;
}

}  // namespace lockstep::testing
