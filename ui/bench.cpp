// The benchmark modes: frames timed while a call plays, pans or jumps, and
// the time from Stop to the prompt.
#include "ui/bench.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "ui/app.h"

namespace descent::ui {

namespace {

using Clock = std::chrono::steady_clock;
const Clock::time_point g_process_start = Clock::now();  // (static initialisation: before main)

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

void Benchmark::start(App& app) const {
  if (!o.bench_frames || o.bench_jump) return;
  app.play.playing = true;
  app.play.speed = 4;
}

void Benchmark::before_frame(App& app, int frames) const {
  if (o.bench_jump && app.has_steps()) {  // a step far from the last: a prime stride through the story
    app.play.scrub(app.story, (static_cast<size_t>(frames) * 7919) % app.story.steps.size());
    return;
  }
  if (o.bench_frames && !app.play.playing) app.play.toggle(app.story);  // loop while benchmarking
  if (o.bench_pan) {  // pan by 2% of the view and zoom in and out around the middle
    const double span = app.view_end_ns - app.view_start_ns;
    const double shift = span * ((frames / 50) % 2 ? -0.02 : 0.02);
    app.view_start_ns += shift;
    app.view_end_ns += shift;
    app.timeline_follow = false;
  }
}

bool Benchmark::after_frame(App& app, int frames, double ms, bool run_ended, bool was_running) {
  if (frames == 1) first_frame_s = std::chrono::duration<double>(Clock::now() - g_process_start).count();
  if (o.bench_stop) {  // frames while the code runs, then Stop, then the time until the prompt is back
    if (run_ended || (!was_running && !app.running.active)) return true;
    (stopping ? stopping_ms : frame_ms).push_back(ms);
    if (!stopping && static_cast<int>(frame_ms.size()) >= o.bench_frames) {
      stopping = true;
      stop_run(app);
    }
  } else if (o.bench_frames) {
    frame_ms.push_back(ms);
    if (frames >= o.bench_frames) return true;
  }
  return false;
}

void Benchmark::report(const App& app) const {
  std::vector<double> sorted = frame_ms;
  std::sort(sorted.begin(), sorted.end());
  const double p90 = sorted.empty() ? 0.0 : sorted[sorted.size() * 9 / 10], max = sorted.empty() ? 0.0 : sorted.back();
  if (o.bench_stop) {
    const double stopping_max = stopping_ms.empty() ? 0.0 : *std::max_element(stopping_ms.begin(), stopping_ms.end());
    std::printf(
        "while the code ran: frames %zu  median %.2f ms  p90 %.2f ms  max %.2f ms  stop to prompt %.1f ms  "
        "frames meanwhile %zu, max %.2f ms  spans %zu\n",
        frame_ms.size(), median(frame_ms), p90, max, app.last_stop_ms, stopping_ms.size(), stopping_max,
        app.trace().spans.size());
  } else if (o.bench_frames) {
    std::printf(
        "redraw %s  frames %zu  spans %zu  first frame %.3f s after start  median %.2f ms  p90 %.2f ms  max %.2f "
        "ms\n",
        app.redraw_damaged ? "damaged" : "full", frame_ms.size(), app.trace().spans.size(), first_frame_s,
        median(frame_ms), p90, max);
  }
}

}  // namespace descent::ui
