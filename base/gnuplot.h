#pragma once
// PNG figures drawn by gnuplot (Debian's gnuplot-nox, installed by
// scripts/setup): what the benchmark charts and the training-curve and
// confusion-matrix pictures of `lockstep` share. A figure is a side product:
// without gnuplot, or when it fails, draw_png says why and nothing throws.
#include <string>

namespace lockstep::gnuplot {

// A gnuplot single-quoted string (a quote inside is doubled; a line break,
// which would end the command, becomes a space).
std::string quoted(const std::string& text);
// A number as gnuplot reads it; "?" (set datafile missing '?') when not finite.
std::string number(double value);

// Runs `script` (the lines after the terminal and output settings) to draw a
// width x height PNG at `png`, with the cairo terminal and, when that fails,
// the libgd one; gnuplot runs with no shell between, so any file name works.
// The picture is drawn beside `png` and renamed over it, so a viewer
// refreshing it never reads half a file. Returns "" when the PNG was
// written, otherwise why not (gnuplot missing, or its error output). Whether
// `png` may be replaced is the caller's to check (training/output_files.h).
std::string draw_png(const std::string& png, int width, int height, const std::string& script);

}  // namespace lockstep::gnuplot
