#pragma once
// Every file lockstep reads is asked its kind before any byte is read: a
// FIFO would block the reader for ever, a device (/dev/zero) never ends, and
// a folder or a dangling link is no file. Here, at the bottom, so that every
// layer that opens a file (data sets, caches, weights) asks the same way.
#include <cstdint>
#include <string>

namespace lockstep {

// errno's text, thread-safe (strerror is not, and loader threads read side by side).
std::string errno_reason(int error);

// "a folder", "a FIFO (named pipe)", "a character device", ... for a stat mode.
std::string file_kind(unsigned mode);

// Why `path` cannot be read as a file, or "" when it is a regular file
// (following links): "is a link to nothing (dangling)", "is a FIFO (named
// pipe), not a regular file", "is not there (no such file)".
std::string not_a_file_reason(const std::string& path);

// An open descriptor (read-only, close-on-exec) of the regular file `path`,
// and its size. Opened without blocking, so a FIFO is refused, not waited on.
// Throws lockstep::Error naming the file (`what` its role: "cache file") when
// it cannot be opened or is not a regular file.
int open_regular_file(const std::string& path, const std::string& what, uint64_t& size);

}  // namespace lockstep
