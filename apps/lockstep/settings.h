#pragma once
// What `lockstep train` runs with: every flag's value, parsed (train_flags.h),
// and which flags were given; the defaults chosen for the machine (GPU or
// CPU); and their round trip through a checkpoint's metadata so that --resume
// continues with the same settings.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "data/image_folder.h"
#include "duration.h"
#include "given_flags.h"
#include "kernels/memory_format.h"
#include "runtime/device.h"
#include "runtime/precision.h"
#include "training/lr_schedule.h"

namespace lockstep::app {

// AdamW's (beta1, beta2), written "0.9,0.999".
struct AdamBetas {
  float first = 0.9f, second = 0.999f;
  bool operator==(const AdamBetas&) const = default;
};

struct TrainSettings {
  std::string data;           // data path (default: Fashion-MNIST)
  std::string test_data;      // optional separate test set
  std::string model;
  int64_t epochs = 0;
  int64_t batch = 0;            // global batch
  int64_t batch_per_device = 0; // alternative to batch: batch = this * replicas
  float lr = 0.0f;
  bool scale_lr = false;        // linear scaling rule: lr * batch / reference_batch
  // sgd or adamw (torch.optim.AdamW); saved, and never changed on resume.
  std::string optimizer = "sgd";
  float momentum = 0.9f;        // SGD's
  bool nesterov = false;        // SGD's
  AdamBetas betas;              // AdamW's
  float eps = 1e-8f;            // AdamW's
  // Not given: 5e-4 under SGD, 0.05 under AdamW (its table entry).
  float weight_decay = 5e-4f;
  float clip_grad_norm = 0.0f;  // 0: no gradient clipping
  float label_smoothing = 0.0f; // e in [0, 1): train towards (1 - e) onehot + e / classes
  // --ema D in (0, 1): the exponential moving average of the weights and
  // statistics (timm's ModelEmaV3 with its warm-up; kernels/ema_math.h), which
  // evaluation uses; 0: none. Saved, may change on resume.
  double ema = 0.0;
  // Mixup and CutMix (data/mix.h, timm's Mixup in 'batch' mode): the Beta
  // alphas (0: off), the chance a batch is mixed, and the chance of CutMix
  // when both alphas are set.
  double mixup = 0.0;
  double cutmix = 0.0;
  double mixup_prob = 1.0;
  double mixup_switch_prob = 0.5;
  // Fine-tuning (the backbone: every layer before the classifier). Frozen:
  // only the classifier trains, the backbone runs as in inference (its batch
  // norm keeps its statistics). Otherwise the backbone's learning rate is
  // lr * backbone_lr_scale. Both saved.
  bool freeze_backbone = false;
  float backbone_lr_scale = 1.0f;
  ScheduleKind schedule = ScheduleKind::cosine;
  double warmup_epochs = 0.0;
  std::string devices = "all";
  int replicas = 1;             // replicas per device (several on one GPU or the CPU)
  uint64_t seed = 1;
  std::string checkpoint;
  std::string resume;
  std::string init;             // pretrained weights (safetensors state dict) a tv-* model starts from; not saved
  std::string metrics;
  std::string augment;          // "none", "crop-flip", "random-resized-crop" or "trivial"
  // Where GPU replicas' batches are augmented: "gpu" (they cross as bytes)
  // or "cpu" (the loader's threads). Not saved: the values are the same.
  std::string augment_on = "gpu";
  // dataset (the training set's mean and std per channel), imagenet
  // (ImageNet's, which pretrained weights expect) or none. Empty until
  // resolved once the data is open: imagenet with --init on RGB data,
  // dataset otherwise. Saved, with the values, so eval, predict and
  // --resume normalise alike.
  std::string normalize;
  std::string input = "3x32x32"; // image folders: CxHxW the images are resized to
  int threads = 2;              // loader threads
  // Image folders: decoded samples are kept in memory when they fit this many
  // MiB (0: decoded every epoch; below 0: a quarter of the memory available
  // when the run starts). Not saved: it changes speed, never results.
  double cache_mb = -1.0;
  int64_t limit = 0;            // use only the first N training samples (0: all)
  int64_t test_limit = 0;
  bool dropout = true;
  bool skip_bad_images = false;
  bool drop_last = false;
  bool force = false;           // --checkpoint/--metrics may overwrite a file of another kind (never an input)
  int64_t max_image_pixels = data::kDefaultMaxImagePixels;  // images declaring more are refused
  double test_fraction = 0.1;   // a single class folder: the share of each class held out for testing
  std::string from_cache_file;  // the flags taken from the --data cache file (not given), for the start report
  std::optional<Duration> time_limit;  // "10m", "1h", "20s": stop, evaluate and checkpoint past it
  std::string plot;             // training-curve PNG (empty: beside the checkpoint); not saved
  // The checkpoint of the epoch with the best test accuracy is also written
  // to RunFiles::best_path (run_plan.h); saved, so a resumed run keeps it up.
  bool keep_best = false;
  int64_t early_stop = 0;       // stop after this many epochs without a better test accuracy (0: never)
  bool sync_bn = false;         // batch-norm statistics over all replicas in forward
  double bucket_mb = 25.0;      // gradient all-reduce bucket size (MiB); results do not depend on it
  double first_bucket_mb = 1.0; // the first bucket's, smaller so communication starts early in backward
  // auto, on or off: GPU steps replayed from a CUDA graph (ReplicaOptions::
  // cuda_graphs) where the replicas allow one; on also says when they do
  // not, and is refused on the CPU; not saved.
  std::string cuda_graphs = "auto";
  // fp32, tf32 or bf16 (runtime/precision.h): tf32 allows TF32 tensor-core
  // math on a GPU and computes in FP32 on the CPU; bf16 stores activations in
  // bf16 on a GPU and rounds them in FP32 storage on the CPU. Saved, so
  // --resume continues in the same precision.
  Precision precision = Precision::tf32;
  // nchw or nhwc (runtime/memory_format_option.h): how the activations lie
  // (ContextOptions::memory_format); the weights, checkpoints and
  // predictions do not change. Not given, its table entry sets the library's
  // default for the precision and device (default_memory_format: nhwc for
  // bf16 on a GPU, nchw otherwise). Saved as resolved, so --resume continues
  // in the same format.
  MemoryFormat memory_format = MemoryFormat::nchw;
  GivenFlags given;  // the flags on the command line
};

// --betas "B1,B2": each a number in [0, 1), or an Error naming the flag and the text.
AdamBetas parse_betas(const std::string& text);

}  // namespace lockstep::app
