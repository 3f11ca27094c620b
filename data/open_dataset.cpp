#include "data/open_dataset.h"

#include <cstdlib>
#include <filesystem>
#include <optional>

#include "data/cache_reader.h"
#include "data/cifar.h"
#include "data/idx.h"
#include "data/image_folder.h"
#include "data/split.h"
#include "data/split_folders.h"
#include "base/error.h"
#include "base/environment.h"

namespace lockstep::data {
namespace fs = std::filesystem;

namespace {

const char* kFormats =
    "expected a folder holding IDX files (train-images-idx3-ubyte[.gz], ...), CIFAR-10 batches "
    "(data_batch_*.bin, test_batch.bin), or one sub-folder per class";

void check_folder(const std::string& path) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  LS_CHECK(fs::exists(status), "data path ", path, ": no such file or folder");
  LS_CHECK(fs::is_directory(status), "data path ", path,
           ": is a file, not a lockstep cache file (lockstep cache makes one); ", kFormats);
  fs::directory_iterator probe(path, ec);
  LS_CHECK(!ec, "data path ", path, ": cannot read (", ec.message(), ")");
}

bool has_sub_folders(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return false;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (!name.empty() && name[0] != '.' && entry.is_directory(ec)) return true;
  }
  return false;
}

// Neither IDX nor CIFAR-10: it must hold class sub-folders to be an image folder.
void check_image_folder(const std::string& path) {
  LS_CHECK(has_sub_folders(path), "data path ", path, ": no IDX files, no CIFAR-10 batches and no class sub-folders; ",
           kFormats);
}

enum class Part { train, test };
ImageFolderOptions folder_options(const DataOptions& options, Part part, std::vector<std::string> classes = {}) {
  ImageFolderOptions out;
  out.center_crop = part == Part::train ? options.train_center_crop : options.test_center_crop;
  out.channels = options.channels;
  out.height = options.height;
  out.width = options.width;
  out.cache = options.cache_images;
  out.skip_bad_images = options.skip_bad_images;
  out.max_pixels = options.max_image_pixels;
  out.classes = std::move(classes);
  return out;
}

// The image folders of a data set: kept decoded in memory when asked or when
// they fit the budget together.
void settle_cache(DataSets& sets, const std::vector<std::shared_ptr<ImageFolder>>& folders,
                  const DataOptions& options) {
  for (const auto& folder : folders) sets.decoded_bytes += folder->decoded_bytes();
  sets.decoded_kept = !folders.empty() && (options.cache_images || (options.cache_budget_bytes > 0 &&
                                                                    sets.decoded_bytes <= options.cache_budget_bytes));
  if (sets.decoded_kept)
    for (const auto& folder : folders) folder->keep_decoded();
}

}  // namespace

DataSets open_dataset(const std::string& path, const DataOptions& options) {
  if (is_cache_file(path)) return open_cache_file(path, options);
  check_folder(path);
  DataSets sets;
  if (auto idx = find_idx_files(path)) {
    sets.format = DataFormat::idx;
    const std::vector<std::string> names = idx_class_names(path, idx->train_labels, options.num_classes);
    sets.train = read_idx_dataset(idx->train_images, idx->train_labels, names);
    sets.test = read_idx_dataset(idx->test_images, idx->test_labels, names);
    LS_CHECK(sets.train->sample_shape() == sets.test->sample_shape(), "IDX folder ", path, ": training images of ",
             sets.train->sample_shape().str(), " but test images of ", sets.test->sample_shape().str());
    return sets;
  }
  if (auto cifar = find_cifar10_files(path)) {
    sets.format = DataFormat::cifar10;
    const std::vector<std::string> names = cifar10_class_names(cifar->meta, options.num_classes);
    sets.train = read_cifar10(cifar->train, names);
    sets.test = read_cifar10({cifar->test}, names);
    return sets;
  }
  check_image_folder(path);
  sets.format = DataFormat::image_folder;
  if (options.use_cache_file) {
    if (std::optional<DataSets> cached = open_cache_beside(path, options, sets.cache_note)) return *cached;
  }
  const SplitFolders split = find_split_folders(path);
  if (!split.test.empty()) {
    auto train = std::make_shared<ImageFolder>(split.train, folder_options(options, Part::train));
    auto test = std::make_shared<ImageFolder>(split.test, folder_options(options, Part::test, train->class_names()));
    sets.skipped.merge(train->skipped());
    sets.skipped.merge(test->skipped());
    sets.train = train;
    sets.test = test;
    settle_cache(sets, {train, test}, options);
    return sets;
  }
  // One folder of classes (or a train/ folder alone): split per class.
  const std::string root = split.train.empty() ? path : split.train;
  auto folder = std::make_shared<ImageFolder>(root, folder_options(options, Part::train));
  sets.skipped = folder->skipped();
  LS_CHECK(options.test_fraction >= 0.0 && options.test_fraction < 1.0, "test fraction ", options.test_fraction,
           " is outside [0, 1)");
  sets.split = true;
  if (options.test_fraction == 0.0) {
    sets.train = folder;
    settle_cache(sets, {folder}, options);
    return sets;
  }
  TrainTest halves = split_dataset(folder, options.test_fraction, options.split_seed);
  LS_CHECK(halves.test->size() > 0, "data path ", path, ": a test fraction of ", options.test_fraction,
           " leaves no test image (", folder->size(), " images in ", folder->num_classes(),
           " classes); raise --test-fraction or give --test-data");
  sets.train = halves.train;
  sets.test = halves.test;
  if (options.test_center_crop != options.train_center_crop) {
    // The test part read as test images are (the same files, split alike: the
    // split depends only on the labels and the seed).
    auto test_folder = std::make_shared<ImageFolder>(root, folder_options(options, Part::test, folder->class_names()));
    LS_CHECK(test_folder->size() == folder->size(), "image folder ", root, " changed while it was opened");
    sets.test = split_dataset(test_folder, options.test_fraction, options.split_seed).test;
    settle_cache(sets, {folder, test_folder}, options);  // both whole: the budget counts what they hold
    return sets;
  }
  settle_cache(sets, {folder}, options);
  return sets;
}

DataSets open_test_dataset(const std::string& path, const DataOptions& options,
                           const std::vector<std::string>& train_classes) {
  if (is_cache_file(path)) {
    // A cache holds a folder's training and test parts: its test part.
    DataSets whole = open_cache_file(path, options);
    LS_CHECK(whole.test != nullptr, "cache file ", path, " holds no test part (made with --test-fraction 0)");
    LS_CHECK(train_classes.empty() || whole.test->class_names() == train_classes, "cache file ", path,
             " holds other classes than the training set's (", whole.test->num_classes(), " against ",
             train_classes.size(), "): its labels would name other classes");
    whole.train = nullptr;
    return whole;
  }
  check_folder(path);
  DataSets sets;
  if (auto idx = find_idx_files(path)) {
    sets.format = DataFormat::idx;
    sets.test = read_idx_dataset(idx->test_images, idx->test_labels, idx_class_names(path, idx->test_labels, options.num_classes));
    return sets;
  }
  if (auto cifar = find_cifar10_files(path)) {
    sets.format = DataFormat::cifar10;
    sets.test = read_cifar10({cifar->test}, cifar10_class_names(cifar->meta, options.num_classes));
    return sets;
  }
  check_image_folder(path);
  sets.format = DataFormat::image_folder;
  const SplitFolders split = find_split_folders(path);
  if (!split.train.empty() && split.test.empty()) {
    // A train/ folder alone: its held-out part, as open_dataset splits it.
    DataSets whole = open_dataset(path, options);
    LS_CHECK(whole.test != nullptr, "data path ", path, ": ", split.train, " alone, with no test part to evaluate on");
    sets.test = whole.test;
    sets.skipped = whole.skipped;
    return sets;
  }
  auto folder = std::make_shared<ImageFolder>(split.test.empty() ? path : split.test,
                                              folder_options(options, Part::test, train_classes));
  sets.skipped = folder->skipped();
  sets.test = folder;
  settle_cache(sets, {folder}, options);
  return sets;
}

std::string default_data_path() {
  return environment_value(EnvironmentVariable::fashion_mnist).value_or("/usr/share/datasets/fashion-mnist");
}

}  // namespace lockstep::data
