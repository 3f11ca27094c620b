#pragma once
// IDX files (MNIST, Fashion-MNIST): a big-endian header (magic 0x0000 08 R,
// then R 32-bit extents) followed by unsigned bytes; gzip-compressed or raw.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "data/file_bytes.h"

namespace lockstep::data {

struct IdxArray {
  std::vector<int64_t> dims;
  std::vector<uint8_t> values;  // the payload, header removed
};

// Reads an IDX file of unsigned bytes with `rank` dimensions (1 to 4),
// inflating a gzip file only as far as its header's size. Throws
// lockstep::Error naming the file on a wrong magic number, a truncated header
// or payload, trailing bytes, or a header announcing more than `max_bytes`.
IdxArray read_idx(const std::string& path, int rank, uint64_t max_bytes = kMaxFileBytes);

// Images [N, H, W] and labels [N] as a grey data set. Throws naming the files
// when the counts differ or a label is outside [0, class_names.size()).
std::shared_ptr<InMemoryDataset> read_idx_dataset(const std::string& images_path, const std::string& labels_path,
                                                  std::vector<std::string> class_names);

// The four files of an IDX folder (train-images-idx3-ubyte[.gz], ... and the
// t10k-... test files; "train-images.idx3-ubyte" spellings are accepted).
struct IdxFiles {
  std::string train_images, train_labels, test_images, test_labels;
};
// nullopt when `dir` holds no training images file; throws naming the missing
// file when it holds some of the four but not all.
std::optional<IdxFiles> find_idx_files(const std::string& dir);

// Class names for an IDX folder, decided by its files, never by its name:
//  - classes.txt in `dir`: one name a line (line i names label i; a final
//    line break and a \r before each are dropped), as many classes as lines;
//  - else Fashion-MNIST's ten names when `labels_path` holds Fashion-MNIST's
//    own labels (its training or test label file, by count and CRC-32 of the
//    labels, gzip or raw) and there are ten classes;
//  - else "0", "1", ... (MNIST, or any other IDX data).
// Throws naming classes.txt when it is not a list of distinct, non-empty names.
std::vector<std::string> idx_class_names(const std::string& dir, const std::string& labels_path,
                                         int64_t num_classes);

}  // namespace lockstep::data
