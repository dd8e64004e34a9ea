// The app's layout, remembered between runs: the zoom, where the panels
// divide the window, and which of them are shown (issue 23).
//
// Note [The remembered layout]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A classroom's screens differ (a 1280x720 projector, a 4K monitor), so the
// type follows the monitor and the teacher: the fonts are built at the
// window's content scale (GLFW's, the monitor's DPI over 96; read as the
// app starts and again when the window moves to a monitor of another
// density, from the laptop's panel to the projector) times a zoom that
// Ctrl + and Ctrl - change in steps of 10% and Ctrl 0 puts back; the fonts are
// rebuilt at the new size rather than stretched, so they stay sharp. The
// borders between the building, the right panel, the timeline and the console
// can be dragged, and the View menu shows or hides the timeline and the
// console. All of it is kept in one small text file,
// $XDG_CONFIG_HOME/descent/app.conf (~/.config/descent/ by default), written
// when the user changes something and read at start. Headless runs
// (--screenshot) neither read nor write it, so a picture never depends on how
// the last person left the window; --zoom gives them a zoom of their own.
#pragma once

#include <string>

namespace descent::ui {

struct AppLayout {
  float zoom = 1.0f;      // times the monitor's scale: 0.5 to 3
  float split_x = 0.56f;  // the building's share of the width (normal mode)
  float split_y = 0.60f;  // the building's share of the height below the toolbar (normal mode)
  bool timeline = true;   // the timeline shown under the building
  bool console = true;    // the console shown under the right panel
};

constexpr float kMinZoom = 0.5f, kMaxZoom = 3.0f, kZoomStep = 1.1f;
constexpr float kMinSplit = 0.25f, kMaxSplit = 0.80f;

// The file: $XDG_CONFIG_HOME/descent/app.conf, else ~/.config/descent/app.conf.
std::string layout_path();
// The remembered layout; the defaults where the file is missing, and also, with
// `problem` set, where it is not a regular file of at most 64 KiB (a pipe, a
// link to /dev/zero: Note [Reading app.conf safely], layout.cpp). A line that
// cannot be read is skipped and named in `problem` (the rest still count).
AppLayout load_layout(std::string& problem);
// Writes it whole or not at all (Note [Saving a file whole], tracer/trace.cpp);
// false with `problem` naming the file and the reason when it cannot.
bool save_layout(const AppLayout& l, std::string& problem);
// Within the limits above.
AppLayout clamped(AppLayout l);

// The text of the regular file at `path`, of at most `max_bytes` (Note
// [Reading app.conf safely], layout.cpp); "" where it is missing, and "" with
// `problem` naming the path and why (`what`: "a layout file", "the code to
// check") where it is not a regular file, is larger, or cannot be read.
std::string read_small_file(const std::string& path, size_t max_bytes, const std::string& what, std::string& problem);

}  // namespace descent::ui
