#pragma once
// The class names file an export writes beside its state dict
// (OUT.classes.txt): one name a line, line i the name of output i, whatever
// bytes the names hold. A class folder's name may hold a line break, a
// backslash or bytes that are not UTF-8; written raw, the file would hold
// more lines than classes, or text no editor shows as it is. So each name is
// escaped: \\ for a backslash, \n \r \t for those, \xHH for any other control
// byte and, in a name that is not UTF-8, for every byte from 0x80. A name of
// printable UTF-8 without a backslash (nearly all) is written as it is.
#include <string>
#include <vector>

namespace lockstep {

// The file's whole text for `names`.
std::string classes_text(const std::vector<std::string>& names);

}  // namespace lockstep
