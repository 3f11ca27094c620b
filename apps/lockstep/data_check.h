#pragma once
// The data a checkpoint was trained on against the data a later command
// opens (eval, predict, --resume). The checkpoint holds the class names and
// the data's identity (data/data_identity.h: sample and class counts, a
// fingerprint); a renamed, added or removed class folder is refused by name,
// since every label would mean another class; other changes (files added,
// removed or edited) are told.
#include <map>
#include <string>
#include <vector>

#include "data/dataset.h"

namespace lockstep::app {

// The identities of the training and test sets (test may be null) as the
// checkpoint's "data_identity" metadata.
std::string data_identity_json(const data::Dataset& train, const data::Dataset* test);

// How `now` differs from the identity the checkpoint's metadata saved for
// its "train" or "test" set, one phrase each ("samples: 120 then, 125 now");
// empty when the same, or when the checkpoint saved none.
std::vector<std::string> data_changes(const std::map<std::string, std::string>& meta, const char* which,
                                      const data::Dataset& now);

// Throws naming the classes that differ (missing, new, or the same in
// another order) between the checkpoint's `saved` classes and the data's.
// `data` and `checkpoint` name the two for the message.
void check_same_classes(const std::vector<std::string>& saved, const std::vector<std::string>& now,
                        const std::string& data, const std::string& checkpoint);

}  // namespace lockstep::app
