// The benchmark modes (bench.cpp): --bench-frames N, the call played at 4x
// in a loop for N frames (with --bench-pan, the timeline panned and zoomed
// each frame; with --bench-jump, a far step opened each frame, as a click on
// the timeline or a search does in a long story), each frame timed to its
// glFinish; --bench-stop: N frames while the code runs, then Stop, and the
// frames until the prompt is back (bench_app.py reads what report prints).
#pragma once

#include <vector>

namespace descent::ui {

struct App;
struct Options;

struct Benchmark {
  explicit Benchmark(const Options& opts) : o(opts) {}
  // Before the first frame: the playback started.
  void start(App& app) const;
  // Before frame number `frames` is drawn: the playback looped, the timeline panned.
  void before_frame(App& app, int frames) const;
  // After frame number `frames`, drawn in `ms`: true when the benchmark is over.
  bool after_frame(App& app, int frames, double ms, bool run_ended, bool was_running);
  // The numbers, on stdout.
  void report(const App& app) const;

  const Options& o;
  std::vector<double> frame_ms;
  std::vector<double> stopping_ms;  // --bench-stop: frames between Stop and the prompt
  bool stopping = false;            // --bench-stop: Stop has been pressed
  double first_frame_s = 0;         // the first frame's end, after the process began
};

}  // namespace descent::ui
