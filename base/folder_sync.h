#pragma once
// A file replaced by renaming a finished temporary file over it (the
// checkpoint writer, the cache writer) survives a crash only once its folder
// is flushed too: the rename is a change to the folder, not to the file.
#include <string>

namespace lockstep {

// Flushes the folder that holds `path` to disk. Best effort: a folder that
// cannot be opened is left as it is (the file itself is already flushed).
void sync_folder_of(const std::string& path);

}  // namespace lockstep
