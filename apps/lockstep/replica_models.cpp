#include "replica_models.h"

#include <utility>

#include "layers/models.h"

namespace lockstep::app {

ReplicaModels::ReplicaModels(const ModelStart& start, std::string spec, std::vector<std::string> class_names)
    : spec_(std::move(spec)), seed_(start.seed), freeze_backbone_(start.freeze_backbone),
      class_names_(std::move(class_names)) {
  if (!start.init_path.empty()) {
    check_torchvision_model(spec_, "--init " + start.init_path);
    pretrained_ = read_pretrained(start.init_path);
  }
}

ModelFactory ReplicaModels::factory() {
  return [this](Device d) -> std::unique_ptr<Model> {
    auto model = build_model_from_spec(spec_, d, seed_);
    model->freeze_backbone(freeze_backbone_);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      head_offset_ = model->head_param_offset();
    }
    if (pretrained_) {
      // One replica at a time: each load holds the model's weights in host
      // memory while it checks them, and N at once would hold N copies.
      std::lock_guard<std::mutex> one_load(load_mutex_);
      PretrainedLoad loaded = load_pretrained(*model, *pretrained_, class_names_);
      std::lock_guard<std::mutex> lock(mutex_);
      init_result_ = loaded;
    }
    return model;
  };
}

}  // namespace lockstep::app
