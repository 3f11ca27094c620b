// Training through lockstep's library API: a data set, a model on every GPU
// (or the CPU), single steps with a stop request from another thread, then
// epochs with a progress callback, then an evaluation.
//   train_fashion_mnist [STEPS] [DATA]
#include <lockstep/data/loader.h>
#include <lockstep/data/open_dataset.h>
#include <lockstep/training/trainer.h>
#include <lockstep/layers/models.h>

#include <cstdio>
#include <exception>
#include <string>
#include <thread>

using namespace lockstep;

int main(int argc, char** argv) try {
  int steps = argc > 1 ? std::stoi(argv[1]) : 50;
  std::string path = argc > 2 ? argv[2] : data::default_data_path();

  data::DataSets sets = data::open_dataset(path);
  data::LoaderConfig loader_config;
  loader_config.batch_size = 64;
  data::Loader train(sets.train, loader_config);
  auto test = data::make_eval_loader(sets.test, 256, train.normalization());

  std::vector<Device> devices;
  for (int i = 0; i < cuda_device_count(); ++i) devices.push_back(Device::cuda(i));
  if (devices.empty()) devices.push_back(Device::cpu());
  std::string spec = model_spec("mlp", train.sample_shape(), train.num_classes(), {});
  ReplicaManager replicas([&](Device d) -> std::unique_ptr<Model> { return build_model_from_spec(spec, d, 1); },
                          devices);

  // Single steps: pull a batch, take an optimizer step.
  SgdConfig sgd;
  train.start_epoch(0, 0);
  HostBatch batch;
  for (int s = 0; s < steps && train.next(batch); ++s) {
    StepMetrics m = replicas.train_step(batch, 0.05f, sgd);
    if (s % 10 == 0) std::printf("step %d: loss %.4f\n", s, m.loss_sum / m.count);
  }

  // Epochs through the Trainer, stopped from another thread after `steps` more steps.
  TrainerConfig config;
  config.epochs = 1;
  config.schedule.base_lr = 0.05f;
  Trainer trainer(replicas, train, nullptr, config);
  trainer.on_step = [&](int64_t step, double loss) {
    if (step % 10 == 0) std::printf("trainer step %lld: loss %.4f\n", static_cast<long long>(step), loss);
    if (step >= 2 * steps) std::thread([&] { trainer.request_stop(); }).join();
  };
  bool finished = trainer.run();
  std::printf("trainer %s after %lld steps\n", finished ? "finished" : "stopped", static_cast<long long>(trainer.step()));

  Evaluation e = evaluate_model(replicas, *test);
  std::printf("test accuracy %.2f%% over %lld images\n", 100.0 * e.accuracy, static_cast<long long>(e.count));
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "train_fashion_mnist: %s\n", e.what());
  return 1;
}
