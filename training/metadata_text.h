#pragma once
// Text of any bytes in safetensors metadata. Class folder names and paths
// are bytes on Linux, not always UTF-8, while the safetensors header is JSON
// text. A value that is not UTF-8 is stored twice: readable (invalid bytes as
// U+FFFD) under its key, for other tools, and exactly as hex digits under the
// "_hex" key, which lockstep's readers prefer. Checkpoints and exports both
// write their class names so, and read them back byte for byte.
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace lockstep {

using Metadata = std::map<std::string, std::string>;

// `value` under `key`, and under key + "_hex" too when it is not UTF-8.
void put_text(Metadata& meta, const std::string& key, const std::string& value);
// The bytes of hex digits ("41ff" -> "A\xff"), or nothing when not hex digits.
std::optional<std::string> from_hex(const std::string& hex);

// "class_names" (a JSON array), and "class_names_hex" when a name is not UTF-8.
void put_class_names(Metadata& meta, const std::vector<std::string>& names);
// The names put_class_names wrote, byte for byte; `owner` ("checkpoint
// x.safetensors") starts the Error thrown when they are missing or damaged.
std::vector<std::string> read_class_names(const Metadata& meta, const std::string& owner);

}  // namespace lockstep
