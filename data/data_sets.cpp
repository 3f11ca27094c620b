#include "data/data_sets.h"

namespace lockstep::data {

const char* format_name(DataFormat format) {
  switch (format) {
    case DataFormat::idx: return "IDX";
    case DataFormat::cifar10: return "CIFAR-10";
    case DataFormat::image_folder: return "image folder";
  }
  return "?";
}

}  // namespace lockstep::data
