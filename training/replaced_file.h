#pragma once
// A file written whole or not at all: to a temporary file of its own beside
// `path` (temporary_prefix(path) + process id + a counter, created
// exclusively), flushed to disk and renamed over `path`. A crash leaves
// either the old file or the new one; two writers of one path never share a
// temporary file; and a link at `path` is replaced, never written through.
#include <cstdio>
#include <functional>
#include <string>

namespace lockstep {

// `write` fills the open temporary file and returns false when it failed.
// Throws an Error naming `path` when anything fails; `path` is then as it was.
void write_replacing(const std::string& path, const std::function<bool(std::FILE*)>& write);

// The start of the temporary files' names of `path`.
std::string temporary_prefix(const std::string& path);

}  // namespace lockstep
