#pragma once
// The safetensors file format (8-byte little-endian header length, a JSON
// header naming each tensor's dtype, shape and byte range, then the raw data),
// for f32 tensors and string metadata. Used by checkpoints and by tests that
// read reference values written from Python.
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/shape.h"

namespace lockstep {

struct HostTensor {
  Shape shape;
  std::vector<float> values;
  // The file's dtype. Read with any_dtype: F16 and BF16 values are converted
  // to f32 exactly; other dtypes than those and F32 come with no values.
  std::string dtype = "F32";
};

struct SafetensorsFile {
  std::map<std::string, std::string> metadata;
  std::vector<std::pair<std::string, HostTensor>> tensors;  // in file order
  const HostTensor& at(const std::string& name) const;     // throws naming the tensor
};

// Writes whole or not at all (write_replacing, training/replaced_file.h).
// Metadata must be UTF-8 text (an Error names the key otherwise).
void write_safetensors(const std::string& path, const SafetensorsFile& file);
// Removes the temporary files that writers of `path` killed mid-write left
// behind; returns how many. Only while no other writer of `path` can run
// (under an OutputLock, training/output_lock.h).
int remove_stale_temporaries(const std::string& path);

// True when `text` is well-formed UTF-8 (what JSON text must be).
bool valid_utf8(std::string_view text);
// Reads and checks bounds and dtypes; throws an Error naming the file and what
// is wrong. With `with_data` false only the metadata is read. Tensors must
// be F32 unless `any_dtype` (state dicts written by others: see HostTensor).
SafetensorsFile read_safetensors(const std::string& path, bool with_data = true, bool any_dtype = false);

// CRC-32 (zlib) of the tensor data in file order, as 8 hex digits.
std::string tensor_data_crc32(const SafetensorsFile& file);

}  // namespace lockstep
