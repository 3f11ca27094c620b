#pragma once
// The confusion-matrix picture of `lockstep eval --plot`: one row per true
// class, one column per predicted class, each cell shaded by the share of its
// row and, for up to 20 classes, labelled with its count.
#include <cstdint>
#include <string>
#include <vector>

namespace lockstep::app {

// `confusion` holds classes x classes counts, row-major (true, predicted).
// Returns "" when the PNG was written, otherwise why not.
std::string draw_confusion_matrix(const std::string& png, const std::string& title,
                                  const std::vector<int64_t>& confusion, const std::vector<std::string>& class_names);

}  // namespace lockstep::app
