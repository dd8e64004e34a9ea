// descent's log: one spdlog logger named "descent", writing to stderr.
//
// For what a user should hear about although nothing failed: spans the tracer
// had to drop, cached device memory freed to retry an allocation, how the
// tracer calibrated itself. Errors are exceptions (error.h), never log lines.
//
// The level comes from the environment variable DESCENT_LOG (trace, debug,
// info, warn, error or off; default warn), read on first use. spdlog stays
// inside log.cpp: these functions are all the rest of descent sees of it.
#pragma once

#include <string>

#include "floors/core/error.h"

namespace descent::log {

enum class Level { Trace, Debug, Info, Warn, Error, Off };

bool enabled(Level level);
void write(Level level, const std::string& message);
void set_level(Level level);  // overrides DESCENT_LOG (tests)
Level level();

template <typename... Args>
void debug(const Args&... args) {
  if (enabled(Level::Debug)) write(Level::Debug, str(args...));
}
template <typename... Args>
void info(const Args&... args) {
  if (enabled(Level::Info)) write(Level::Info, str(args...));
}
template <typename... Args>
void warn(const Args&... args) {
  if (enabled(Level::Warn)) write(Level::Warn, str(args...));
}

}  // namespace descent::log
