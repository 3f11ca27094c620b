#include "output_link.h"

#include <filesystem>

#include "base/error.h"

namespace lockstep::app {

void refuse_output_link(const OutputFile& out) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_symlink(fs::symlink_status(out.path, ec))) return;
  const fs::file_status target = fs::status(out.path, ec);
  if (out.allow_special && fs::exists(target) && !fs::is_regular_file(target) && !fs::is_directory(target)) return;
  LS_FAIL(out.option, " ", out.path,
          " is a symbolic link; lockstep writes its outputs as files of their own, never through a link: "
          "remove the link or choose another output");
}

}  // namespace lockstep::app
