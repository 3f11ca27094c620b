#pragma once
// PNG figures drawn by gnuplot (Debian's gnuplot-nox, installed by
// scripts/setup). Without gnuplot a suite still prints its table and writes
// its JSON; the figure is then left out with a note saying why.
#include <string>
#include <vector>

namespace lockstep::bench {

struct Series {
  std::string title;
  std::vector<double> x, y;  // plot_bars: y only, one value per label (NaN: no bar)
};

struct PlotSpec {
  PlotSpec(std::string t, std::string x, std::string y)
      : title(std::move(t)), xlabel(std::move(x)), ylabel(std::move(y)) {}
  std::string title, xlabel, ylabel;
  bool logx = false, logy = false;
  int logx_base = 2;
  double xtics = 0.0;  // tic increment; 0: gnuplot's choice
  bool y_from_zero = true;  // linear y axes start at 0
  std::string xformat;      // gnuplot format of the x tics, e.g. "%.0b%B" (4k, 16M)
};

// A line plot of y against x, one line per series. Returns `png` when the
// file was written and is not empty; otherwise "" and a note in `notes`.
std::string plot_lines(const std::string& png, const PlotSpec& spec, const std::vector<Series>& series,
                       std::vector<std::string>& notes);
// Clustered bars: one group per label, one bar per series, each bar labelled
// with its value; `missing[k]`, when given, is written in group k's place
// when none of its bars has a value ("not present").
std::string plot_bars(const std::string& png, const PlotSpec& spec, const std::vector<std::string>& labels,
                      const std::vector<Series>& series, std::vector<std::string>& notes,
                      const std::vector<std::string>& missing = {});

}  // namespace lockstep::bench
