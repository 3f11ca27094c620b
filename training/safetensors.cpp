#include "training/safetensors.h"

#include <zlib.h>

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cmath>
#include <limits>
#include <map>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>
#include <unistd.h>

#include "base/error.h"
#include "training/replaced_file.h"

namespace lockstep {

namespace {
using json = nlohmann::json;

json shape_json(const Shape& s) {
  json j = json::array();
  for (int i = 0; i < s.rank(); ++i) j.push_back(s[i]);
  return j;
}

Shape shape_from(const std::vector<int64_t>& dims) {
  switch (dims.size()) {
    case 0: return Shape{1};  // a scalar
    case 1: return Shape{dims[0]};
    case 2: return Shape{dims[0], dims[1]};
    case 3: return Shape{dims[0], dims[1], dims[2]};
    case 4: return Shape{dims[0], dims[1], dims[2], dims[3]};
    default: LS_FAIL("a tensor of ", dims.size(), " dimensions (at most 4 are supported)");
  }
}
}  // namespace

const HostTensor& SafetensorsFile::at(const std::string& name) const {
  for (auto& [n, t] : tensors)
    if (n == name) return t;
  LS_FAIL("no tensor named '", name, "' in the file");
}

std::string tensor_data_crc32(const SafetensorsFile& file) {
  uLong crc = crc32(0L, Z_NULL, 0);
  for (auto& [name, t] : file.tensors) {
    const auto* bytes = reinterpret_cast<const Bytef*>(t.values.data());
    size_t size = t.values.size() * sizeof(float);
    for (size_t at = 0; at < size; at += (1u << 30))
      crc = crc32(crc, bytes + at, static_cast<uInt>(std::min<size_t>(size - at, 1u << 30)));
  }
  char buf[16];
  std::snprintf(buf, sizeof buf, "%08lx", static_cast<unsigned long>(crc));
  return buf;
}

void write_safetensors(const std::string& path, const SafetensorsFile& file) {
  json header = json::object();
  uint64_t offset = 0;
  for (auto& [name, t] : file.tensors) {
    uint64_t size = t.values.size() * sizeof(float);
    header[name] = {{"dtype", "F32"}, {"shape", shape_json(t.shape)}, {"data_offsets", {offset, offset + size}}};
    offset += size;
  }
  // The JSON writer throws on bytes that are not UTF-8; say which value instead
  // (callers encode such values, see checkpoint.cpp).
  for (auto& [key, value] : file.metadata)
    LS_CHECK(valid_utf8(key) && valid_utf8(value), "cannot write ", path, ": metadata '", key,
             "' is not UTF-8 text");
  for (auto& [name, t] : file.tensors) LS_CHECK(valid_utf8(name), "cannot write ", path, ": a tensor name is not UTF-8");
  if (!file.metadata.empty()) header["__metadata__"] = file.metadata;
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // keeps the data 8-byte aligned

  write_replacing(path, [&](std::FILE* f) {
    unsigned char size_bytes[8];
    for (int i = 0; i < 8; ++i) size_bytes[i] = static_cast<unsigned char>(uint64_t(text.size()) >> (8 * i));
    bool ok = std::fwrite(size_bytes, 1, 8, f) == 8 && std::fwrite(text.data(), 1, text.size(), f) == text.size();
    for (auto& [name, t] : file.tensors)
      ok = ok && std::fwrite(t.values.data(), sizeof(float), t.values.size(), f) == t.values.size();
    return ok;
  });
}


int remove_stale_temporaries(const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path target = fs::absolute(path);
  const std::string prefix = temporary_prefix(target.filename().string());
  std::error_code ec;
  int removed = 0;
  for (fs::directory_iterator it(target.parent_path(), ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() > prefix.size() && name.compare(0, prefix.size(), prefix) == 0 && it->is_regular_file(ec) &&
        fs::remove(it->path(), ec))
      ++removed;
  }
  return removed;
}

bool valid_utf8(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    // Lead byte: how many continuation bytes follow, and the smallest and
    // largest second byte that keep the sequence shortest-form and <= U+10FFFF
    // without UTF-16 surrogates (RFC 3629's table).
    int extra = 0;
    unsigned char low = 0x80, high = 0xBF;
    if (c < 0x80) extra = 0;
    else if (c >= 0xC2 && c <= 0xDF) extra = 1;
    else if (c == 0xE0) extra = 2, low = 0xA0;
    else if (c == 0xED) extra = 2, high = 0x9F;
    else if (c >= 0xE1 && c <= 0xEF) extra = 2;
    else if (c == 0xF0) extra = 3, low = 0x90;
    else if (c >= 0xF1 && c <= 0xF3) extra = 3;
    else if (c == 0xF4) extra = 3, high = 0x8F;
    else return false;
    if (text.size() - i <= static_cast<size_t>(extra)) return false;  // cut short
    for (int k = 1; k <= extra; ++k) {
      const auto b = static_cast<unsigned char>(text[i + k]);
      if (k == 1 ? (b < low || b > high) : (b < 0x80 || b > 0xBF)) return false;
    }
    i += 1 + extra;
  }
  return true;
}

namespace {

// Refuses a JSON text in which any object repeats a key (nlohmann::json
// keeps the last silently; safetensors' own reader refuses it).
json parse_without_repeated_keys(const std::string& text, const std::string& path) {
  std::vector<std::set<std::string>> open_objects;
  std::string repeated;
  json::parser_callback_t check = [&](int, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start) open_objects.emplace_back();
    if (event == json::parse_event_t::object_end && !open_objects.empty()) open_objects.pop_back();
    if (event == json::parse_event_t::key && !open_objects.empty() &&
        !open_objects.back().insert(parsed.get<std::string>()).second && repeated.empty())
      repeated = parsed.get<std::string>();
    return true;
  };
  json header;
  try {
    header = json::parse(text, check);
  } catch (const json::parse_error& e) {
    LS_FAIL(path, " has a damaged header: it is not valid JSON (at byte ", e.byte, " of the ", text.size(),
            "-byte header)");
  } catch (const json::exception& e) {
    // Valid JSON that nlohmann::json cannot hold, such as a number past a
    // double's range (1e999): out_of_range, not parse_error.
    LS_FAIL(path, " has a damaged header: a value out of any number's range (", e.what(), ")");
  }
  LS_CHECK(repeated.empty(), path, " has a damaged header: the key '", repeated, "' appears more than once");
  return header;
}

// A non-negative integer from the header (JSON numbers such as 3.0 or -1 are refused).
uint64_t header_integer(const json& value, const std::string& path, const std::string& name, const char* field) {
  LS_CHECK(value.is_number_unsigned(), path, ": tensor ", name, " has ", field, " ", value.dump(),
           ", not a non-negative integer");
  return value.get<uint64_t>();
}

// Bytes per element of safetensors' dtypes, 0 for a name it does not define.
uint64_t dtype_bytes(const std::string& dtype) {
  static const std::map<std::string, uint64_t> sizes = {
      {"F64", 8}, {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"I64", 8}, {"U64", 8}, {"I32", 4}, {"U32", 4},
      {"I16", 2}, {"U16", 2}, {"I8", 1},  {"U8", 1},   {"BOOL", 1}, {"F8_E4M3", 1}, {"F8_E5M2", 1}};
  auto it = sizes.find(dtype);
  return it == sizes.end() ? 0 : it->second;
}

float half_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h >> 15) << 31, exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  float magnitude;
  if (exponent == 0) magnitude = std::ldexp(static_cast<float>(mantissa), -24);  // zero or subnormal
  else if (exponent == 31) magnitude = mantissa ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  else magnitude = std::ldexp(static_cast<float>(mantissa | 0x400), int(exponent) - 25);
  uint32_t bits;
  std::memcpy(&bits, &magnitude, 4);
  bits |= sign;
  std::memcpy(&magnitude, &bits, 4);
  return magnitude;
}

SafetensorsEntry tensor_entry(const std::string& name, const json& entry, const std::string& path, bool any_dtype) {
  LS_CHECK(entry.is_object(), path, ": tensor ", name, " is described by ", entry.type_name(), ", not an object");
  for (const char* field : {"dtype", "shape", "data_offsets"})
    LS_CHECK(entry.contains(field), path, ": tensor ", name, " has no '", field, "'");
  const std::string dtype = entry["dtype"].is_string() ? entry["dtype"].get<std::string>() : entry["dtype"].dump();
  LS_CHECK(any_dtype ? dtype_bytes(dtype) > 0 : dtype == "F32", path, ": tensor ", name, " has dtype ",
           entry["dtype"].dump(), any_dtype ? ", not a safetensors dtype" : ", expected F32");
  const json& dims = entry["shape"];
  LS_CHECK(dims.is_array() && dims.size() <= Shape::max_rank, path, ": tensor ", name, " has shape ", dims.dump(),
           " (an array of at most ", Shape::max_rank, " extents is supported)");
  std::vector<int64_t> extents;
  for (const json& d : dims) {
    const uint64_t extent = header_integer(d, path, name, "an extent");
    LS_CHECK(extent <= uint64_t{INT64_MAX}, path, ": tensor ", name, " has extent ", extent, ", too large");
    extents.push_back(static_cast<int64_t>(extent));
  }
  const json& offsets = entry["data_offsets"];
  LS_CHECK(offsets.is_array() && offsets.size() == 2, path, ": tensor ", name, " has data_offsets ", offsets.dump(),
           ", not [begin, end]");
  SafetensorsEntry out{name, shape_from(extents), dtype, header_integer(offsets[0], path, name, "a data offset"),
                       header_integer(offsets[1], path, name, "a data offset")};
  LS_CHECK(out.begin <= out.end, path, ": tensor ", name, " has data_offsets [", out.begin, ", ", out.end,
           "] that end before they begin");
  uint64_t bytes = dtype_bytes(dtype);
  bool overflow = false;
  for (int64_t extent : extents) overflow = overflow || __builtin_mul_overflow(bytes, uint64_t(extent), &bytes);
  LS_CHECK(!overflow && bytes == out.end - out.begin, path, ": tensor ", name, " of shape ", dims.dump(), " has ",
           out.end - out.begin, " bytes");
  return out;
}

// What safetensors' own reader allows (MAX_HEADER_SIZE): larger, the header
// would be parsed only to find a damaged file, at the cost of its size in memory.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

// Reads `size` bytes at `offset` of the file, however many calls it takes.
void read_at(int fd, void* into, uint64_t size, uint64_t offset, const std::string& path, const std::string& what) {
  auto* bytes = static_cast<char*>(into);
  for (uint64_t done = 0; done < size;) {
    const ssize_t got = ::pread(fd, bytes + done, static_cast<size_t>(std::min<uint64_t>(size - done, 1u << 30)),
                                static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    LS_CHECK(got >= 0, "cannot read ", what, " of ", path, ": ", std::strerror(errno));
    LS_CHECK(got > 0, path, " is truncated: ", what, " could not be read whole (the file got shorter while it was read)");
    done += static_cast<uint64_t>(got);
  }
}

}  // namespace

SafetensorsReader::SafetensorsReader(const std::string& path, bool any_dtype) : path_(path) {
  std::error_code ec;
  const std::filesystem::file_status status = std::filesystem::status(path, ec);
  LS_CHECK(!std::filesystem::is_directory(status), path, " is a folder, not a safetensors file");
  LS_CHECK(!std::filesystem::exists(status) || std::filesystem::is_regular_file(status), path,
           " is not a regular file (a device, FIFO or socket), not a safetensors file");
  // O_NONBLOCK: a FIFO put in its place since the check above does not block the open.
  file_.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  LS_CHECK(file_.fd >= 0, "cannot open ", path, ": ", std::strerror(errno));
  struct stat st {};
  LS_CHECK(::fstat(file_.fd, &st) == 0 && S_ISREG(st.st_mode), path, " is not a regular file, not a safetensors file");
  const uint64_t file_size = static_cast<uint64_t>(st.st_size);
  unsigned char size_bytes[8];
  LS_CHECK(file_size >= 8, path, " is truncated: ", file_size, " bytes, shorter than the 8-byte header length");
  read_at(file_.fd, size_bytes, 8, 0, path, "the header length");
  uint64_t header_size = 0;
  for (int i = 7; i >= 0; --i) header_size = (header_size << 8) | size_bytes[i];
  LS_CHECK(header_size <= file_size - 8, path, " is truncated or not a safetensors file: a header of ", header_size,
           " bytes in a file of ", file_size);
  LS_CHECK(header_size <= kMaxHeaderBytes, path, " is damaged or not a safetensors file: a header of ", header_size,
           " bytes, over the ", kMaxHeaderBytes, " bytes safetensors allows");
  data_start_ = 8 + header_size;
  const uint64_t data_size = file_size - data_start_;

  json header;
  try {
    std::string text(header_size, '\0');
    read_at(file_.fd, text.data(), header_size, 8, path, "the header");
    header = parse_without_repeated_keys(text, path);
  } catch (const std::bad_alloc&) {
    LS_FAIL(path, ": its header of ", header_size, " bytes does not fit in the memory available");
  }
  LS_CHECK(header.is_object(), path, ": the header is not a JSON object");
  for (auto& [key, value] : header.items()) {
    if (key != "__metadata__") {
      entries_.push_back(tensor_entry(key, value, path, any_dtype));
      continue;
    }
    LS_CHECK(value.is_object(), path, ": __metadata__ is ", value.type_name(), ", not an object");
    for (auto& [name, text_value] : value.items()) {
      LS_CHECK(text_value.is_string(), path, ": metadata '", name, "' is ", text_value.dump(), ", not a string");
      metadata_[name] = text_value.get<std::string>();
    }
  }
  // Every byte of the data belongs to exactly one tensor, in offset order, as
  // safetensors itself requires: no overlap, no hole, nothing after the last.
  std::sort(entries_.begin(), entries_.end(), [](const SafetensorsEntry& a, const SafetensorsEntry& b) {
    return std::tie(a.begin, a.end) < std::tie(b.begin, b.end);
  });
  uint64_t covered = 0;
  const SafetensorsEntry* previous = nullptr;
  for (const SafetensorsEntry& e : entries_) {
    LS_CHECK(e.end <= data_size, path, " is truncated: tensor ", e.name, " ends at byte ", e.end,
             " of a data block of ", data_size);
    LS_CHECK(e.begin >= covered, path, ": tensors ", previous ? previous->name : "", " and ", e.name,
             " overlap (bytes ", e.begin, " to ", covered, " of the data belong to both)");
    LS_CHECK(e.begin == covered, path, ": bytes ", covered, " to ", e.begin, " of the data belong to no tensor (before ",
             e.name, ")");
    covered = e.end;
    previous = &e;
  }
  LS_CHECK(covered == data_size, path, ": ", data_size - covered, " bytes after the last tensor",
           previous ? " (" + previous->name + ")" : "", " belong to no tensor");
}

SafetensorsReader::OpenFile::~OpenFile() {
  if (fd >= 0) ::close(fd);
}

SafetensorsReader::~SafetensorsReader() = default;

HostTensor SafetensorsReader::read(const SafetensorsEntry& e) const {
  HostTensor t{e.shape, {}, e.dtype};
  const bool half = e.dtype == "F16" || e.dtype == "BF16";
  const uint64_t bytes = e.end - e.begin;
  if (bytes == 0 || (e.dtype != "F32" && !half)) return t;
  const std::string what = "tensor " + e.name;
  try {
    t.values.resize(static_cast<size_t>(e.shape.numel()));
    if (!half) {
      read_at(file_.fd, t.values.data(), bytes, data_start_ + e.begin, path_, what);
      return t;
    }
    std::vector<uint16_t> raw(t.values.size());
    read_at(file_.fd, raw.data(), bytes, data_start_ + e.begin, path_, what);
    for (size_t i = 0; i < raw.size(); ++i) {
      if (e.dtype == "BF16") {
        const uint32_t bits = uint32_t(raw[i]) << 16;
        std::memcpy(&t.values[i], &bits, 4);
      } else {
        t.values[i] = half_to_float(raw[i]);
      }
    }
  } catch (const std::bad_alloc&) {
    LS_FAIL(path_, ": tensor ", e.name, " ", e.shape.str(), " (", bytes,
            " bytes in the file) does not fit in the memory available");
  }
  return t;
}

SafetensorsFile read_safetensors(const std::string& path, bool with_data, bool any_dtype) {
  const SafetensorsReader reader(path, any_dtype);
  SafetensorsFile file;
  file.metadata = reader.metadata();
  for (const SafetensorsEntry& e : reader.entries())
    file.tensors.emplace_back(e.name, with_data ? reader.read(e) : HostTensor{e.shape, {}, e.dtype});
  return file;
}

}  // namespace lockstep
