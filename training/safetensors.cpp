#include "training/safetensors.h"

#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "base/error.h"

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
  if (!file.metadata.empty()) header["__metadata__"] = file.metadata;
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // keeps the data 8-byte aligned

  std::string tmp = path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "wb");
  LS_CHECK(f != nullptr, "cannot write ", tmp, ": ", std::strerror(errno));
  unsigned char size_bytes[8];
  for (int i = 0; i < 8; ++i) size_bytes[i] = static_cast<unsigned char>(uint64_t(text.size()) >> (8 * i));
  bool ok = std::fwrite(size_bytes, 1, 8, f) == 8 && std::fwrite(text.data(), 1, text.size(), f) == text.size();
  for (auto& [name, t] : file.tensors)
    ok = ok && std::fwrite(t.values.data(), sizeof(float), t.values.size(), f) == t.values.size();
  ok = ok && std::fflush(f) == 0 && fsync(fileno(f)) == 0;
  int saved_errno = errno;
  ok = (std::fclose(f) == 0) && ok;
  if (!ok) {
    std::remove(tmp.c_str());
    LS_FAIL("writing ", tmp, " failed: ", std::strerror(saved_errno), "; ", path, " was left as it was");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::remove(tmp.c_str());
    LS_FAIL("cannot rename ", tmp, " to ", path, ": ", ec.message());
  }
}

SafetensorsFile read_safetensors(const std::string& path, bool with_data) {
  std::ifstream in(path, std::ios::binary);
  LS_CHECK(in.good(), "cannot open ", path, ": ", std::strerror(errno));
  in.seekg(0, std::ios::end);
  const uint64_t file_size = static_cast<uint64_t>(in.tellg());
  in.seekg(0);
  unsigned char size_bytes[8];
  LS_CHECK(file_size >= 8 && in.read(reinterpret_cast<char*>(size_bytes), 8), path, " is truncated: ", file_size,
           " bytes, shorter than the 8-byte header length");
  uint64_t header_size = 0;
  for (int i = 7; i >= 0; --i) header_size = (header_size << 8) | size_bytes[i];
  LS_CHECK(header_size <= file_size - 8, path, " is truncated or not a safetensors file: a header of ", header_size,
           " bytes in a file of ", file_size);
  std::string text(header_size, '\0');
  in.read(text.data(), static_cast<std::streamsize>(header_size));
  const uint64_t data_size = file_size - 8 - header_size;

  SafetensorsFile file;
  try {
    json header = json::parse(text);
    LS_CHECK(header.is_object(), path, ": the header is not a JSON object");
    if (header.contains("__metadata__"))
      for (auto& [key, value] : header["__metadata__"].items()) file.metadata[key] = value.get<std::string>();
    std::vector<std::pair<uint64_t, std::string>> order;
    for (auto& [name, entry] : header.items())
      if (name != "__metadata__") order.emplace_back(entry.at("data_offsets").at(0).get<uint64_t>(), name);
    std::sort(order.begin(), order.end());
    std::vector<char> data;
    if (with_data) {
      data.resize(data_size);
      in.read(data.data(), static_cast<std::streamsize>(data_size));
      LS_CHECK(static_cast<uint64_t>(in.gcount()) == data_size, path, " could not be read whole");
    }
    for (auto& [begin, name] : order) {
      const json& entry = header[name];
      LS_CHECK(entry.at("dtype") == "F32", path, ": tensor ", name, " has dtype ", entry.at("dtype").dump(),
               ", expected F32");
      Shape shape = shape_from(entry.at("shape").get<std::vector<int64_t>>());
      uint64_t end = entry.at("data_offsets").at(1).get<uint64_t>();
      LS_CHECK(begin <= end && end <= data_size, path, " is truncated: tensor ", name, " ends at byte ", end,
               " of a data block of ", data_size);
      LS_CHECK(static_cast<uint64_t>(shape.numel()) * 4 == end - begin, path, ": tensor ", name, " of shape ",
               shape.str(), " has ", end - begin, " bytes");
      HostTensor t{shape, {}};
      if (with_data) {
        t.values.resize(shape.numel());
        std::memcpy(t.values.data(), data.data() + begin, end - begin);
      }
      file.tensors.emplace_back(name, std::move(t));
    }
  } catch (const json::exception& e) {
    LS_FAIL(path, " has a damaged header: ", e.what());
  }
  return file;
}

}  // namespace lockstep
