#include "training/output_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <filesystem>

#include "base/error.h"
#include "training/checkpoint.h"

namespace lockstep {

namespace fs = std::filesystem;

namespace {

// The path with every link resolved, also for a file that does not exist yet
// and for a link to one (writing through it creates its target).
fs::path resolved(const std::string& path) {
  std::error_code ec;
  fs::path p = fs::absolute(path);
  for (int hops = 0; hops < 40 && fs::is_symlink(fs::symlink_status(p, ec)); ++hops) {
    const fs::path target = fs::read_symlink(p, ec);
    if (ec) break;
    p = target.is_absolute() ? target : p.parent_path() / target;
  }
  fs::path canonical = fs::weakly_canonical(p, ec);
  return ec ? p.lexically_normal() : canonical;
}

bool inside_or_same(const fs::path& path, const fs::path& folder) {
  auto a = path.begin(), b = folder.begin();
  for (; b != folder.end(); ++a, ++b)
    if (a == path.end() || *a != *b) return false;
  return true;
}

std::string named(const OutputFile& out) { return out.option + " " + out.path; }

// Creates and removes a file in `folder`: what writing the output will need.
void probe_folder(const OutputFile& out, const fs::path& folder) {
  // Appended piece by piece: GCC 12 misreads `"." + string` here as an
  // overlapping copy (-Wrestrict, -Wstringop-overflow).
  std::string name = ".";
  name += fs::path(out.path).filename().string();
  name += ".probe-";
  name += std::to_string(::getpid());
  const fs::path probe = folder / name;
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  LS_CHECK(fd >= 0 || errno == EEXIST, named(out), ": cannot create files in the folder ", folder.string(), " (",
           std::strerror(errno), ")");
  if (fd >= 0) {
    ::close(fd);
    ::unlink(probe.c_str());
  }
}

}  // namespace

void check_output_file(const OutputFile& out, const std::vector<InputPath>& inputs, bool force) {
  LS_CHECK(!out.path.empty(), out.option, " is empty");
  std::error_code ec;
  const fs::file_status status = fs::status(out.path, ec);
  LS_CHECK(!fs::is_directory(status), named(out), " is a folder, not a file");
  const fs::path folder = fs::absolute(out.path).parent_path();
  LS_CHECK(fs::is_directory(folder, ec), named(out), ": the folder ", folder.string(), " does not exist");

  const fs::path target = resolved(out.path);
  for (const InputPath& in : inputs) {
    if (in.path.empty()) continue;
    const fs::path input = resolved(in.path);
    const bool same = inside_or_same(target, input) || (fs::exists(status) && fs::equivalent(out.path, in.path, ec));
    LS_CHECK(!same, named(out), (target == input ? " is " : " lies inside "), "the input ", in.option, " ", in.path,
             "; lockstep never writes over what it reads: choose another ", out.option);
  }

  if (fs::exists(status)) {
    if (!fs::is_regular_file(status)) {
      LS_CHECK(out.allow_special, named(out), " exists and is not a regular file (a device, FIFO or socket)");
      return;  // nothing to overwrite, and opening a FIFO to probe it would block
    }
    const bool empty = fs::file_size(out.path, ec) == 0 && !ec;
    LS_CHECK(empty || force || (out.is_own_kind && out.is_own_kind(out.path)), named(out),
             " exists and is not ", out.kind, "; lockstep will not overwrite it (give --force to overwrite it)");
    const int fd = ::open(out.path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);  // no truncation: nothing changes
    LS_CHECK(fd >= 0, named(out), ": cannot write it (", std::strerror(errno), ")");
    ::close(fd);
  }
  probe_folder(out, folder);
}

void check_distinct_outputs(const std::vector<OutputFile>& outputs) {
  for (size_t i = 0; i < outputs.size(); ++i)
    for (size_t j = i + 1; j < outputs.size(); ++j)
      LS_CHECK(outputs[i].path.empty() || outputs[j].path.empty() ||
                   resolved(outputs[i].path) != resolved(outputs[j].path),
               outputs[i].option, " ", outputs[i].path, " and ", outputs[j].option, " ", outputs[j].path,
               " name the same file");
}

bool is_checkpoint_file(const std::string& path) {
  try {
    read_checkpoint_info(path);
    return true;
  } catch (const std::exception&) {  // whatever is wrong with it, it is not one
    return false;
  }
}

}  // namespace lockstep
