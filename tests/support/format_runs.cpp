#include "support/format_runs.h"

#include <catch2/catch.hpp>

#include "layers/graph.h"
#include "support/replica_models.h"

namespace lockstep::testing {

FormatRun train_in_format(const std::string& name, const Shape& sample, const std::vector<Device>& devices,
                          ReplicaOptions options, const std::vector<int64_t>& batches) {
  options.seed = 11;  // dropout's draws
  ReplicaManager manager(named_model(name, sample, ModelOptions{.dropout = true}, 5), devices, options);
  // By default a partial batch in the middle: the activation buffer keeps its layout.
  const std::vector<int64_t>& sizes = batches;
  const SgdConfig sgd{0.9f, 5e-4f, false};
  FormatRun run;
  std::vector<StepMetrics> metrics;
  for (size_t s = 0; s < sizes.size(); ++s) {
    metrics.push_back(manager.train_step(pinned_batch(sizes[s], sample, 30 + s), 0.05f, sgd));
    run.logits.push_back(manager.logits(pinned_batch(6, sample, 80 + s)));
  }
  REQUIRE(manager.replicas_identical());
  run.outcome = outcome_of(manager, std::move(metrics));
  const Graph& graph = dynamic_cast<Graph&>(manager.model(0));
  run.activation_format = graph.activation_format();
  run.activation_dtype = graph.activation_stored_type();
  run.activation_bytes = graph.allocated_activation_bytes();
  run.entries = dynamic_cast<Graph&>(manager.model(0)).arenas().entries();
  return run;
}

}  // namespace lockstep::testing
