// Fine-tuning a backbone: frozen (Graph::freeze_backbone with its learning
// rate scaled to 0) the layers before the classifier run as in inference and
// stay as they were, batch-norm statistics included, while the classifier
// learns from their features; scaled, they learn at lr * scale.
#include <catch2/catch.hpp>

#include <cmath>

#include "distributed/replica_manager.h"
#include "layers/graph.h"
#include "layers/models.h"
#include "support/layer_harness.h"
#include "support/replica_models.h"

using namespace lockstep;
using namespace lockstep::testing;

namespace {

const Shape sample{3, 8, 8};

// small-cnn (two conv - pool - bn - relu blocks, then the classifier) whose
// running statistics are away from the batches' own.
std::unique_ptr<Graph> small_cnn(uint64_t seed) {
  std::unique_ptr<Model> m = small_cnn_for_fine_tuning(sample, seed, false)(Device::cpu());
  return std::unique_ptr<Graph>(static_cast<Graph*>(m.release()));
}

ModelFactory frozen_small_cnn(bool frozen) { return small_cnn_for_fine_tuning(sample, 7, frozen); }

}  // namespace

TEST_CASE("a frozen backbone trains as inference: the step's loss is evaluation's, backbone gradients stay 0",
          "[fine-tuning]") {
  std::unique_ptr<Graph> g = small_cnn(3);
  REQUIRE(g->batch_norms().size() == 2);
  HostBatch batch = pinned_batch(6, sample, 11);
  Context ctx(Device::cpu());
  const StepMetrics inference = g->evaluate(ctx, batch.images, batch.labels);

  // Not frozen, training normalises with the batch's statistics: another loss.
  const double trained_loss = g->train_step(ctx, {}, batch.images, batch.labels, 1.0f).metrics().loss_sum;
  REQUIRE(std::abs(trained_loss - inference.loss_sum) > 1e-3 * std::abs(inference.loss_sum));
  ctx.zero(g->arenas().grads);

  g->freeze_backbone(true);
  REQUIRE(g->batch_norms().empty());  // every batch norm is in the backbone: none combines statistics
  const std::vector<float> state_before = g->state_arena().to_vector();
  const double frozen_loss = g->train_step(ctx, {}, batch.images, batch.labels, 1.0f).metrics().loss_sum;
  REQUIRE(frozen_loss == Approx(inference.loss_sum).epsilon(1e-6));
  REQUIRE(g->state_arena().to_vector() == state_before);

  const int64_t head = g->head_param_offset();
  REQUIRE(head > 0);
  const std::vector<float> grads = g->arenas().grads.to_vector();
  for (int64_t i = 0; i < head; ++i) REQUIRE(grads[i] == 0.0f);
  // The classifier's gradient is that of evaluation's loss: central differences on a few weights.
  std::vector<float> params = g->arenas().params.to_vector();
  for (int64_t i : {head, head + 17, head + 101, g->arenas().total() - 1}) {
    INFO("parameter " << i);
    const float keep = params[i], h = 1e-2f;
    const auto loss_at = [&](float value) {
      params[i] = value;
      g->arenas().params.copy_from(Tensor::from_vector(g->arenas().params.shape(), params));
      return g->evaluate(ctx, batch.images, batch.labels).loss_sum;
    };
    const double numeric = (loss_at(keep + h) - loss_at(keep - h)) / (2.0 * h);
    loss_at(keep);
    REQUIRE(grads[i] == Approx(numeric).epsilon(2e-3).margin(2e-4));
  }
}

TEST_CASE("replicas with a frozen backbone keep it bit for bit and train the classifier like one replica",
          "[fine-tuning]") {
  SgdConfig sgd{0.9f, 5e-3f, false};
  ReplicaManager two(frozen_small_cnn(true), {Device::cpu(), Device::cpu()});
  ReplicaManager one(frozen_small_cnn(true), {Device::cpu()});
  const int64_t head = static_cast<Graph&>(one.model(0)).head_param_offset();
  sgd.backbone_elements = head;
  sgd.backbone_lr_scale = 0.0f;
  const std::vector<float> params_before = one.model(0).arenas().params.to_vector();
  const std::vector<float> state_before = one.model(0).state_arena().to_vector();
  double first = 0.0, last = 0.0;
  for (int step = 0; step < 8; ++step) {
    HostBatch batch = pinned_batch(10, sample, 200 + step % 2);
    const StepMetrics m = one.train_step(batch, 0.05f, sgd);
    two.train_step(batch, 0.05f, sgd);
    if (step == 0) first = m.loss_sum;
    last = m.loss_sum;
  }
  REQUIRE(last < first);  // the classifier learns
  for (ReplicaManager* manager : {&one, &two}) {
    const std::vector<float> params = manager->model(0).arenas().params.to_vector();
    for (int64_t i = 0; i < head; ++i) REQUIRE(params[i] == params_before[i]);
    REQUIRE(manager->model(0).state_arena().to_vector() == state_before);
  }
  const std::vector<float> a = two.model(0).arenas().params.to_vector(), b = one.model(0).arenas().params.to_vector();
  for (size_t i = 0; i < a.size(); ++i) {
    INFO("parameter " << i);
    REQUIRE(a[i] == Approx(b[i]).epsilon(1e-5).margin(1e-7));
  }
}

TEST_CASE("a scaled backbone trains as the whole network would at lr * scale, the classifier at lr",
          "[fine-tuning]") {
  // With the scale, one step from the same state: the backbone's change is
  // scale times an unscaled step's (momentum starts at 0), the classifier's equal.
  const float lr = 0.05f, scale = 0.1f;
  ReplicaManager scaled(frozen_small_cnn(false), {Device::cpu()}), plain(frozen_small_cnn(false), {Device::cpu()});
  SgdConfig sgd{0.9f, 0.0f, false};
  SgdConfig with_scale = sgd;
  with_scale.backbone_elements = static_cast<Graph&>(scaled.model(0)).head_param_offset();
  with_scale.backbone_lr_scale = scale;
  const std::vector<float> before = plain.model(0).arenas().params.to_vector();
  HostBatch batch = pinned_batch(10, sample, 300);
  scaled.train_step(batch, lr, with_scale);
  plain.train_step(batch, lr, sgd);
  const std::vector<float> a = scaled.model(0).arenas().params.to_vector();
  const std::vector<float> b = plain.model(0).arenas().params.to_vector();
  bool backbone_moved = false;
  for (int64_t i = 0; i < with_scale.backbone_elements; ++i) {
    INFO("backbone element " << i);
    // (a difference of float weights near 1 is exact to about 1e-7)
    REQUIRE(a[i] - before[i] == Approx(scale * (b[i] - before[i])).epsilon(1e-4).margin(2e-7));
    backbone_moved = backbone_moved || a[i] != before[i];
  }
  REQUIRE(backbone_moved);
  for (int64_t i = with_scale.backbone_elements; i < static_cast<int64_t>(a.size()); ++i) REQUIRE(a[i] == b[i]);
}
