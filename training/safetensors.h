#pragma once
// The safetensors file format (8-byte little-endian header length, a JSON
// header naming each tensor's dtype, shape and byte range, then the raw data),
// for f32 tensors and string metadata. Used by checkpoints and by tests that
// read reference values written from Python.
#include <cstdint>
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
// One tensor's entry in a file's header: its byte range in the data block.
struct SafetensorsEntry {
  std::string name;
  Shape shape;
  std::string dtype;
  uint64_t begin = 0, end = 0;
};

// A safetensors file opened: the header read and checked whole (bounds,
// dtypes, every data byte in exactly one tensor), the tensors read one at a
// time when asked, each with its own pread. So a caller compares names and
// shapes before reading any data, and a large file of which few tensors are
// used costs those only (a whole-file read once made a 1 GB file 3.3 GB
// resident). Tensors must be F32 unless `any_dtype` (state dicts written by
// others: see HostTensor). Errors name the file and what is wrong; a header
// over safetensors' own limit (100,000,000 bytes) is refused unread, and a
// tensor that does not fit in memory is named as such, not std::bad_alloc.
// read() may be called from several threads at once.
class SafetensorsReader {
public:
  explicit SafetensorsReader(const std::string& path, bool any_dtype = false);
  ~SafetensorsReader();
  SafetensorsReader(const SafetensorsReader&) = delete;
  SafetensorsReader& operator=(const SafetensorsReader&) = delete;

  const std::string& path() const { return path_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const std::vector<SafetensorsEntry>& entries() const { return entries_; }  // in file order
  // The tensor's values (F16 and BF16 converted to f32; none for other dtypes).
  HostTensor read(const SafetensorsEntry& entry) const;

private:
  // The open file, closed when the reader goes and also when its constructor
  // throws after opening it (a throwing constructor runs its members'
  // destructors, not its own: the fuzzer met the descriptors it leaked).
  struct OpenFile {
    int fd = -1;
    OpenFile() = default;
    OpenFile(const OpenFile&) = delete;
    OpenFile& operator=(const OpenFile&) = delete;
    ~OpenFile();
  };
  std::string path_;
  OpenFile file_;
  uint64_t data_start_ = 0;
  std::map<std::string, std::string> metadata_;
  std::vector<SafetensorsEntry> entries_;
};

// The whole file through SafetensorsReader. With `with_data` false only the
// header is read (the tensors come without values).
SafetensorsFile read_safetensors(const std::string& path, bool with_data = true, bool any_dtype = false);

// CRC-32 (zlib) of the tensor data in file order, as 8 hex digits.
std::string tensor_data_crc32(const SafetensorsFile& file);

}  // namespace lockstep
