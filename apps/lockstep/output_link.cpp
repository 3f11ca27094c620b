#include "output_link.h"

#include <filesystem>

#include "base/error.h"

namespace lockstep::app {

void refuse_output_link(const OutputFile& out) {
  std::error_code ec;
  LS_CHECK(!std::filesystem::is_symlink(std::filesystem::symlink_status(out.path, ec)), out.option, " ", out.path,
           " is a symbolic link; lockstep writes its outputs as files of their own, never through a link: "
           "remove the link or choose another output");
}

}  // namespace lockstep::app
