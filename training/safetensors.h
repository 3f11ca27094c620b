#pragma once
// The safetensors file format (8-byte little-endian header length, a JSON
// header naming each tensor's dtype, shape and byte range, then the raw data),
// for f32 tensors and string metadata. Used by checkpoints and by tests that
// read reference values written from Python.
#include <map>
#include <string>
#include <vector>

#include "runtime/shape.h"

namespace lockstep {

struct HostTensor {
  Shape shape;
  std::vector<float> values;
};

struct SafetensorsFile {
  std::map<std::string, std::string> metadata;
  std::vector<std::pair<std::string, HostTensor>> tensors;  // in file order
  const HostTensor& at(const std::string& name) const;     // throws naming the tensor
};

// Writes to `path` + ".tmp", flushes to disk and renames over `path`, so a
// crash leaves either the old file or the new one.
void write_safetensors(const std::string& path, const SafetensorsFile& file);
// Reads and checks bounds and dtypes; throws an Error naming the file and what
// is wrong. With `with_data` false only the metadata is read.
SafetensorsFile read_safetensors(const std::string& path, bool with_data = true);

// CRC-32 (zlib) of the tensor data in file order, as 8 hex digits.
std::string tensor_data_crc32(const SafetensorsFile& file);

}  // namespace lockstep
