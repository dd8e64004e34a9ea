// The remembered layout (Note [The remembered layout], layout.h): one
// `key = value` a line.
#include "ui/layout.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <stdexcept>

#include "tracer/trace.h"

namespace descent::ui {

std::string layout_path() {
  const char* xdg = std::getenv("XDG_CONFIG_HOME");
  if (xdg && *xdg) return std::string(xdg) + "/descent/app.conf";
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : ".") + "/.config/descent/app.conf";
}

AppLayout clamped(AppLayout l) {
  l.zoom = std::clamp(l.zoom, kMinZoom, kMaxZoom);
  l.split_x = std::clamp(l.split_x, kMinSplit, kMaxSplit);
  l.split_y = std::clamp(l.split_y, kMinSplit, kMaxSplit);
  return l;
}

// Note [Reading app.conf safely]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The file is read as the app starts, so whatever sits at its path must not
// stop the start: a named pipe would block open() until someone writes to it,
// and a link to /dev/zero would be read forever, one endless line. So the
// file is opened with O_NONBLOCK (a pipe's open returns at once), fstat()
// must call it a regular file, and at most kMaxLayoutBytes are read; anything
// else (a pipe, a device, a directory, a larger file, an unreadable one) is
// treated as absent: the defaults, and one problem naming the path and why.
// A missing file is no problem: the app was never left with a layout.
namespace {
constexpr size_t kMaxLayoutBytes = 64 * 1024;  // a real app.conf is about 150 bytes
}  // namespace

std::string read_small_file(const std::string& path, size_t max_bytes, const std::string& what, std::string& problem) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno != ENOENT) problem = path + ": cannot read " + what + " (" + std::strerror(errno) + ")";
    return "";
  }
  std::string text;
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    problem = path + ": cannot read " + what + " (" + std::strerror(errno) + ")";
  } else if (!S_ISREG(st.st_mode)) {
    problem = path + ": not a regular file (" +
              (S_ISDIR(st.st_mode)    ? "a directory"
               : S_ISFIFO(st.st_mode) ? "a named pipe"
                                      : "a device or socket") +
              ")";
  } else {
    text.resize(max_bytes + 1);  // one more, to tell a file that is too large
    size_t got = 0;
    while (got < text.size()) {
      const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        problem = path + ": cannot read " + what + " (" + std::strerror(errno) + ")";
        got = 0;
        break;
      }
      if (n == 0) break;
      got += static_cast<size_t>(n);
    }
    text.resize(got);
    if (got > max_bytes) {
      problem = path + ": larger than " + std::to_string(max_bytes / 1024) + " KiB, not " + what;
      text.clear();
    }
  }
  ::close(fd);
  return text;
}

AppLayout load_layout(std::string& problem) {
  AppLayout l;
  const std::string path = layout_path();
  std::istringstream in(read_small_file(path, kMaxLayoutBytes, "a layout file", problem));
  if (!problem.empty()) problem += "; using the defaults";
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (!line.empty() && line.back() == '\r') line.pop_back();  // a file saved with CRLF line ends
    if (line.empty() || line[0] == '#') continue;
    const size_t eq = line.find('=');
    std::string key = eq == std::string::npos ? line : line.substr(0, eq);
    std::string value = eq == std::string::npos ? "" : line.substr(eq + 1);
    key.erase(key.find_last_not_of(" \t") + 1);
    value.erase(0, value.find_first_not_of(" \t"));
    char* end = nullptr;
    const float number = std::strtof(value.c_str(), &end);
    const bool is_number = end && end != value.c_str() && *end == '\0' && std::isfinite(number);
    const bool is_flag = value == "true" || value == "false";
    bool ok = true;
    if (key == "zoom" && is_number)
      l.zoom = number;
    else if (key == "split_x" && is_number)
      l.split_x = number;
    else if (key == "split_y" && is_number)
      l.split_y = number;
    else if (key == "timeline" && is_flag)
      l.timeline = value == "true";
    else if (key == "console" && is_flag)
      l.console = value == "true";
    else
      ok = false;
    if (!ok && problem.empty()) {
      problem = path + ":" + std::to_string(n) +
                ": expected zoom, split_x or split_y = a number, or timeline or "
                "console = true/false; skipped '" +
                line.substr(0, 60) + "'";
    }
  }
  return clamped(l);
}

bool save_layout(const AppLayout& layout, std::string& problem) {
  const AppLayout l = clamped(layout);
  const std::string path = layout_path();
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  std::ostringstream out;
  out << "# descent app's layout (Note [The remembered layout]); delete this file for the defaults\n"
      << "zoom = " << l.zoom << "\nsplit_x = " << l.split_x << "\nsplit_y = " << l.split_y
      << "\ntimeline = " << (l.timeline ? "true" : "false") << "\nconsole = " << (l.console ? "true" : "false") << "\n";
  try {
    trace::write_text_file(path, out.str());  // whole or not at all: Note [Saving a file whole]
  } catch (const std::runtime_error& e) {
    problem = std::string("cannot save the layout: ") + e.what();
    return false;
  }
  return true;
}

}  // namespace descent::ui
