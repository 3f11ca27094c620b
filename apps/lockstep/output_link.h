#pragma once
// Every output lockstep writes (checkpoints, exports, pictures, cache files)
// is replaced by renaming a new file over it: a link there would be
// replaced, not followed, so its target would silently stop being the file
// the user thinks was written (and a metrics file, appended to, would be
// written through it). Refused, --force or not; only a link to a device or
// FIFO stays allowed where out.allow_special (--metrics /dev/stdout).
#include "training/output_files.h"

namespace lockstep::app {

// Throws an Error naming out.option and out.path when out.path is a symbolic link.
void refuse_output_link(const OutputFile& out);

}  // namespace lockstep::app
