#pragma once
// Whole-file reads for the binary formats, gzip-compressed or not.
#include <cstdint>
#include <string>
#include <vector>

namespace lockstep::data {

// The bytes of `path`, inflated when it is gzip-compressed (zlib reads plain
// files unchanged). `what` names the file's role in messages ("IDX file").
// Throws lockstep::Error naming the file when it cannot be opened or its
// gzip stream is damaged or cut short.
std::vector<uint8_t> read_file_bytes(const std::string& path, const std::string& what);

// True when `path` exists and is a regular file (following links).
bool is_file(const std::string& path);

}  // namespace lockstep::data
