// The "descent" logger (log.h) over spdlog.
#include "floors/core/log.h"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdlib>

namespace descent::log {
namespace {

spdlog::level::level_enum to_spdlog(Level l) {
  switch (l) {
    case Level::Trace:
      return spdlog::level::trace;
    case Level::Debug:
      return spdlog::level::debug;
    case Level::Info:
      return spdlog::level::info;
    case Level::Warn:
      return spdlog::level::warn;
    case Level::Error:
      return spdlog::level::err;
    case Level::Off:
      return spdlog::level::off;
  }
  return spdlog::level::warn;
}

// Created on first use, never destroyed: spans and tensors may be freed (and
// want to log) during static destruction.
spdlog::logger& logger() {
  static spdlog::logger* l = [] {
    auto* lg = new spdlog::logger("descent", std::make_shared<spdlog::sinks::stderr_sink_mt>());
    lg->set_pattern("[descent %l] %v");
    const char* env = std::getenv("DESCENT_LOG");
    spdlog::level::level_enum want = spdlog::level::warn;
    bool bad = false;
    if (env != nullptr && *env != '\0') {
      want = spdlog::level::from_str(env);  // unknown names come back as "off"
      bad = want == spdlog::level::off && std::string(env) != "off";
      if (bad) want = spdlog::level::warn;
    }
    lg->set_level(want);
    if (bad) lg->warn("DESCENT_LOG={} is not a level: use trace, debug, info, warn, error or off", env);
    return lg;
  }();
  return *l;
}

}  // namespace

bool enabled(Level l) { return logger().should_log(to_spdlog(l)); }

void write(Level l, const std::string& message) { logger().log(to_spdlog(l), "{}", message); }

void set_level(Level l) { logger().set_level(to_spdlog(l)); }

Level level() {
  switch (logger().level()) {
    case spdlog::level::trace:
      return Level::Trace;
    case spdlog::level::debug:
      return Level::Debug;
    case spdlog::level::info:
      return Level::Info;
    case spdlog::level::warn:
      return Level::Warn;
    case spdlog::level::err:
      return Level::Error;
    default:
      return Level::Off;
  }
}

}  // namespace descent::log
