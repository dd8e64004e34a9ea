// Playback of a story: where the token is, and how it moves.
//
// Plain data, no ImGui. The position is a step index plus the fraction of
// the way to the next step, so the token can be drawn between two floors.
#pragma once

#include <cstddef>

#include "ui/story.h"

namespace descent::ui {

enum class Pace {
  Teaching,  // every step takes the same time, long enough to read the floor
  RealTime,  // steps are as far apart as on the trace's clock, slowed down
};

constexpr double kTeachingStepSeconds = 0.9;   // one step at speed 1
constexpr double kRealTimeSecondsPerUs = 0.5;  // 1 us of the trace at speed 1
constexpr double kMinStepSeconds = 0.08;       // real time: an instant still shows
constexpr double kMaxStepSeconds = 4.0;        // real time: a long gap is shortened
constexpr double kMinSpeed = 0.125, kMaxSpeed = 16.0;

struct Playback {
  double position = 0;  // step + fraction towards the next
  bool playing = false;
  Pace pace = Pace::Teaching;
  double speed = 1.0;  // multiplies the pace

  size_t step() const { return static_cast<size_t>(position); }
  double fraction() const { return position - static_cast<double>(step()); }

  // Seconds the move from step k to k + 1 takes at the current pace and speed.
  double step_seconds(const Story& s, size_t k) const;
  // Moves on by dt seconds of wall time while playing; stops at the last step.
  void advance(const Story& s, double dt_seconds);

  void step_forward(const Story& s);  // to the next step (stops playing)
  void step_back(const Story& s);     // to the previous step (stops playing)
  void to_start();
  void to_end(const Story& s);
  void scrub(const Story& s, size_t step);  // to this step
  void faster() { speed = speed * 2 > kMaxSpeed ? kMaxSpeed : speed * 2; }
  void slower() { speed = speed / 2 < kMinSpeed ? kMinSpeed : speed / 2; }
  void toggle(const Story& s);  // play or pause; playing at the end restarts
};

}  // namespace descent::ui
