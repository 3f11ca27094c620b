#include "training/classes_text.h"

#include <cstdio>

#include "training/safetensors.h"

namespace lockstep {

namespace {

std::string escaped(const std::string& name) {
  const bool utf8 = valid_utf8(name);
  std::string out;
  for (const char c : name) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (byte < 0x20 || byte == 0x7f || (!utf8 && byte >= 0x80)) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", byte);
      out += hex;
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::string classes_text(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& name : names) text += escaped(name) + "\n";
  return text;
}

}  // namespace lockstep
