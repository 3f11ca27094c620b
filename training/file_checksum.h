#pragma once
// A file's contents in a few characters, to tell whether processes on
// several hosts were given the same file (their paths may differ).
#include <string>

namespace lockstep {

// "crc32 1a2b3c4d of 46827520 bytes" (zlib's CRC-32 of every byte), or what
// kept the file from being read ("unreadable: no such file"); never throws,
// so that every process can report its own.
std::string file_checksum(const std::string& path);

}  // namespace lockstep
