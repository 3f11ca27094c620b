#pragma once
// The JSON-lines metrics file of `lockstep train`. Each line reaches the file
// whole or not at all: when a write fails (a full disk, an I/O error, the
// file-size limit) the file is cut back to its last whole line and the write
// throws an Error naming the file and the reason, which stops the run; the
// checkpoint already saved stays as it was.
#include <string>

namespace lockstep::app {

class MetricsFile {
public:
  MetricsFile() = default;
  ~MetricsFile();
  MetricsFile(const MetricsFile&) = delete;
  MetricsFile& operator=(const MetricsFile&) = delete;

  // Opens `path` for appending (a resumed run) or truncated (a new one).
  void open(const std::string& path, bool append);
  // Writes `line` and a newline.
  void write_line(const std::string& line);

private:
  std::string path_;
  int fd_ = -1;
  long long whole_ = 0;  // the file's size after its last whole line
};

}  // namespace lockstep::app
