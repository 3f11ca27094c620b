#include "training/file_checksum.h"

#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

namespace lockstep {

std::string file_checksum(const std::string& path) {
  std::error_code ec;
  // Checked first: reading a FIFO would wait for a writer.
  if (!std::filesystem::is_regular_file(path, ec)) return "unreadable: not a regular file";
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::string("unreadable: ") + std::strerror(errno);
  uLong crc = crc32(0L, Z_NULL, 0);
  unsigned long long bytes = 0;
  std::vector<char> buffer(1 << 20);
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    const auto n = static_cast<uInt>(in.gcount());
    crc = crc32(crc, reinterpret_cast<const Bytef*>(buffer.data()), n);
    bytes += n;
  }
  if (in.bad()) return "unreadable: a read failed";
  char text[64];
  std::snprintf(text, sizeof text, "crc32 %08lx of %llu bytes", static_cast<unsigned long>(crc), bytes);
  return text;
}

}  // namespace lockstep
