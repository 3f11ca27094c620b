// Every setting of `lockstep train`, declared once (settings_table.h says who
// reads what). The metadata keys and values are those of every checkpoint
// written so far, which older checkpoints resume with: a key renamed here
// would leave their setting behind.
#include "settings_table.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "base/error.h"
#include "base/printable.h"
#include "data/loader_threads.h"
#include "layers/models.h"
#include "runtime/memory_format_option.h"
#include "setting_declaration.h"
#include "whole_number.h"
#include "training/file_checksum.h"

namespace lockstep::app {

namespace {

using S = TrainSettings;

void check_model(const S& s) {
  // Named here, before any data is read (a model spec's own error would show its internals).
  const std::vector<std::string> models = model_names();
  if (std::find(models.begin(), models.end(), s.model) != models.end()) return;
  std::string list;
  for (const std::string& m : models) list += (list.empty() ? "" : ", ") + m;
  LS_FAIL("--model '", printable(s.model, 60, ""), "': expected one of ", list);
}

// Gradient bucket sizes: the units of the sums across replicas and processes.
void check_bucket(double mib, const char* flag) {
  constexpr double kMaxBucketMb = 1 << 20;  // 1 TiB: far above any GPU's memory
  LS_CHECK(std::isfinite(mib) && mib > 0.0 && mib <= kMaxBucketMb, flag, " must be a number of MiB above 0 and at most ",
           kMaxBucketMb, ", got ", mib);
}

// A frozen or slower backbone, said before the first step; a scaled one
// without pretrained weights starts from random layers, which is rarely meant.
void note_backbone(const S& s) {
  if (s.freeze_backbone)
    std::printf("backbone frozen: the classifier alone trains, the layers before it run as in inference\n");
  else if (s.backbone_lr_scale != 1.0f)
    std::printf("the layers before the classifier learn at %g x the learning rate\n", s.backbone_lr_scale);
  if (s.backbone_lr_scale != 1.0f && s.init.empty() && s.resume.empty())
    std::fprintf(stderr, "notice: --backbone-lr-scale %g without --init: the layers before the classifier start "
                 "untrained (random), not pretrained; give --init FILE.safetensors to fine-tune pretrained weights\n",
                 s.backbone_lr_scale);
}

// Mixup and CutMix as the run takes them.
void note_mixing(const S& s) {
  if (s.mixup > 0.0 || s.cutmix > 0.0)
    std::printf("mixing batches: mixup %g, cutmix %g, a batch mixed with probability %g%s\n", s.mixup, s.cutmix,
                s.mixup_prob,
                s.mixup > 0.0 && s.cutmix > 0.0
                    ? (", cutmix chosen with probability " + std::to_string(s.mixup_switch_prob)).c_str()
                    : "");
}

// AdamW's hyper-parameters as the run takes them (its defaults are not SGD's).
void note_optimizer(const S& s) {
  if (s.optimizer == "adamw")
    std::printf("optimizer adamw: lr %g, betas %g,%g, eps %g, decoupled weight decay %g\n", s.lr, s.betas.first,
                s.betas.second, s.eps, s.weight_decay);
}

// What evaluation reads with --ema.
void note_ema(const S& s) {
  if (s.ema > 0.0)
    std::printf("weights: exponential moving average (decay %g) for evaluation, the per-class table and the best "
                "epoch; the checkpoint keeps both\n", s.ema);
}

std::vector<SettingEntry> declare_settings() {
  const CLI::Validator count = whole_number(std::numeric_limits<int64_t>::max());
  std::vector<SettingEntry> t;
  // The data's paths are saved but not compared across processes (the same
  // data may lie elsewhere on another host): world_agreement.cpp compares
  // the data's identity instead.
  t.push_back(setting(&S::data, "--data", "data set: IDX or CIFAR-10 folder, or image folder").saved("data"));
  t.push_back(setting(&S::test_data, "--test-data", "separate test set").saved("test_data"));
  // The model is saved and compared as the spec it builds (the checkpoint's
  // own record, and "the model" in the agreement), not as this name.
  t.push_back(setting(&S::model, "--model",
                      "mlp, simple-cnn, resnet18, resnet20, resnet50, vgg11-bn, vgg16, vgg16-bn, vgg-f or deep-cnn "
                      "(CIFAR-sized variants), or torchvision's ImageNet architectures exactly, for --init: "
                      "tv-resnet18, tv-resnet34, tv-resnet50, tv-vgg16 or tv-vgg16-bn")
                  // small-cnn (batch norm, 'same' convolutions, pooling before BN): about half
                  // simple-cnn's step time and past 90% on Fashion-MNIST by its third epoch; 5
                  // cosine epochs end near 91.5% in under 4 minutes on 2 cores.
                  .defaulted([](const S&, Device d) { return std::string(d.is_cuda() ? "resnet18" : "small-cnn"); })
                  .checked(check_model));
  // Not saved; compared by the weights' contents (the path may differ
  // between hosts): a process that read other weights would train another
  // model under the same steps, and only the first process's would be saved.
  t.push_back(setting(&S::init, "--init",
                      "start a tv-* model from these pretrained weights: a state dict in safetensors form with "
                      "torchvision's or timm's names (F32, F16 or BF16); another class count, or other "
                      "classes (an export names them), re-initialises the classifier")
                  .agreed_as("--init (the pretrained weights' contents)",
                             [](const S& s) { return s.init.empty() ? "none" : file_checksum(s.init); }));
  t.push_back(setting(&S::epochs, "--epochs", "epochs to train")
                  .validated(count, CLI::PositiveNumber)
                  .defaulted([](const S&, Device d) { return int64_t(d.is_cuda() ? 15 : 5); })
                  .saved("epochs")
                  .agreed()
                  .checked([](const S& s) { LS_CHECK(s.epochs >= 1, "--epochs must be at least 1, got ", s.epochs); }));
  t.push_back(setting(&S::batch, "--batch", "global mini-batch size")
                  .validated(count, CLI::PositiveNumber)
                  .defaulted([](const S&, Device d) { return int64_t(d.is_cuda() ? 512 : 64); })
                  .saved("batch", OnResume::epoch_shape)
                  .agreed("--batch (the global batch)")
                  .checked([](const S& s) {
                    LS_CHECK(s.batch >= 1 || s.batch_per_device >= 1, "--batch must be at least 1, got ", s.batch);
                  }));
  t.push_back(setting(&S::batch_per_device, "--batch-per-device", "mini-batch per replica (instead of --batch)")
                  .validated(count, CLI::PositiveNumber)
                  .checked([](const S& s) {
                    LS_CHECK(!(s.given.contains("--batch") && s.given.contains("--batch-per-device")),
                             "--batch (global) and --batch-per-device (per replica) say the same thing twice: give "
                             "one of them");
                  }));
  // Settled before any default is applied: those of --lr and --weight-decay follow it.
  t.push_back(setting(&S::optimizer, "--optimizer",
                      "sgd (with --momentum, --nesterov) or adamw (PyTorch's AdamW, with --betas, --eps and "
                      "decoupled --weight-decay; its defaults --lr 1e-3 and --weight-decay 0.05, as timm's); "
                      "a resumed run keeps its checkpoint's")
                  .validated(CLI::IsMember({"sgd", "adamw"}))
                  .saved("optimizer", OnResume::fixed)
                  .agreed()
                  .checked([](const S& s) {
                    LS_CHECK(s.optimizer == "sgd" || s.optimizer == "adamw", "--optimizer ", s.optimizer,
                             ": expected sgd or adamw");
                    const bool sgd_flags = s.given.contains("--momentum") || s.given.contains("--nesterov");
                    LS_CHECK(s.optimizer == "sgd" || !sgd_flags,
                             "--momentum and --nesterov are SGD's; AdamW's moments follow --betas B1,B2");
                    LS_CHECK(s.optimizer == "adamw" || (!s.given.contains("--betas") && !s.given.contains("--eps")),
                             "--betas and --eps are AdamW's: give --optimizer adamw, or leave them out");
                  })
                  .noted(note_optimizer));
  t.push_back(setting(&S::betas, "--betas", "AdamW's B1,B2: the decay rates of its two moments (default 0.9,0.999)")
                  .saved("betas")
                  .agreed());
  t.push_back(setting(&S::eps, "--eps", "AdamW's eps, added to the second moment's root (default 1e-8)")
                  .validated(CLI::PositiveNumber)
                  .saved("eps")
                  .agreed()
                  .checked([](const S& s) {
                    LS_CHECK(s.eps > 0.0f && std::isfinite(s.eps), "--eps must be a positive number, got ", s.eps);
                  }));
  t.push_back(setting(&S::lr, "--lr",
                      "base learning rate (default: 0.05 on the CPU, 0.2 on GPUs; 1e-3 with --optimizer adamw)")
                  .validated(CLI::PositiveNumber)
                  // AdamW's as timm's: SGD's rates would make it diverge.
                  .defaulted([](const S& s, Device d) { return s.optimizer == "adamw" ? 1e-3f : d.is_cuda() ? 0.2f : 0.05f; })
                  .saved("lr")
                  .agreed("--lr (as scaled)")
                  .checked([](const S& s) {
                    LS_CHECK(s.lr > 0.0f && std::isfinite(s.lr), "--lr must be a positive number, got ", s.lr);
                  }));
  t.push_back(setting(&S::scale_lr, "--scale-lr", "multiply the lr by the replica count (with --batch-per-device)")
                  .checked([](const S& s) {
                    LS_CHECK(!s.scale_lr || s.given.contains("--batch-per-device"),
                             "--scale-lr multiplies --lr by the replica count when the batch grows with it "
                             "(--batch-per-device); with a global --batch it would change nothing: give "
                             "--batch-per-device or leave --scale-lr out");
                  }));
  t.push_back(setting(&S::momentum, "--momentum", "SGD momentum")
                  .validated(CLI::Range(0.0, 0.999999))
                  .saved("momentum")
                  .agreed()
                  .checked([](const S& s) {
                    LS_CHECK(s.momentum >= 0.0f && s.momentum < 1.0f, "--momentum must lie in [0, 1), got ",
                             s.momentum);
                  }));
  t.push_back(setting(&S::nesterov, "--nesterov", "Nesterov momentum").saved("nesterov").agreed().checked([](const S& s) {
    LS_CHECK(!s.nesterov || s.momentum > 0.0f, "--nesterov is a kind of momentum: it needs --momentum above 0");
  }));
  t.push_back(setting(&S::sync_bn, "--sync-bn",
                      "batch-norm statistics over all replicas, all-reduced in forward (N replicas train as one)")
                  .saved("sync_bn", OnResume::another_run)
                  .agreed());
  // Not saved (results do not depend on them), but compared: the buckets
  // are the units of the sums across processes.
  t.push_back(setting(&S::bucket_mb, "--bucket-mb",
                      "gradient all-reduce bucket size in MiB (overlap with backward; results do not change)")
                  .agreed_as("", [](const S& s) { return std::to_string(s.bucket_mb); })
                  .checked([](const S& s) { check_bucket(s.bucket_mb, "--bucket-mb"); }));
  t.push_back(setting(&S::first_bucket_mb, "--first-bucket-mb",
                      "size in MiB of the first bucket, the last layers' gradients, sent early in backward")
                  .agreed_as("", [](const S& s) { return std::to_string(s.first_bucket_mb); })
                  .checked([](const S& s) { check_bucket(s.first_bucket_mb, "--first-bucket-mb"); }));
  // Checked against the devices in settings_checks.cpp.
  t.push_back(setting(&S::cuda_graphs, "--cuda-graphs",
                      "auto (the default), on or off: GPU replicas capture a step into a CUDA graph and replay "
                      "it while the batch size stays, where each replica has a GPU of its own in one process "
                      "(others run eagerly; on says so); off runs every step eagerly")
                  .validated(CLI::IsMember({"auto", "on", "off"})));
  // A precision or memory format this build does not know is the
  // checkpoint's error (reworded as such); both saved so --resume continues
  // in the same.
  t.push_back(setting(&S::precision, "--precision",
                      "fp32 (strict), tf32 (the default: TF32 tensor-core convolutions and GEMMs on a GPU, "
                      "as PyTorch's default; FP32 on the CPU, as PyTorch's CPU) or bf16 (mixed precision as "
                      "PyTorch AMP: bf16 activations on a GPU, bf16 values in FP32 storage on the CPU)")
                  .validated(CLI::IsMember({"fp32", "tf32", "bf16"}))
                  .saved("precision", OnResume::another_run)
                  .agreed());
  t.push_back(setting(&S::memory_format, "--memory-format",
                      "nchw or nhwc: how the activations lie in memory (channels-last: cuDNN's NHWC "
                      "convolutions on a GPU, oneDNN's on the CPU); the weights, checkpoints and predictions are "
                      "the same. Default: nhwc on the CPU where its convolutions run on oneDNN (no reorders) and "
                      "for --precision bf16 on a GPU (as PyTorch AMP with channels_last), nchw otherwise")
                  .validated(CLI::IsMember({"nchw", "nhwc"}))
                  // The library's rule, for what this run trains with.
                  .defaulted([](const S& s, Device d) { return default_memory_format(s.precision, d); })
                  .saved("memory_format")
                  .agreed());
  t.push_back(setting(&S::weight_decay, "--weight-decay",
                      "on conv/linear weights, not biases and batch-norm parameters (as timm); SGD adds wd*w to "
                      "the gradient, AdamW decays w by lr*wd (default 5e-4; 0.05 with --optimizer adamw)")
                  .validated(CLI::NonNegativeNumber)
                  .defaulted([](const S& s, Device) { return s.optimizer == "adamw" ? 0.05f : s.weight_decay; })
                  .saved("weight_decay")
                  .agreed()
                  .checked([](const S& s) {
                    LS_CHECK(s.weight_decay >= 0.0f, "--weight-decay must not be negative, got ", s.weight_decay);
                  }));
  t.push_back(setting(&S::clip_grad_norm, "--clip-grad-norm",
                      "scale the gradients down to this global L2 norm when above it (0: off)")
                  .validated(CLI::NonNegativeNumber)
                  .saved("clip_grad_norm")
                  .agreed()
                  .checked([](const S& s) {
                    LS_CHECK(s.clip_grad_norm >= 0.0f && std::isfinite(s.clip_grad_norm),
                             "--clip-grad-norm must be a non-negative number (0: off), got ", s.clip_grad_norm);
                  }));
  t.push_back(setting(&S::label_smoothing, "--label-smoothing",
                      "E in [0, 1): train towards (1 - E) on the label and E spread over all classes "
                      "(PyTorch's CrossEntropyLoss(label_smoothing=E)); test losses stay plain cross-entropy")
                  .validated(CLI::Range(0.0f, 0.999999f))
                  .saved("label_smoothing")
                  .agreed()
                  .checked([](const S& s) {
                    LS_CHECK(s.label_smoothing >= 0.0f && s.label_smoothing < 1.0f, "--label-smoothing ",
                             s.label_smoothing, ": expected a number in [0, 1)");
                  }));
  // The decay may change on resume (the average goes on with the new one);
  // a checkpoint without an average starts one from its weights (Trainer::resume).
  t.push_back(setting(&S::ema, "--ema",
                      "D in (0, 1): keep an exponential moving average of the weights and batch-norm statistics "
                      "(timm's ModelEmaV3 with its warm-up: decay min(D, 1 - (1 + k)^(-2/3)) after step k), which "
                      "evaluation, --keep-best, eval, predict and export then use; e.g. 0.999. Default: none")
                  .validated(CLI::Range(0.0, 1.0))
                  .saved("ema")
                  .agreed()
                  .checked([](const S& s) {
                    LS_CHECK(!s.given.contains("--ema") || (s.ema > 0.0 && s.ema < 1.0), "--ema ", s.ema,
                             ": expected a decay strictly between 0 and 1, as 0.999 (leave the flag out for none)");
                  })
                  .noted(note_ema));
  // Mixup and CutMix may change on resume: the batches from the resumed one
  // on are mixed with the new values (each batch's draw comes from the seed,
  // the epoch and the batch, never from what came before).
  t.push_back(setting(&S::mixup, "--mixup",
                      "A >= 0: mix each training batch with its reverse, x lam + x_reversed (1 - lam), lam from "
                      "Beta(A, A), and train towards the labels mixed alike (timm's --mixup; DeiT: 0.8). 0: off")
                  .validated(CLI::NonNegativeNumber)
                  .saved("mixup")
                  .agreed()
                  .checked([](const S& s) {
                    LS_CHECK(s.mixup >= 0.0 && std::isfinite(s.mixup), "--mixup ", s.mixup,
                             ": expected a number >= 0 (0: off)");
                  })
                  .noted(note_mixing));
  t.push_back(setting(&S::cutmix, "--cutmix",
                      "A >= 0: paste a box of each training batch's reverse into it, of area about 1 - lam with "
                      "lam from Beta(A, A), and weigh the labels by the areas (timm's --cutmix; DeiT: 1.0). 0: off")
                  .validated(CLI::NonNegativeNumber)
                  .saved("cutmix")
                  .agreed()
                  .checked([](const S& s) {
                    LS_CHECK(s.cutmix >= 0.0 && std::isfinite(s.cutmix), "--cutmix ", s.cutmix,
                             ": expected a number >= 0 (0: off)");
                  }));
  t.push_back(setting(&S::mixup_prob, "--mixup-prob",
                      "P in [0, 1]: the chance that a batch is mixed at all with --mixup or --cutmix (timm's)")
                  .validated(CLI::Range(0.0, 1.0))
                  .saved("mixup_prob")
                  .agreed()
                  .checked([](const S& s) {
                    LS_CHECK(s.mixup_prob >= 0.0 && s.mixup_prob <= 1.0, "--mixup-prob ", s.mixup_prob,
                             ": expected a number in [0, 1]");
                  }));
  t.push_back(setting(&S::mixup_switch_prob, "--mixup-switch-prob",
                      "P in [0, 1]: with both --mixup and --cutmix, the chance that a mixed batch takes CutMix "
                      "rather than mixup (timm's, default 0.5)")
                  .validated(CLI::Range(0.0, 1.0))
                  .saved("mixup_switch_prob")
                  .agreed()
                  .checked([](const S& s) {
                    LS_CHECK(s.mixup_switch_prob >= 0.0 && s.mixup_switch_prob <= 1.0, "--mixup-switch-prob ",
                             s.mixup_switch_prob, ": expected a number in [0, 1]");
                  }));
  // A frozen backbone without pretrained weights trains a classifier on
  // random features: nearly always a forgotten --init, and a run that spends
  // all its time reaching a fraction of what it could. A serious tool stops
  // it at the door rather than leave a notice to scroll by (a backbone that
  // is only scaled still learns: note_backbone says it is untrained). A
  // resumed run goes on with its checkpoint's weights, pretrained or not.
  t.push_back(setting(&S::freeze_backbone, "--freeze-backbone",
                      "train the classifier alone (the last layer with weights); the layers before it run as "
                      "in inference, their batch norm keeping its statistics")
                  .saved("freeze_backbone")
                  .agreed()
                  .checked([](const S& s) {
                    LS_CHECK(!s.freeze_backbone || !s.init.empty() || !s.resume.empty(),
                             "--freeze-backbone trains the classifier alone on the features of the layers before "
                             "it, and without --init those layers are untrained (random): give --init "
                             "FILE.safetensors (pretrained weights, docs/fine-tuning.md), or leave "
                             "--freeze-backbone out to train every layer");
                  }));
  t.push_back(setting(&S::backbone_lr_scale, "--backbone-lr-scale",
                      "the layers before the classifier learn at this times --lr (pretrained layers "
                      "change slowly, the new classifier fast); 0 freezes their weights")
                  .validated(CLI::NonNegativeNumber)
                  .saved("backbone_lr_scale")
                  .agreed()
                  .checked([](const S& s) {
                    LS_CHECK(std::isfinite(s.backbone_lr_scale) && s.backbone_lr_scale >= 0.0f,
                             "--backbone-lr-scale must be a number >= 0, got ", s.backbone_lr_scale);
                    LS_CHECK(!s.freeze_backbone || s.backbone_lr_scale == 1.0f,
                             "--freeze-backbone trains the classifier alone, --backbone-lr-scale ",
                             s.backbone_lr_scale, " trains the layers before it too: give one of the two");
                  })
                  .noted(note_backbone));
  t.push_back(setting(&S::schedule, "--schedule", "constant, step or cosine")
                  .validated(CLI::IsMember({"constant", "step", "cosine"}))
                  .saved("schedule")
                  .agreed()
                  .read_in_own_words());
  t.push_back(setting(&S::warmup_epochs, "--warmup-epochs", "linear warmup")
                  .validated(CLI::NonNegativeNumber)
                  .defaulted([](const S& s, Device d) { return d.is_cuda() ? 1.0 : s.warmup_epochs; })
                  .saved("warmup_epochs")
                  .agreed()
                  .checked([](const S& s) {
                    LS_CHECK(s.warmup_epochs >= 0.0, "--warmup-epochs must not be negative, got ", s.warmup_epochs);
                    LS_CHECK(s.warmup_epochs <= static_cast<double>(s.epochs), "--warmup-epochs ", s.warmup_epochs,
                             " lasts beyond the run of ", s.epochs, " epochs: the learning rate would never reach --lr");
                  }));
  t.push_back(setting(&S::devices, "--devices", "all, cpu, or GPU ordinals like 0,1"));
  t.push_back(setting(&S::replicas, "--replicas", "replicas on the one device given").validated(CLI::PositiveNumber));
  t.push_back(setting(&S::seed, "--seed", "seed of initialisation, order and augmentation")
                  .validated(whole_number(std::numeric_limits<uint64_t>::max()))
                  .saved("seed", OnResume::another_run)
                  .agreed());
  // Outputs and where to resume from are never taken from a checkpoint (the
  // checksum does not cover its metadata, and an edited one must not choose
  // what a run overwrites; older checkpoints' "plot" entry is ignored);
  // where a resumed run starts is compared across processes in
  // world_agreement.cpp.
  t.push_back(setting(&S::checkpoint, "--checkpoint", "checkpoint written every epoch and on Ctrl-C"));
  t.push_back(setting(&S::resume, "--resume", "continue from this checkpoint"));
  t.push_back(setting(&S::metrics, "--metrics", "write JSON lines of steps and epochs here"));
  t.push_back(setting(&S::augment, "--augment",
                      "none, crop-flip (a shifted crop of the image padded with zeros, and a mirror), "
                      "random-resized-crop (8-100% of the area at aspect 3/4-4/3 resized back, and a mirror, as "
                      "torchvision's ImageNet training; image folders then keep their aspect ratio, and "
                      "eval and predict take the centred 87.5%) or trivial (crop-flip, then torchvision's "
                      "TrivialAugmentWide: one of 14 operations at one of 31 magnitudes, on images of 1 or 3 "
                      "channels)")
                  .validated(CLI::IsMember({"none", "crop-flip", "random-resized-crop", "trivial"}))
                  .defaulted([](const S&, Device d) { return std::string(d.is_cuda() ? "crop-flip" : "none"); })
                  .saved("augment", OnResume::another_run)
                  .agreed()
                  .checked([](const S& s) {
                    LS_CHECK(s.augment == "none" || s.augment == "crop-flip" || s.augment == "random-resized-crop" ||
                                 s.augment == "trivial",
                             "--augment ", s.augment, ": expected none, crop-flip, random-resized-crop or trivial");
                  }));
  // Not saved: the values are the same either way.
  t.push_back(setting(&S::augment_on, "--augment-on",
                      "GPU training: gpu (the default: batches cross as bytes and are cropped, flipped and "
                      "normalised there) or cpu (the loader's threads do it and send floats, four times the "
                      "bytes); the same values either way. CPU replicas always augment in the loader")
                  .validated(CLI::IsMember({"gpu", "cpu"})));
  t.push_back(setting(&S::normalize, "--normalize",
                      "dataset (the training set's mean and std per channel), imagenet (ImageNet's RGB mean "
                      "and std, what pretrained weights expect), init (the mean and std --init's file says its "
                      "model was trained with: a lockstep export's) or none. Default: init when --init's file "
                      "says, imagenet with other --init weights on RGB data, else dataset")
                  .validated(CLI::IsMember({"dataset", "imagenet", "init", "none"}))
                  .saved("normalize", OnResume::another_run)
                  .agreed()
                  .checked([](const S& s) {
                    LS_CHECK(s.normalize.empty() || s.normalize == "dataset" || s.normalize == "imagenet" ||
                                 s.normalize == "init" || s.normalize == "none",
                             "--normalize ", s.normalize, ": expected dataset, imagenet, init or none");
                  }));
  t.push_back(setting(&S::input, "--input", "image folders: resize to CxHxW")
                  .saved("input", OnResume::another_run)
                  .agreed());
  t.push_back(setting(&S::threads, "--threads",
                      "loader threads. Default: on GPUs the cores they leave (2 to 32), on the CPU 2")
                  .validated(CLI::PositiveNumber)
                  .checked([](const S& s) { data::check_loader_threads(s.threads, "--threads"); }));
  t.push_back(setting(&S::limit, "--limit", "train on this many samples only")
                  .validated(count, CLI::NonNegativeNumber)
                  .saved("limit", OnResume::epoch_shape)
                  .agreed()
                  .checked([](const S& s) {
                    LS_CHECK(!s.given.contains("--limit") || s.limit >= 1,
                             "--limit 0 trains on no sample: give at least 1 (without --limit, every sample trains)");
                  }));
  t.push_back(setting(&S::test_limit, "--test-limit", "test on this many samples only")
                  .validated(count, CLI::NonNegativeNumber)
                  .saved("test_limit")
                  .agreed()
                  .checked([](const S& s) {
                    LS_CHECK(!s.given.contains("--test-limit") || s.test_limit >= 1,
                             "--test-limit 0 tests on no sample: give at least 1 (without --test-limit, every test "
                             "sample counts)");
                  }));
  t.push_back(setting(&S::dropout, "--no-dropout", "build the model without dropout")
                  .turned_off_by_flag()
                  .saved("dropout", OnResume::another_run)
                  .agreed("--no-dropout (dropout on)"));
  t.push_back(setting(&S::skip_bad_images, "--skip-bad-images", "skip undecodable images, report them"));
  t.push_back(setting(&S::drop_last, "--drop-last", "drop the last partial batch of each epoch")
                  .saved("drop_last", OnResume::epoch_shape)
                  .agreed());
  t.push_back(setting(&S::force, "--force",
                      "let --checkpoint/--metrics overwrite an existing file of another kind (never an input)"));
  // Not saved: it changes speed, never results. Not given, it is -1 (a
  // quarter of the memory); NaN compares false to every bound, so it is
  // named here.
  t.push_back(setting(&S::cache_mb, "--cache-mb",
                      "image folders: keep the decoded images in memory when they fit this many MiB, so each "
                      "is decoded once (0: decode every epoch; default: a quarter of the memory available)")
                  .validated(CLI::NonNegativeNumber)
                  .checked([](const S& s) {
                    LS_CHECK(!s.given.contains("--cache-mb") || (std::isfinite(s.cache_mb) && s.cache_mb >= 0.0),
                             "--cache-mb must be a number of MiB, 0 or more (0: decode every epoch), got ",
                             s.cache_mb);
                  }));
  t.push_back(setting(&S::max_image_pixels, "--max-image-pixels",
                      "refuse images whose header declares more pixels (default PIL's 178956970)")
                  .validated(CLI::PositiveNumber)
                  .checked([](const S& s) {
                    LS_CHECK(s.max_image_pixels >= 1, "--max-image-pixels must be at least 1, got ",
                             s.max_image_pixels);
                  }));
  t.push_back(setting(&S::test_fraction, "--test-fraction",
                      "a single class folder: share of each class held out for testing (default 0.1)")
                  .saved("test_fraction", OnResume::another_run)
                  .agreed()
                  .checked([](const S& s) {
                    LS_CHECK(s.test_fraction >= 0.0 && s.test_fraction < 1.0,
                             "--test-fraction must lie in [0, 1), got ", s.test_fraction);
                  }));
  t.push_back(setting(&S::time_limit, "--time-limit",
                      "stop past this wall time (20s, 10m, 1h), evaluate, write the checkpoint")
                  .agreed());
  // Saved, so a resumed run goes on keeping the best and counting towards its
  // stop (the best score so far is in the checkpoint too: training/best_score.h);
  // compared, since every process must stop at the same epoch. Neither can
  // run without a test set, which train_command.cpp refuses once the data is open.
  t.push_back(setting(&S::keep_best, "--keep-best",
                      "also write the checkpoint of the epoch with the best test accuracy so far to "
                      "NAME.best.safetensors beside --checkpoint NAME.safetensors (needs a test set)")
                  .saved("keep_best")
                  .agreed());
  t.push_back(setting(&S::early_stop, "--early-stop",
                      "stop after this many epochs in a row without a better test accuracy than the best "
                      "epoch's (0: never; needs a test set)")
                  .validated(count, CLI::NonNegativeNumber)
                  .saved("early_stop")
                  .agreed()
                  .checked([](const S& s) {
                    LS_CHECK(s.early_stop >= 0, "--early-stop must be 0 (off) or a number of epochs, got ",
                             s.early_stop);
                  }));
  // Not saved, as every output path.
  t.push_back(setting(&S::plot, "--plot", "training-curve PNG (default: the checkpoint's name, .png)"));
  return t;
}

}  // namespace

const std::vector<SettingEntry>& train_setting_table() {
  static const std::vector<SettingEntry> table = declare_settings();
  return table;
}

void apply_defaults(TrainSettings& s, Device device, const GivenFlags& settled) {
  for (const SettingEntry& e : train_setting_table())
    if (e.machine_default && !settled.contains(e.flag)) e.machine_default(s, device);
}

}  // namespace lockstep::app
