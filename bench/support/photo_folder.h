#pragma once
// A folder of photo-sized JPEGs for the loader benchmarks: what a user's
// camera or web images cost to decode, made here from a small data set so the
// benchmark needs no download.
#include <cstdint>
#include <string>

#include "data/dataset.h"

namespace lockstep::bench {

// Writes `count` width x height RGB JPEGs (quality 90) under `root`, one
// sub-folder per class of `source`: sample i % source.size() enlarged
// bilinearly, tinted by its class over a soft gradient, with seeded pixel
// noise so that the files compress (and decode) like photographs, not like
// flat colour. Returns the bytes written.
int64_t write_photo_folder(const std::string& root, int count, int width, int height, const data::Dataset& source);

}  // namespace lockstep::bench
