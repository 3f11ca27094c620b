#include "base/gnuplot.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace lockstep::gnuplot {

std::string quoted(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

std::string number(double value) {
  if (!std::isfinite(value)) return "?";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", value);
  return buf;
}

std::string draw_png(const std::string& png, int width, int height, const std::string& script) {
  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0)
    return "gnuplot is not on PATH (Debian package gnuplot-nox, installed by scripts/setup)";
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path out(png);
  if (out.has_parent_path()) fs::create_directories(out.parent_path(), ec);
  // Ends in .png: gnuplot and viewers go by the name.
  const std::string drawing = png + ".part.png";
  const std::string script_path = png + ".gp";
  std::string output;
  for (const char* terminal : {"pngcairo", "png"}) {
    fs::remove(drawing, ec);
    {
      std::ofstream f(script_path);
      f << "set terminal " << terminal << " size " << width << "," << height << " noenhanced font ',11'\n"
        << "set output " << quoted(drawing) << "\n"
        << "set datafile missing '?'\n"
        << script;
    }
    const std::string command = "gnuplot " + quoted(script_path) + " 2>&1";
    output.clear();
    if (FILE* pipe = popen(command.c_str(), "r")) {
      char buf[512];
      while (std::fgets(buf, sizeof buf, pipe)) output += buf;
      pclose(pipe);
    }
    if (fs::exists(drawing, ec) && fs::file_size(drawing, ec) > 0) {
      fs::rename(drawing, out, ec);
      if (ec) return "cannot write " + png + " (" + ec.message() + ")";
      fs::remove(script_path, ec);
      return "";
    }
  }
  fs::remove(drawing, ec);
  return "gnuplot failed (script kept in " + script_path + "): " + output.substr(0, 300);
}

}  // namespace lockstep::gnuplot
