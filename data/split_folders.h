#pragma once
// Image folders split the way users lay them out: train/ beside test/, val/,
// valid/ or validation/ (any case), or TrainData/ beside ValidationData/ (or
// TestData/), as the distributed VGG-F example has it.
#include <string>

namespace lockstep::data {

struct SplitFolders {
  std::string train, test;  // both empty: no split layout; test empty: a train folder alone
};

// Looks at the names of `dir`'s sub-folders. Throws lockstep::Error, listing
// what was found, when the layout is ambiguous: two training folders (train/
// and Train/, or train/ and TrainData/), two test folders (test/ and val/),
// or test folders without a training folder.
SplitFolders find_split_folders(const std::string& dir);

}  // namespace lockstep::data
