#include "base/gnuplot.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

namespace lockstep::gnuplot {

std::string quoted(const std::string& text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') {
      out += "''";
    } else if (c == '\n' || c == '\r') {
      out += ' ';  // a gnuplot string cannot span lines: a newline would end the command
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::string number(double value) {
  if (!std::isfinite(value)) return "?";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", value);
  return buf;
}

namespace {

// A temporary file of ours (TMPDIR, else /tmp), created empty and open.
struct TempFile {
  std::string path;
  int fd = -1;
  explicit TempFile(const char* suffix) {
    const char* dir = std::getenv("TMPDIR");
    path = std::string(dir && *dir ? dir : "/tmp") + "/lockstep-gnuplot-XXXXXX" + suffix;
    fd = ::mkstemps(path.data(), static_cast<int>(std::strlen(suffix)));
  }
  ~TempFile() {
    if (fd >= 0) ::close(fd);
    if (fd >= 0) ::unlink(path.c_str());
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
};

// Runs gnuplot on `script` with no shell between (file names reach gnuplot
// only inside the script, quoted for gnuplot); returns false when gnuplot
// cannot be started, else fills `output` with what it printed.
bool run_gnuplot(const std::string& script, std::string& output) {
  TempFile script_file(".gp"), output_file(".txt");
  if (script_file.fd < 0 || output_file.fd < 0) {
    output = std::string("cannot create a temporary file (") + std::strerror(errno) + ")";
    return true;
  }
  if (::write(script_file.fd, script.data(), script.size()) != static_cast<ssize_t>(script.size())) {
    output = std::string("cannot write a temporary file (") + std::strerror(errno) + ")";
    return true;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, output_file.fd, 1);
  posix_spawn_file_actions_adddup2(&actions, output_file.fd, 2);
  std::string program = "gnuplot";
  char* argv[] = {program.data(), script_file.path.data(), nullptr};
  pid_t pid = -1;
  const int spawned = ::posix_spawnp(&pid, "gnuplot", &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) return false;
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  std::ifstream in(output_file.path);
  output.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return true;
}

}  // namespace

std::string draw_png(const std::string& png, int width, int height, const std::string& script) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path out(png);
  if (out.has_parent_path()) fs::create_directories(out.parent_path(), ec);
  // Drawn beside the picture (so the rename below stays in one file system),
  // under a name of this process's that ends in .png: gnuplot goes by it.
  const std::string drawing = png + ".part-" + std::to_string(::getpid()) + ".png";
  std::string output;
  for (const char* terminal : {"pngcairo", "png"}) {
    fs::remove(drawing, ec);
    std::ostringstream full;
    full << "set terminal " << terminal << " size " << width << "," << height << " noenhanced font ',11'\n"
         << "set output " << quoted(drawing) << "\n"
         << "set datafile missing '?'\n"
         << script;
    if (!run_gnuplot(full.str(), output))
      return "gnuplot is not on PATH (Debian package gnuplot-nox, installed by scripts/setup)";
    if (fs::exists(drawing, ec) && fs::file_size(drawing, ec) > 0) {
      fs::rename(drawing, out, ec);
      if (ec) {
        fs::remove(drawing, ec);
        return "cannot write " + png + " (" + ec.message() + ")";
      }
      return "";
    }
  }
  fs::remove(drawing, ec);
  return "gnuplot failed: " + output.substr(0, 300);
}

}  // namespace lockstep::gnuplot
