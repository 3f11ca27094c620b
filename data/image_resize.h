#pragma once
// Shrinking an 8-bit image by area averaging: each output pixel is the mean of
// the input area it covers, input pixels cut by the area's edges counting by
// the fraction inside (the box filter of PIL's reduce and OpenCV's INTER_AREA).
// Separable: a vertical pass into a float row, then a horizontal one.
#include <cstdint>

namespace lockstep::data {

// An interleaved image (rows of `width` pixels of `channels` bytes each, rows
// `stride` bytes apart) that the shrink reads.
struct PixelsHWC {
  const uint8_t* data = nullptr;
  int64_t height = 0, width = 0, channels = 0, stride = 0;
  // Where the content ends, from the top-left corner, in pixels times
  // content_denom, when the last row or column is partly padding: a JPEG
  // decoded at scale M/8 holds W*M/8 pixels of content in ceil(W*M/8) pixels.
  // 0: the whole height or width.
  int64_t content_height = 0, content_width = 0, content_denom = 1;
};

// Writes the content of `in` shrunk to out_height x out_width as
// channel-major planes ([C, out_height, out_width]), rounded to the nearest
// level. Needs 0 < out_height <= the content's height and 0 < out_width <= its
// width; an image of the target size comes out unchanged (only de-interleaved).
void shrink_area(const PixelsHWC& in, int64_t out_height, int64_t out_width, uint8_t* out);
// The same, unrounded, each mean multiplied by `scale` (1/255 for [0, 1]).
void shrink_area(const PixelsHWC& in, int64_t out_height, int64_t out_width, float* out, float scale);

}  // namespace lockstep::data
