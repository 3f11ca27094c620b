#include "confusion_plot.h"

#include <algorithm>
#include <sstream>

#include "base/error.h"
#include "base/gnuplot.h"

namespace lockstep::app {

using gnuplot::number;
using gnuplot::quoted;

std::string draw_confusion_matrix(const std::string& png, const std::string& title,
                                  const std::vector<int64_t>& confusion, const std::vector<std::string>& class_names) {
  const size_t n = class_names.size();
  LS_CHECK(n > 0 && confusion.size() == n * n, "confusion matrix of ", confusion.size(), " cells for ", n, " classes");
  std::ostringstream s;
  // One line per cell: predicted, true, share of the row, count.
  s << "$cells << EOD\n";
  for (size_t t = 0; t < n; ++t) {
    int64_t row = 0;
    for (size_t p = 0; p < n; ++p) row += confusion[t * n + p];
    for (size_t p = 0; p < n; ++p) {
      const int64_t count = confusion[t * n + p];
      s << p << " " << t << " " << number(row > 0 ? static_cast<double>(count) / row : 0.0) << " " << count << "\n";
    }
  }
  s << "EOD\n";
  auto tics = [&](const char* axis) {
    std::string out = std::string("set ") + axis + "tics (";
    for (size_t c = 0; c < n; ++c) out += (c ? ", " : "") + quoted(class_names[c]) + " " + std::to_string(c);
    return out + ")\n";
  };
  s << "set title " << quoted(title) << "\n"
    << "set xlabel 'predicted class'\nset ylabel 'true class'\n"
    << "set xrange [-0.5:" << n - 0.5 << "]\nset yrange [" << n - 0.5 << ":-0.5]\n"
    << tics("x") << tics("y") << "set xtics rotate by 45 right\n"
    << "set cbrange [0:1]\nset cblabel 'share of the true class'\n"
    << "set palette defined (0 'white', 1 '#08519c')\nset size ratio -1\n"
    << "plot $cells using 1:2:3 with image notitle";
  if (n <= 20)
    s << ", $cells using 1:2:(sprintf('%d', $4)):($3 > 0.5 ? 0xffffff : 0) with labels textcolor rgb variable notitle";
  s << "\n";
  const int side = static_cast<int>(std::clamp<size_t>(300 + 40 * n, 500, 1400));
  return gnuplot::draw_png(png, side + 150, side, s.str());
}

}  // namespace lockstep::app
