#pragma once
// Whole-file reads: the binary formats, gzip-compressed or not, and the many
// small files of an image folder.
#include <cstdint>
#include <string>
#include <vector>

namespace lockstep::data {

// The bytes of `path`, inflated when it is gzip-compressed (zlib reads plain
// files unchanged). `what` names the file's role in messages ("IDX file").
// Throws lockstep::Error naming the file when it cannot be opened or its
// gzip stream is damaged or cut short.
std::vector<uint8_t> read_file_bytes(const std::string& path, const std::string& what);

// The bytes of `path` as they are (no gzip), into `bytes`, whose capacity is
// reused: zlib's buffers would cost more than a small image's decode. Throws
// lockstep::Error naming the file (`what` its role) when it cannot be read.
void read_plain_file(const std::string& path, std::vector<uint8_t>& bytes, const std::string& what);

// True when `path` exists and is a regular file (following links).
bool is_file(const std::string& path);

}  // namespace lockstep::data
