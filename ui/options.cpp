// The app's command line.
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "ui/app.h"

namespace descent::ui {

namespace {

constexpr const char* kUsage =
    "usage: descent app [--code CODE | --trace FILE] [--compare TORCH_TRACE.json] [--presenter]\n"
    "                   [--screenshot OUT.png] [--state OUT.json] [--step N] [--size WxH] [--repeat N]\n"
    "                   [--panel detail|memory|compare|graph|streams|notes] [--note NAME]\n"
    "                   [--bench-frames N [--bench-pan]]\n"
    "                   [--play] [--frames N] [--redraw full|damaged] [--timeout SECONDS] [--expect-error]\n"
    "                   [--zoom F] [--fold-helpers] [--bench-stop] [--lesson NAME [--lesson-step K] [--answer A]... [--check FILE.py]]\n"
    "headless (--screenshot): --timeout stops the code after SECONDS (default 60; exit 124); the code\n"
    "raising exits 1 unless --expect-error; a trace file that cannot be opened exits 2";

bool parse_int(const char* text, int lo, int hi, int& out) {
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || v < lo || v > hi) return false;
  out = static_cast<int>(v);
  return true;
}

}  // namespace

bool parse_options(int argc, char** argv, Options& o, std::string& error) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const char* what) -> const char* {
      if (i + 1 >= argc) {
        error = a + " needs " + what + "\n" + kUsage;
        return nullptr;
      }
      return argv[++i];
    };
    const char* v = nullptr;
    if (a == "--help" || a == "-h") {
      error = kUsage;
      return false;
    } else if (a == "--presenter") {
      o.presenter = true;
    } else if (a == "--bench-pan") {
      o.bench_pan = true;
    } else if (a == "--fold-helpers") {
      o.fold_helpers = true;
    } else if (a == "--play") {
      o.play = true;
    } else if (a == "--expect-error") {
      o.expect_error = true;
    } else if (a == "--bench-stop") {
      o.bench_stop = true;
    } else if (a == "--timeout") {
      if (!(v = value("a number of seconds"))) return false;
      char* end = nullptr;
      errno = 0;
      const double t = std::strtod(v, &end);
      if (errno != 0 || end == v || *end != '\0' || !(t > 0) || t > 1e6) {
        error = "--timeout: expected a number of seconds > 0, got '" + std::string(v) + "'";
        return false;
      }
      o.timeout_s = t;
    } else if (a == "--redraw") {
      if (!(v = value("full or damaged"))) return false;
      if (std::strcmp(v, "full") != 0 && std::strcmp(v, "damaged") != 0) {
        error = "--redraw: expected full or damaged, got '" + std::string(v) + "'";
        return false;
      }
      o.redraw_full = std::strcmp(v, "full") == 0;
    } else if (a == "--frames") {
      if (!(v = value("a frame count"))) return false;
      if (!parse_int(v, 1, 100000, o.frames)) {
        error = "--frames: expected a frame count >= 1, got '" + std::string(v) + "'";
        return false;
      }
    } else if (a == "--code") {
      if (!(v = value("Python code"))) return false;
      o.code = v;
    } else if (a == "--trace") {
      if (!(v = value("a trace file"))) return false;
      o.trace_file = v;
    } else if (a == "--compare") {
      if (!(v = value("a Chrome trace file"))) return false;
      o.compare_file = v;
    } else if (a == "--screenshot") {
      if (!(v = value("a PNG path"))) return false;
      o.screenshot = v;
    } else if (a == "--state") {
      if (!(v = value("a JSON path"))) return false;
      o.state_file = v;
    } else if (a == "--panel") {
      if (!(v = value("detail, memory, compare, graph, streams or notes"))) return false;
      o.panel = v;
      if (o.panel != "detail" && o.panel != "memory" && o.panel != "compare" && o.panel != "graph" &&
          o.panel != "streams" && o.panel != "notes") {
        error = "--panel: expected detail, memory, compare, graph, streams or notes, got '" + o.panel + "'";
        return false;
      }
    } else if (a == "--note") {
      if (!(v = value("a Note's name"))) return false;
      o.note = v;
      if (embedded_notes().index_of(o.note) == SIZE_MAX) {
        error = "--note: no Note named '" + o.note + "' in this build's sources (the Notes tab lists them)";
        return false;
      }
    } else if (a == "--zoom") {
      if (!(v = value("a zoom factor"))) return false;
      char* end = nullptr;
      const float z = std::strtof(v, &end);
      if (end == v || *end != '\0' || !(z >= kMinZoom && z <= kMaxZoom)) {
        error = "--zoom: expected a factor from 0.5 to 3, got '" + std::string(v) + "'";
        return false;
      }
      o.zoom = z;
    } else if (a == "--lesson") {
      if (!(v = value("a lesson's name or number (descent lesson lists them)"))) return false;
      o.lesson = v;
    } else if (a == "--lesson-step") {
      if (!(v = value("a step number"))) return false;
      if (!parse_int(v, 1, 1 << 20, o.lesson_step)) {
        error = "--lesson-step: expected a step number from 1, got '" + std::string(v) + "'";
        return false;
      }
    } else if (a == "--answer") {
      if (!(v = value("an answer (a choice's number, letter or text, or a typed answer)"))) return false;
      o.answers.push_back(v);
    } else if (a == "--check") {
      if (!(v = value("a Python file"))) return false;
      o.check_file = v;
    } else if (a == "--step") {
      if (!(v = value("a step number"))) return false;
      if (!parse_int(v, 0, 1 << 30, o.step)) {
        error = "--step: expected a step number >= 0, got '" + std::string(v) + "'";
        return false;
      }
    } else if (a == "--repeat") {
      if (!(v = value("a count"))) return false;
      if (!parse_int(v, 1, 10000, o.repeat)) {
        error = "--repeat: expected a count from 1 to 10000, got '" + std::string(v) + "'";
        return false;
      }
    } else if (a == "--bench-frames") {
      if (!(v = value("a frame count"))) return false;
      if (!parse_int(v, 1, 1000000, o.bench_frames)) {
        error = "--bench-frames: expected a frame count >= 1, got '" + std::string(v) + "'";
        return false;
      }
    } else if (a == "--size") {
      if (!(v = value("WxH"))) return false;
      const char* x = std::strchr(v, 'x');
      const std::string w = x ? std::string(v, x) : "";
      if (!x || !parse_int(w.c_str(), 320, 8192, o.width) || !parse_int(x + 1, 240, 8192, o.height)) {
        error = "--size: expected WIDTHxHEIGHT (from 320x240 to 8192x8192), got '" + std::string(v) + "'";
        return false;
      }
    } else {
      error = "unknown argument '" + a + "'\n" + kUsage;
      return false;
    }
  }
  if (!o.code.empty() && !o.trace_file.empty() && !o.bench_stop) {  // benchmarking a Stop, the trace plays meanwhile
    error = "--code and --trace: give one or the other";
    return false;
  }
  if (!o.lesson.empty() && (!o.code.empty() || !o.trace_file.empty())) {
    error = "--lesson: a lesson runs its own code; leave out --code and --trace";
    return false;
  }
  if (o.lesson.empty() && (!o.answers.empty() || !o.check_file.empty() || o.lesson_step != 1)) {
    error = "--lesson-step, --answer and --check need --lesson NAME";
    return false;
  }
  if (o.bench_stop && o.bench_frames == 0) {
    error = "--bench-stop: give --bench-frames N too (the frames drawn while the code runs)";
    return false;
  }
  return true;
}

}  // namespace descent::ui
