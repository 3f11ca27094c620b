#pragma once
// Exports are replaced by renaming a new file over them: a link there would
// be replaced, not followed, so its target would silently stop being the
// file the user thinks was written. Refused, --force or not.
#include "training/output_files.h"

namespace lockstep::app {

// Throws an Error naming out.option and out.path when out.path is a symbolic link.
void refuse_output_link(const OutputFile& out);

}  // namespace lockstep::app
