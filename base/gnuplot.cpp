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

// An anonymous temporary file (TMPDIR, else /tmp): unlinked as soon as it is
// made, so it leaves nothing behind however the process ends (a second
// Ctrl-C, a kill) while gnuplot runs.
struct AnonymousFile {
  int fd = -1;
  AnonymousFile() {
    const char* dir = std::getenv("TMPDIR");
    std::string path = std::string(dir && *dir ? dir : "/tmp") + "/lockstep-gnuplot-XXXXXX";
    fd = ::mkstemp(path.data());
    if (fd >= 0) ::unlink(path.c_str());
  }
  ~AnonymousFile() {
    if (fd >= 0) ::close(fd);
  }
  AnonymousFile(const AnonymousFile&) = delete;
  AnonymousFile& operator=(const AnonymousFile&) = delete;
};

// Runs gnuplot with `script` on its standard input and no shell between (file
// names reach gnuplot only inside the script, quoted for gnuplot); returns
// false when gnuplot cannot be started, else fills `output` with what it
// printed. Both travel in anonymous files, not pipes: no SIGPIPE when gnuplot
// stops early, no deadlock on a long script.
bool run_gnuplot(const std::string& script, std::string& output) {
  AnonymousFile script_file, output_file;
  if (script_file.fd < 0 || output_file.fd < 0) {
    output = std::string("cannot create a temporary file (") + std::strerror(errno) + ")";
    return true;
  }
  if (::write(script_file.fd, script.data(), script.size()) != static_cast<ssize_t>(script.size()) ||
      ::lseek(script_file.fd, 0, SEEK_SET) != 0) {
    output = std::string("cannot write a temporary file (") + std::strerror(errno) + ")";
    return true;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, script_file.fd, 0);
  posix_spawn_file_actions_adddup2(&actions, output_file.fd, 1);
  posix_spawn_file_actions_adddup2(&actions, output_file.fd, 2);
  std::string program = "gnuplot";
  char* argv[] = {program.data(), nullptr};
  pid_t pid = -1;
  const int spawned = ::posix_spawnp(&pid, "gnuplot", &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) return false;
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  output.clear();
  char buffer[4096];
  for (off_t at = 0;;) {
    const ssize_t got = ::pread(output_file.fd, buffer, sizeof buffer, at);
    if (got <= 0) break;
    output.append(buffer, static_cast<size_t>(got));
    at += got;
  }
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
