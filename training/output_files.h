#pragma once
// Checks, before the first step, that a file a run will write (a checkpoint,
// a metrics file) can be written and that writing it destroys nothing: not a
// file of the run's inputs, not a file of another kind. Each failure names the
// option and the file, so no epoch is trained only to fail at its end.
#include <functional>
#include <string>
#include <vector>

namespace lockstep {

// A path the run reads: a data set folder, a file.
struct InputPath {
  std::string path;
  std::string option;  // "--data"
};

struct OutputFile {
  std::string path;
  std::string option;  // "--checkpoint"
  std::string kind;    // "a lockstep checkpoint", for messages
  // True for an existing file this output may replace (one it wrote before).
  std::function<bool(const std::string&)> is_own_kind;
  // Other kinds of file (FIFOs, devices: --metrics /dev/null) may be written
  // to; otherwise only regular files.
  bool allow_special = false;
};

// Throws an Error naming out.option and out.path when the path
//  - is a folder, or its folder does not exist or cannot be written to (a
//    probe file is created there and removed);
//  - is, or lies inside, one of `inputs` (after resolving links; never
//    allowed, whatever `force` says);
//  - names an existing regular file that is not empty, not of out's kind and
//    `force` is false, or a file this process may not write.
void check_output_file(const OutputFile& out, const std::vector<InputPath>& inputs, bool force);

// Throws when two outputs name the same file (after resolving links).
void check_distinct_outputs(const std::vector<OutputFile>& outputs);

// True when `path` holds a readable lockstep checkpoint's metadata.
bool is_checkpoint_file(const std::string& path);

}  // namespace lockstep
