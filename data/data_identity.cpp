#include "data/data_identity.h"

#include <zlib.h>

#include <cstdio>

#include "base/error.h"

namespace lockstep::data {

namespace {

uLong add_bytes(uLong crc, const void* bytes, size_t size) {
  return crc32(crc, static_cast<const Bytef*>(bytes), static_cast<uInt>(size));
}

}  // namespace

DataIdentity data_identity(const Dataset& data) {
  DataIdentity id;
  id.samples = data.size();
  const Shape shape = data.sample_shape();
  for (int i = 0; i < shape.rank(); ++i) id.sample_shape += (i ? "x" : "") + std::to_string(shape[i]);
  id.class_names = data.class_names();
  id.class_counts = data.class_counts();
  uLong crc = crc32(0L, Z_NULL, 0);
  const std::vector<int32_t> labels = data.labels();
  crc = add_bytes(crc, labels.data(), labels.size() * sizeof(int32_t));
  if (data.size() > 0) {
    std::vector<float> pixels(static_cast<size_t>(shape.numel()));
    for (int64_t index : {int64_t{0}, data.size() / 2, data.size() - 1}) {
      try {
        data.read(index, pixels.data());
        crc = add_bytes(crc, pixels.data(), pixels.size() * sizeof(float));
      } catch (const Error&) {
        // A sample that cannot be read (left to --skip-bad-images) counts as
        // such: the same unreadable file gives the same fingerprint.
        crc = add_bytes(crc, "unreadable", 10);
      }
    }
  }
  char hex[9];
  std::snprintf(hex, sizeof hex, "%08lx", static_cast<unsigned long>(crc & 0xffffffffUL));
  id.fingerprint = hex;
  return id;
}

}  // namespace lockstep::data
