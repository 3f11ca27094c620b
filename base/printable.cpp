#include "base/printable.h"

#include <cstdio>

namespace lockstep {

std::string printable(const std::string& bytes, size_t max, const char* empty) {
  std::string out;
  for (unsigned char c : bytes) {
    if (out.size() >= max) return out + "...";
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    }
  }
  return out.empty() ? empty : out;
}

}  // namespace lockstep
