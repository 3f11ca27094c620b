#include "settings_checks.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "base/error.h"
#include "base/printable.h"
#include "data/loader_threads.h"
#include "layers/models.h"

namespace lockstep::app {

namespace {

void validate(const TrainSettings& s) {
  // Named here, before any data is read (a model spec's own error would show its internals).
  const std::vector<std::string> models = model_names();
  if (std::find(models.begin(), models.end(), s.model) == models.end()) {
    std::string list;
    for (const std::string& m : models) list += (list.empty() ? "" : ", ") + m;
    LS_FAIL("--model '", printable(s.model, 60, ""), "': expected one of ", list);
  }
  LS_CHECK(s.epochs >= 1, "--epochs must be at least 1, got ", s.epochs);
  LS_CHECK(s.batch >= 1 || s.batch_per_device >= 1, "--batch must be at least 1, got ", s.batch);
  LS_CHECK(s.lr > 0.0f && std::isfinite(s.lr), "--lr must be a positive number, got ", s.lr);
  LS_CHECK(s.momentum >= 0.0f && s.momentum < 1.0f, "--momentum must lie in [0, 1), got ", s.momentum);
  LS_CHECK(s.weight_decay >= 0.0f, "--weight-decay must not be negative, got ", s.weight_decay);
  LS_CHECK(s.clip_grad_norm >= 0.0f && std::isfinite(s.clip_grad_norm),
           "--clip-grad-norm must be a non-negative number (0: off), got ", s.clip_grad_norm);
  LS_CHECK(s.warmup_epochs >= 0.0, "--warmup-epochs must not be negative, got ", s.warmup_epochs);
  data::check_loader_threads(s.threads, "--threads");
  LS_CHECK(s.augment == "none" || s.augment == "crop-flip" || s.augment == "random-resized-crop", "--augment ",
           s.augment, ": expected none, crop-flip or random-resized-crop");
  LS_CHECK(s.label_smoothing >= 0.0f && s.label_smoothing < 1.0f, "--label-smoothing ", s.label_smoothing,
           ": expected a number in [0, 1)");
  LS_CHECK(std::isfinite(s.backbone_lr_scale) && s.backbone_lr_scale >= 0.0f,
           "--backbone-lr-scale must be a number >= 0, got ", s.backbone_lr_scale);
  LS_CHECK(!s.freeze_backbone || s.backbone_lr_scale == 1.0f, "--freeze-backbone trains the classifier alone, "
           "--backbone-lr-scale ", s.backbone_lr_scale, " trains the layers before it too: give one of the two");
  LS_CHECK(s.normalize.empty() || s.normalize == "dataset" || s.normalize == "imagenet" || s.normalize == "none",
           "--normalize ", s.normalize, ": expected dataset, imagenet or none");
  // Not given: -1, a quarter of the memory. NaN compares false to every bound, so it is named here.
  LS_CHECK(!s.given.contains("--cache-mb") || (std::isfinite(s.cache_mb) && s.cache_mb >= 0.0),
           "--cache-mb must be a number of MiB, 0 or more (0: decode every epoch), got ", s.cache_mb);
  LS_CHECK(s.max_image_pixels >= 1, "--max-image-pixels must be at least 1, got ", s.max_image_pixels);
  LS_CHECK(s.test_fraction >= 0.0 && s.test_fraction < 1.0, "--test-fraction must lie in [0, 1), got ",
           s.test_fraction);
}

// Settings that are each valid but together mean nothing, or would be
// ignored without a word.
void validate_combinations(const TrainSettings& s, const std::vector<Device>& devices) {
  LS_CHECK(!(s.given.contains("--batch") && s.given.contains("--batch-per-device")),
           "--batch (global) and --batch-per-device (per replica) say the same thing twice: give one of them");
  LS_CHECK(!s.scale_lr || s.given.contains("--batch-per-device"),
           "--scale-lr multiplies --lr by the replica count when the batch grows with it (--batch-per-device); "
           "with a global --batch it would change nothing: give --batch-per-device or leave --scale-lr out");
  LS_CHECK(!s.given.contains("--limit") || s.limit >= 1,
           "--limit 0 trains on no sample: give at least 1 (without --limit, every sample trains)");
  LS_CHECK(!s.given.contains("--test-limit") || s.test_limit >= 1,
           "--test-limit 0 tests on no sample: give at least 1 (without --test-limit, every test sample counts)");
  LS_CHECK(s.warmup_epochs <= static_cast<double>(s.epochs), "--warmup-epochs ", s.warmup_epochs,
           " lasts beyond the run of ", s.epochs, " epochs: the learning rate would never reach --lr");
  // A frozen backbone without pretrained weights trains a classifier on
  // random features: nearly always a forgotten --init, and a run that spends
  // all its time reaching a fraction of what it could. A serious tool stops
  // it at the door rather than leave a notice to scroll by (a backbone that
  // is only scaled still learns: start_report.cpp says it is untrained). A
  // resumed run goes on with its checkpoint's weights, pretrained or not.
  LS_CHECK(!s.freeze_backbone || !s.init.empty() || !s.resume.empty(),
           "--freeze-backbone trains the classifier alone on the features of the layers before it, and without "
           "--init those layers are untrained (random): give --init FILE.safetensors (pretrained weights, "
           "docs/fine-tuning.md), or leave --freeze-backbone out to train every layer");
  LS_CHECK(!s.nesterov || s.momentum > 0.0f, "--nesterov is a kind of momentum: it needs --momentum above 0");
  LS_CHECK(!s.cuda_graphs || devices[0].is_cuda(),
           "--cuda-graphs replays GPU steps from CUDA graphs; this run is on the CPU (--devices ", s.devices, ")");
  constexpr double kMaxBucketMb = 1 << 20;  // 1 TiB: far above any GPU's memory
  for (const auto& [value, flag] : {std::pair{s.bucket_mb, "--bucket-mb"}, {s.first_bucket_mb, "--first-bucket-mb"}})
    LS_CHECK(std::isfinite(value) && value > 0.0 && value <= kMaxBucketMb, flag,
             " must be a number of MiB above 0 "
             "and at most ",
             kMaxBucketMb, ", got ", value);
}

}  // namespace

void check_settings(const TrainSettings& s, const std::vector<Device>& devices) {
  validate(s);
  validate_combinations(s, devices);
}

}  // namespace lockstep::app
