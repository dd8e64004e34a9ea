// What the app writes for a script or a test: the picture of the last frame
// (--screenshot) and the state as JSON (--state), screenshot.cpp.
#pragma once

#include <chrono>
#include <string>

namespace descent::ui {

struct App;

// Reads the back buffer (before the swap) into a PNG; false with `error`.
bool write_png(const std::string& path, int w, int h, std::string& error);
// A text file, whole or not at all; false with `error` naming the file and the reason.
bool write_text(const std::string& path, const std::string& text, std::string& error);

// The --state file in a window, rewritten when the state changes; when only
// the clock in it changes (the frame counter, a run's seconds), at most
// every kThrottle. Headless, the state is written once, at the end. A write
// that fails is said once on stderr, until one succeeds again (headless, at
// the end only, with the exit status).
struct StateWriter {
  static constexpr auto kThrottle = std::chrono::milliseconds(100);
  StateWriter(std::string p, bool headless) : path(std::move(p)), quiet(headless) {}
  void update(const App& app);

  std::string path, last_stable, last_full;
  std::chrono::steady_clock::time_point last_write{};
  bool quiet, failing = false;
};

}  // namespace descent::ui
