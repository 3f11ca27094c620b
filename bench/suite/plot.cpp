#include "plot.h"

#include "base/gnuplot.h"

#include <cmath>
#include <cstdio>
#include <sstream>

namespace lockstep::bench {

namespace {

using gnuplot::number;
using gnuplot::quoted;

std::string fmt_series(size_t i, const std::string& title) {
  return "$d" + std::to_string(i) + " using 1:2 with linespoints lw 2 pt 7 title " + quoted(title);
}

std::string header(const PlotSpec& spec) {
  std::ostringstream s;
  s << "set title " << quoted(spec.title) << "\n"
    << "set xlabel " << quoted(spec.xlabel) << "\n"
    << "set ylabel " << quoted(spec.ylabel) << "\n"
    << "set grid\nset key bmargin center horizontal maxrows 2\nset bmargin 6\nset offsets 0, 0, graph 0.08, 0\n";
  if (spec.logx) s << "set logscale x " << spec.logx_base << "\n";
  if (spec.logy) s << "set logscale y 10\n";
  else if (spec.y_from_zero) s << "set yrange [0:*]\n";
  if (spec.xtics > 0) s << "set xtics " << spec.xtics << "\n";
  if (!spec.xformat.empty()) s << "set format x " << quoted(spec.xformat) << "\n";
  return s.str();
}

std::string draw(const std::string& png, const std::string& body, const PlotSpec& spec,
                 std::vector<std::string>& notes) {
  const std::string problem = gnuplot::draw_png(png, 1000, 620, header(spec) + body);
  if (problem.empty()) return png;
  notes.push_back("no PNG: " + problem);
  return "";
}

}  // namespace

std::string plot_lines(const std::string& png, const PlotSpec& spec, const std::vector<Series>& series,
                       std::vector<std::string>& notes) {
  std::ostringstream body;
  std::string plot = "plot ";
  for (size_t i = 0; i < series.size(); ++i) {
    body << "$d" << i << " << EOD\n";
    for (size_t k = 0; k < series[i].x.size(); ++k) body << number(series[i].x[k]) << " " << number(series[i].y[k]) << "\n";
    body << "EOD\n";
    plot += (i ? ", " : "") + fmt_series(i, series[i].title);
  }
  body << plot << "\n";
  return draw(png, body.str(), spec, notes);
}

std::string plot_bars(const std::string& png, const PlotSpec& spec, const std::vector<std::string>& labels,
                      const std::vector<Series>& series, std::vector<std::string>& notes,
                      const std::vector<std::string>& missing) {
  const size_t n = series.size();
  std::ostringstream body;
  body << "set style data histograms\nset style histogram clustered gap 1\n"
       << "set style fill solid 0.85 border -1\nset xtics nomirror\n"
       << "set xrange [-0.5:" << labels.size() - 0.5 << "]\n";
  body << "$bars << EOD\n";
  for (size_t k = 0; k < labels.size(); ++k) {
    std::string label = labels[k];
    for (char& c : label)
      if (c == '"') c = '\'';
    body << '"' << label << '"';
    for (const Series& s : series) body << " " << number(k < s.y.size() ? s.y[k] : NAN);
    body << "\n";
  }
  body << "EOD\n";
  for (size_t k = 0; k < labels.size() && k < missing.size(); ++k) {
    bool any = false;
    for (const Series& s : series) any = any || (k < s.y.size() && std::isfinite(s.y[k]));
    if (!any && !missing[k].empty())
      body << "set label " << k + 1 << " " << quoted(missing[k]) << " at first " << k
           << ", graph 0.06 center textcolor rgb 'gray40'\n";
  }
  body << "plot ";
  for (size_t i = 0; i < n; ++i)
    body << (i ? ", '' " : "$bars ") << "using " << i + 2 << (i ? "" : ":xtic(1)")
         << (n == 1 ? std::string(" notitle") : " title " + quoted(series[i].title));
  // Each bar's value above it: bar i of a group of n sits (i - (n-1)/2) / (n+1) from the group's centre.
  for (size_t i = 0; i < n; ++i) {
    const double offset = (static_cast<double>(i) - (n - 1) / 2.0) / (n + 1);
    body << ", '' using ($0 + " << number(offset) << "):" << i + 2 << ":(sprintf('%.3g', $" << i + 2
         << ")) with labels offset 0,0.8 notitle";
  }
  body << "\n";
  return draw(png, body.str(), spec, notes);
}

}  // namespace lockstep::bench
