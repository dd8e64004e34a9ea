// The app's command line.
#include "ui/options.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "ui/layout.h"
#include "ui/notes.h"

namespace descent::ui {

namespace {

constexpr const char* kUsage =
    "usage: descent app [--code CODE | --trace FILE] [--compare TORCH_TRACE.json] [--presenter]\n"
    "                   [--screenshot OUT.png] [--state OUT.json] [--step N] [--size WxH] [--repeat N]\n"
    "                   [--panel detail|memory|compare|graph|streams|notes] [--note NAME]\n"
    "                   [--bench-frames N [--bench-pan | --bench-jump]]\n"
    "                   [--play] [--frames N] [--redraw full|damaged] [--timeout SECONDS] [--expect-error]\n"
    "                   [--zoom F] [--fold-helpers] [--bench-stop] [--lesson NAME [--lesson-step K] [--answer A]... "
    "[--check FILE.py]]\n"
    "                   [--answers-from DIR]\n"
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

// The arguments read one by one: the current one, and its value.
struct Args {
  int argc;
  char** argv;
  int i = 1;
  std::string a;  // the argument at i
  std::string& error;
  // The value after the argument, or nullptr (and `error`) when there is none.
  const char* value(const char* what) {
    if (i + 1 >= argc) {
      error = a + " needs " + what + "\n" + kUsage;
      return nullptr;
    }
    return argv[++i];
  }
  bool bad(const std::string& why) {
    error = why;
    return false;
  }
};

// What an argument turned out to be.
enum class Parsed { No, Yes, Bad };

Parsed as_switch(const std::string& a, Options& o) {
  bool* flag = a == "--presenter"      ? &o.presenter
               : a == "--bench-pan"    ? &o.bench_pan
               : a == "--bench-jump"   ? &o.bench_jump
               : a == "--fold-helpers" ? &o.fold_helpers
               : a == "--play"         ? &o.play
               : a == "--expect-error" ? &o.expect_error
               : a == "--bench-stop"   ? &o.bench_stop
                                       : nullptr;
  if (!flag) return Parsed::No;
  *flag = true;
  return Parsed::Yes;
}

// What to show and where: the code, the files, the panel, the Note, the lesson.
Parsed as_source(Args& in, Options& o) {
  const std::string& a = in.a;
  std::string* text = a == "--code"           ? &o.code
                      : a == "--trace"        ? &o.trace_file
                      : a == "--compare"      ? &o.compare_file
                      : a == "--screenshot"   ? &o.screenshot
                      : a == "--state"        ? &o.state_file
                      : a == "--lesson"       ? &o.lesson
                      : a == "--check"        ? &o.check_file
                      : a == "--answers-from" ? &o.answers_from
                                              : nullptr;
  const char* what = a == "--code"           ? "Python code"
                     : a == "--trace"        ? "a trace file"
                     : a == "--compare"      ? "a Chrome trace file"
                     : a == "--screenshot"   ? "a PNG path"
                     : a == "--state"        ? "a JSON path"
                     : a == "--lesson"       ? "a lesson's name or number (descent lesson lists them)"
                     : a == "--answers-from" ? "the folder the class's answers are written to"
                                             : "a Python file";
  const char* v = nullptr;
  if (text) {
    if (!(v = in.value(what))) return Parsed::Bad;
    *text = v;
  } else if (a == "--panel") {
    if (!(v = in.value("detail, memory, compare, graph, streams or notes"))) return Parsed::Bad;
    o.panel = v;
    if (o.panel != "detail" && o.panel != "memory" && o.panel != "compare" && o.panel != "graph" &&
        o.panel != "streams" && o.panel != "notes") {
      in.bad("--panel: expected detail, memory, compare, graph, streams or notes, got '" + o.panel + "'");
      return Parsed::Bad;
    }
  } else if (a == "--note") {
    if (!(v = in.value("a Note's name"))) return Parsed::Bad;
    o.note = v;
    if (embedded_notes().index_of(o.note) == SIZE_MAX) {
      in.bad("--note: no Note named '" + o.note + "' in this build's sources (the Notes tab lists them)");
      return Parsed::Bad;
    }
  } else if (a == "--answer") {
    if (!(v = in.value("an answer (a choice's number, letter or text, or a typed answer)"))) return Parsed::Bad;
    o.answers.push_back(v);
  } else {
    return Parsed::No;
  }
  return Parsed::Yes;
}

// The numbers: counts, sizes, seconds, the zoom.
Parsed as_number(Args& in, Options& o) {
  const std::string& a = in.a;
  struct Count {
    const char* name;
    int* out;
    int lo, hi;
    const char* what;      // what the value is, when it is missing
    const char* expected;  // what was expected, when it is wrong
  };
  const Count counts[] = {
      {"--frames", &o.frames, 1, 100000, "a frame count", "a frame count >= 1"},
      {"--lesson-step", &o.lesson_step, 1, 1 << 20, "a step number", "a step number from 1"},
      {"--step", &o.step, 0, 1 << 30, "a step number", "a step number >= 0"},
      {"--repeat", &o.repeat, 1, 10000, "a count", "a count from 1 to 10000"},
      {"--bench-frames", &o.bench_frames, 1, 1000000, "a frame count", "a frame count >= 1"},
  };
  const char* v = nullptr;
  for (const Count& c : counts) {
    if (a != c.name) continue;
    if (!(v = in.value(c.what))) return Parsed::Bad;
    if (!parse_int(v, c.lo, c.hi, *c.out)) {
      in.bad(a + ": expected " + c.expected + ", got '" + std::string(v) + "'");
      return Parsed::Bad;
    }
    return Parsed::Yes;
  }
  if (a == "--timeout") {
    if (!(v = in.value("a number of seconds"))) return Parsed::Bad;
    char* end = nullptr;
    errno = 0;
    const double t = std::strtod(v, &end);
    if (errno != 0 || end == v || *end != '\0' || !(t > 0) || t > 1e6) {
      in.bad("--timeout: expected a number of seconds > 0, got '" + std::string(v) + "'");
      return Parsed::Bad;
    }
    o.timeout_s = t;
  } else if (a == "--redraw") {
    if (!(v = in.value("full or damaged"))) return Parsed::Bad;
    if (std::strcmp(v, "full") != 0 && std::strcmp(v, "damaged") != 0) {
      in.bad("--redraw: expected full or damaged, got '" + std::string(v) + "'");
      return Parsed::Bad;
    }
    o.redraw_full = std::strcmp(v, "full") == 0;
  } else if (a == "--zoom") {
    if (!(v = in.value("a zoom factor"))) return Parsed::Bad;
    char* end = nullptr;
    const float z = std::strtof(v, &end);
    if (end == v || *end != '\0' || !(z >= kMinZoom && z <= kMaxZoom)) {
      in.bad("--zoom: expected a factor from 0.5 to 3, got '" + std::string(v) + "'");
      return Parsed::Bad;
    }
    o.zoom = z;
  } else if (a == "--size") {
    if (!(v = in.value("WxH"))) return Parsed::Bad;
    const char* x = std::strchr(v, 'x');
    const std::string w = x ? std::string(v, x) : "";
    if (!x || !parse_int(w.c_str(), 320, 8192, o.width) || !parse_int(x + 1, 240, 8192, o.height)) {
      in.bad("--size: expected WIDTHxHEIGHT (from 320x240 to 8192x8192), got '" + std::string(v) + "'");
      return Parsed::Bad;
    }
  } else {
    return Parsed::No;
  }
  return Parsed::Yes;
}

// The options that only make sense together, or not at all together.
bool check_together(const Options& o, std::string& error) {
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
  if ((o.bench_pan || o.bench_jump) && o.bench_frames == 0) {
    error = "--bench-pan and --bench-jump: give --bench-frames N too (they move the view while benchmarking)";
    return false;
  }
  if (o.bench_pan && o.bench_jump) {
    error = "--bench-pan and --bench-jump: one at a time";
    return false;
  }
  if (o.bench_stop && o.bench_frames == 0) {
    error = "--bench-stop: give --bench-frames N too (the frames drawn while the code runs)";
    return false;
  }
  return true;
}

}  // namespace

bool parse_options(int argc, char** argv, Options& o, std::string& error) {
  Args in{argc, argv, 1, "", error};
  for (; in.i < argc; ++in.i) {
    in.a = argv[in.i];
    if (in.a == "--help" || in.a == "-h") {
      error = kUsage;
      return false;
    }
    Parsed p = as_switch(in.a, o);
    if (p == Parsed::No) p = as_source(in, o);
    if (p == Parsed::No) p = as_number(in, o);
    if (p == Parsed::Bad) return false;
    if (p == Parsed::No) {
      error = "unknown argument '" + in.a + "'\n" + kUsage;
      return false;
    }
  }
  return check_together(o, error);
}

}  // namespace descent::ui
