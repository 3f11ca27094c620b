// batch-sweep: epoch time and test accuracy after a fixed number of epochs
// for each mini-batch size, on one replica and on all devices (or several
// replicas on the one device), tabulated one row per batch size as the
// distributed VGG example does. The mini-batch is the global batch: N
// replicas split it, so both columns take the same optimisation steps.
#include <cmath>
#include <cstdio>

#include "child.h"
#include "data/open_dataset.h"
#include "base/error.h"
#include "plot.h"
#include "suites.h"

namespace lockstep::bench {

SuiteResult run_batch_sweep(const Options& given) {
  Options o = given;
  const std::vector<Device> devices = resolve_devices(o.devices);
  const bool gpu = any_gpu(devices);
  LS_CHECK(!gpu || !std::any_of(devices.begin(), devices.end(), [](const Device& d) { return d.is_cpu(); }),
           "batch-sweep runs on GPUs or on the CPU, not both: pick one with --devices");
  if (o.model.empty()) o.model = gpu ? "vgg11-bn" : "mlp";
  if (o.batches.empty()) o.batches = o.batch > 0 ? std::vector<int64_t>{o.batch} : std::vector<int64_t>{16, 32, 64, 96, 128, 256};
  if (o.epochs == 0) o.epochs = o.quick ? 1 : (gpu ? 3 : 2);
  if (o.limit < 0) o.limit = o.quick ? 2048 : 0;
  if (o.test_limit < 0) o.test_limit = o.quick ? 1000 : 0;
  if (o.data.empty()) o.data = data::default_data_path();

  const bool same_device = devices.size() == 1;
  const int replicas = same_device ? (o.replicas_max > 0 ? o.replicas_max : (gpu ? 4 : 2))
                                   : static_cast<int>(devices.size());
  std::vector<Device> all;
  for (int i = 0; i < replicas; ++i) all.push_back(same_device ? devices[0] : devices[i]);
  const std::string all_label = same_device ? fmt("%d replicas on %s", replicas, devices[0].str().c_str())
                                            : fmt("%d GPUs", replicas);

  SuiteResult result;
  result.title = fmt("batch-sweep: %s on %s%s, %d epoch(s), lr %g x batch/128 constant; 1 replica on %s against %s",
                     o.model.c_str(), o.data.c_str(),
                     o.limit > 0 ? fmt(" (first %lld samples, evenly spread)", static_cast<long long>(o.limit)).c_str() : "",
                     o.epochs, o.lr, devices[0].str().c_str(), all_label.c_str());
  result.settings = {{"model", o.model},   {"data", o.data},       {"limit", o.limit},
                     {"test_limit", o.test_limit}, {"epochs", o.epochs}, {"lr_at_batch_128", o.lr},
                     {"batches", o.batches}, {"one", devices[0].str()}, {"all", device_list(all)},
                     {"same_device", same_device}, {"threads", cpu_threads(o)}, {"quick", o.quick}};
  result.table = Table({"mini-batch", "1 replica: epoch s", "1 replica: images/s", "1 replica: test acc",
                        all_label + ": epoch s", all_label + ": images/s", all_label + ": test acc",
                        same_device ? "replication overhead (same device)" : "speed-up"});

  Series one_series{"1 replica on " + devices[0].str(), {}, {}}, all_series{all_label, {}, {}};
  for (int64_t b : o.batches) {
    std::vector<std::string> cells{std::to_string(b)};
    double seconds[2] = {NAN, NAN};
    for (int column = 0; column < 2; ++column) {
      const std::vector<Device> replica_devices = column == 0 ? std::vector<Device>{devices[0]} : all;
      std::fprintf(stderr, "batch-sweep: batch %lld on %s ...\n", static_cast<long long>(b),
                   device_list(replica_devices).c_str());
      json r = run_child("_train", {"--replica-devices", device_list(replica_devices), "--model", o.model, "--data",
                                    o.data, "--limit", std::to_string(o.limit), "--test-limit",
                                    std::to_string(o.test_limit), "--epochs", std::to_string(o.epochs), "--batch",
                                    std::to_string(b), "--lr", fmt("%g", o.lr * b / 128.0), "--threads",
                                    std::to_string(cpu_threads(o))});
      json row{{"batch", b},
               {"replicas", replica_devices.size()},
               {"replica_devices", device_list(replica_devices)},
               {"lr", o.lr * b / 128.0}};
      if (failed(r)) {
        row["error"] = r["error"];
        cells.insert(cells.end(), {"failed", "", r["error"].get<std::string>().substr(0, 80)});
      } else {
        seconds[column] = r["epoch_seconds_mean"].get<double>();
        const double ips = r["epochs"].back()["images_per_second"].get<double>();
        const double acc = r["test_accuracy"].is_null() ? NAN : r["test_accuracy"].get<double>();
        row["epoch_seconds_mean"] = seconds[column];
        row["images_per_second"] = ips;
        row["test_accuracy"] = r["test_accuracy"];
        row["run"] = r;
        cells.insert(cells.end(), {fmt("%.2f", seconds[column]), fmt("%.0f", ips),
                                   std::isnan(acc) ? "-" : fmt("%.2f%%", 100.0 * acc)});
        (column == 0 ? one_series : all_series).x.push_back(static_cast<double>(b));
        (column == 0 ? one_series : all_series).y.push_back(seconds[column]);
      }
      result.rows.push_back(row);
    }
    // Distinct GPUs: speed-up over one. One shared device: how much longer the replicas take.
    cells.push_back(std::isnan(seconds[0] + seconds[1]) ? "-"
                    : same_device ? fmt("%.2fx the time", seconds[1] / seconds[0])
                                  : fmt("%.2fx", seconds[0] / seconds[1]));
    result.table.add(cells);
  }

  result.notes.push_back("epoch s: mean training time per epoch (loader included, evaluation excluded); test acc: "
                         "after the last epoch, on the test set" +
                         std::string(o.test_limit > 0 ? fmt(" (first %lld samples, evenly spread)",
                                                            static_cast<long long>(o.test_limit))
                                                      : ""));
  result.notes.push_back(fmt("learning rate: the linear scaling rule, %g x mini-batch / 128 (--lr sets the rate at "
                             "128), constant over the epochs",
                             o.lr));
  if (!gpu)
    result.notes.push_back(fmt("the %d CPU threads are shared out: N replicas on the CPU each run OpenBLAS with "
                               "max(1, %d/N) threads",
                               cpu_threads(o), cpu_threads(o)));
  result.notes.push_back("the mini-batch is the global batch: with N replicas each takes 1/N of it, so both columns "
                         "take the same steps and should reach about the same accuracy");
  if (same_device)
    result.notes.push_back(all_label + " share one device: the last column is replication overhead (same device), "
                           "not speed-up");
  if (!gpu) result.skipped.push_back(cuda_device_count() == 0 ? "GPU rows: no GPU on this machine"
                                                              : "GPU rows: --devices cpu");

  note_unused(o, {"--steps", "--warmup"}, result);

  PlotSpec spec{fmt("%s: epoch time against mini-batch size", o.model.c_str()), "mini-batch size", "seconds per epoch"};
  spec.logx = true;
  spec.logy = true;
  result.png = plot_lines(png_path(o), spec, {one_series, all_series}, result.notes);
  return result;
}

}  // namespace lockstep::bench
