// Playback of a story. See playback.h.
#include "ui/playback.h"

#include <algorithm>

namespace descent::ui {

namespace {
size_t last_step(const Story& s) { return s.steps.empty() ? 0 : s.steps.size() - 1; }
}  // namespace

double Playback::step_seconds(const Story& s, size_t k) const {
  if (pace == Pace::Teaching || k + 1 >= s.steps.size()) return kTeachingStepSeconds / speed;
  const double us = static_cast<double>(s.steps[k + 1].at_ns - s.steps[k].at_ns) / 1000.0;
  return std::clamp(us * kRealTimeSecondsPerUs, kMinStepSeconds, kMaxStepSeconds) / speed;
}

void Playback::advance(const Story& s, double dt) {
  const size_t last = last_step(s);
  while (playing && dt > 0) {
    if (step() >= last) {
      position = static_cast<double>(last);
      playing = false;
      break;
    }
    const double d = step_seconds(s, step());
    const double left = (1.0 - fraction()) * d;
    if (dt < left) {
      position += dt / d;
      break;
    }
    dt -= left;
    position = static_cast<double>(step() + 1);
  }
}

void Playback::step_forward(const Story& s) {
  playing = false;
  position = static_cast<double>(std::min(step() + 1, last_step(s)));
}

void Playback::step_back(const Story&) {
  playing = false;
  // Mid-move, "up" first returns to the step the move started from.
  position = fraction() > 0 ? static_cast<double>(step()) : static_cast<double>(step() > 0 ? step() - 1 : 0);
}

void Playback::to_start() {
  playing = false;
  position = 0;
}

void Playback::to_end(const Story& s) {
  playing = false;
  position = static_cast<double>(last_step(s));
}

void Playback::scrub(const Story& s, size_t k) { position = static_cast<double>(std::min(k, last_step(s))); }

void Playback::toggle(const Story& s) {
  if (!playing && step() >= last_step(s)) position = 0;
  playing = !playing && !s.steps.empty();
}

}  // namespace descent::ui
