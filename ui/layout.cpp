// The remembered layout (Note [The remembered layout], layout.h): one
// `key = value` a line.
#include "ui/layout.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

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

AppLayout load_layout(std::string& problem) {
  AppLayout l;
  const std::string path = layout_path();
  std::ifstream in(path);
  if (!in) return l;  // never saved: the defaults
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
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::trunc);
    if (!(f << out.str())) {
      problem = "cannot write the layout to " + path;
      return false;
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    problem = "cannot write the layout to " + path;
    return false;
  }
  return true;
}

}  // namespace descent::ui
