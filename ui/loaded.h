// What is on screen: a trace, where it came from, what running it printed,
// the allocators around it and the models the panels read. The Python
// thread makes one (python_bridge.h), the App shows it (app.h).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tracer/trace.h"
#include "ui/memory_model.h"
#include "ui/models.h"

namespace descent::ui {

// The allocators' numbers at one moment (before or after the call).
struct MemoryStats {
  bool valid = false;
  int64_t allocated_bytes = 0, peak_allocated_bytes = 0, num_allocs = 0, num_frees = 0;
};

// What is on screen: a trace, where it came from, and what running it printed.
struct Loaded {
  std::shared_ptr<const trace::Trace> trace;  // never null once loaded
  std::string label;                          // the code, or the file name
  std::string output;                         // what the code printed (and its echoed value)
  std::string error;                          // the exception the code raised, if any
  MemoryStats before, after;                  // the CPU allocator's
  std::vector<DeviceMemory> devices;          // each device's caching allocator around the call (none from a file)
  std::string lesson;                         // a lesson request's reply (JSON, descent._app.lesson); "" for a run
  std::string code;  // the code that made it, when it can be run again ("" for a file or a lesson)
  // The call as the panels read it (models.h), built by prepare_loaded on the
  // thread that made the trace (a million spans take a while: never on the
  // window's thread when it can be helped); show_loaded builds them when missing.
  std::optional<TraceModels> models;
};

// Builds `l`'s models (models.h); touches no App, so it runs on any thread
// (the Python thread, after a run).
void prepare_loaded(Loaded& l);

}  // namespace descent::ui
