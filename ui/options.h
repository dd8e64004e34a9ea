// The app's command line (options.cpp parses it; ui/README.md lists it).
#pragma once

#include <string>
#include <vector>

namespace descent::ui {

struct Options {
  std::string code;                 // --code: Python to run and trace
  std::string trace_file;           // --trace: a descent or Chrome JSON file to open
  std::string compare_file;         // --compare: PyTorch's Chrome trace of the same line
  std::string screenshot;           // --screenshot: render once to this PNG and exit
  std::string state_file;           // --state: write the app's state as JSON here
  int step = -1;                    // --step: start at this step
  int width = 1600, height = 1000;  // --size WxH
  bool presenter = false;           // --presenter
  int repeat = 1;                   // --repeat: run the code N times (warm medians)
  int bench_frames = 0;             // --bench-frames N: play N frames, print frame times, exit
  bool bench_pan = false;           // --bench-pan: while benchmarking, pan and zoom the timeline each frame
  bool bench_jump = false;          // --bench-jump: while benchmarking, open a far step each frame
  bool redraw_full = false;         // --redraw full: draw every frame whole (Note [Redrawing only what changed])
  int frames = 3;                   // --frames N: frames drawn before a screenshot
  bool play = false;                // --play: play from the start step (headless: 1/30 s a frame)
  std::string panel;          // --panel: the tab shown on the right (detail, memory, compare, graph, streams, notes)
  bool fold_helpers = false;  // --fold-helpers: the beginner's story (Note [The beginner's story])
  std::string note;           // --note: open the Notes tab on this Note
  double timeout_s = 60;      // --timeout: headless, the code's run stops after this many seconds (exit 124)
  bool expect_error = false;  // --expect-error: headless, the code raising is what is expected (exit 0)
  bool bench_stop = false;    // --bench-stop: benchmark frames while the code runs, then Stop it (bench_app.py)
  std::string lesson;         // --lesson NAME: open this lesson (its name, number or file)
  int lesson_step = 1;        // --lesson-step K: at its step K (from 1)
  std::vector<std::string> answers;  // --answer A (repeatable): answer the step's questions in order
  std::string check_file;            // --check FILE.py: check this code as the step's exercise
  float zoom = 0;                    // --zoom F: the type's zoom (0: the remembered one; headless, 1)
  std::string answers_from;          // --answers-from DIR: show the class's answers (class_answers.h)
};

// Parses argv; on a bad argument returns false with `error` set.
bool parse_options(int argc, char** argv, Options& out, std::string& error);

}  // namespace descent::ui
