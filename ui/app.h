// The app: what every panel reads and writes, and the panels themselves.
//
// [SECTION] App state
// [SECTION] The App
// [SECTION] Running the user's code (runner.cpp)
// [SECTION] Panels (one file each)
//
// The app owns no runtime logic: it runs code through the embedded `descent`
// package (python_bridge.h) and reads the trace::Trace objects it returns.
// Each panel is a function of the App, drawn into the rectangle the layout
// (frame.cpp) gives it. What the App holds that has no need of it lives in
// headers of its own: the command line (options.h), the call on screen
// (loaded.h), the building's layout (building_layout.h), fitted texts
// (text_fit.h), colours and texts (theme.h).
#pragma once

#include <imgui.h>

#include <array>
#include <chrono>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tracer/trace.h"
#include "ui/building_layout.h"
#include "ui/explain.h"
#include "ui/graph.h"
#include "ui/layout.h"
#include "ui/lesson.h"
#include "ui/loaded.h"
#include "ui/memory_model.h"
#include "ui/models.h"
#include "ui/navigate.h"
#include "ui/options.h"
#include "ui/playback.h"
#include "ui/story.h"
#include "ui/streams_model.h"
#include "ui/text_fit.h"
#include "ui/theme.h"
#include "ui/timeline_index.h"

namespace descent::ui {

// [SECTION] App state --------------------------------------------------------------

struct ConsoleLine {
  enum Kind { Input, Output, Error, Info } kind;
  std::string text;
};

enum class RightTab { Detail, Memory, Compare, Graph, Streams, Notes, Lesson };

// The Notes tab (panel_notes.cpp): the search typed and the Note shown.
struct NotesView {
  std::string filter;
  size_t selected = SIZE_MAX;  // index into embedded_notes().notes; SIZE_MAX: none yet
  bool scroll_to = false;      // bring the selected name into view in the list
};

// The search by span name (Ctrl+F; panel_search.cpp, Note [Jumping through a story]).
struct SearchView {
  bool open = false;
  bool focus = false;                             // give the field the keyboard on the next frame
  bool has_keys = false;                          // whether the field had the keyboard in the last frame
  std::string text;                               // what is typed
  std::string searched;                           // the text `matches` is for
  std::weak_ptr<const trace::Trace> searched_of;  // and the trace
  std::vector<size_t> matches;                    // the steps down into spans named it (search_steps)
  std::string label;                              // "3 of 17", "no span named ...", as last drawn
};

// The code running on the Python thread (Note [The Python thread]), while it runs.
struct Running {
  bool active = false;
  bool from_console = false;  // a statement typed at the prompt (else --code)
  std::string code;
  bool stop_asked = false;
  std::chrono::steady_clock::time_point stop_at;  // when Stop was pressed
  // python_status() of the last frame, for the status line
  double seconds = 0;
  uint64_t spans = 0;    // the most seen (the count goes to 0 while the recording is collected)
  bool stopped = false;  // KeyboardInterrupt raised: the run is ending
  bool lesson = false;   // a lesson request (lesson.h), not the user's code
};

// [SECTION] The App ------------------------------------------------------------------

struct App {
  Options options;
  Loaded loaded;
  Story story;
  Playback play;
  std::shared_ptr<const trace::Trace> compare;  // PyTorch's trace, when one is open
  std::string compare_label;
  // The compare view's match for the current span (panel_compare.cpp): the
  // k-th call of the same name in the other trace, or why there is none.
  struct CompareMatch {
    std::string name, why;
    size_t k = 0;             // which call of that name (from 1)
    size_t other = SIZE_MAX;  // its index in compare->spans
    bool kernel = false;      // the current span is a kernel, and PyTorch's runs inside the matched op (floor 5)
  } compare_match;
  std::string compare_provenance;  // where and how PyTorch's file was made, as the compare view says it
  std::array<std::array<std::string, 2>, 10> compare_cells;  // per floor 1..9: descent's and the other's count

  Running running;           // the user's code on the Python thread (runner.cpp)
  double last_stop_ms = -1;  // the last Stop: from the key to the prompt back, in ms (-1: none yet)
  uint64_t frames = 0;       // frames drawn so far (the state dump: the window kept drawing)

  // Console
  std::vector<ConsoleLine> console;
  std::vector<std::string> history;
  int history_pos = -1;
  std::string input;
  bool focus_console = false;     // give the prompt the keyboard (repeated until it has it)
  int leave_console_frames = 0;   // after Escape: frames in which the prompt is made to let go
  bool console_has_keys = false;  // whether the prompt had the keyboard in the last frame
  bool console_scroll = false;    // scroll to the newest line on the next frame
  // The presenter's console (F2 in presenter mode, panel_console.cpp): the
  // same prompt and lines in large type; while it is shown every key is its.
  bool presenter_console = false;

  // Timeline view: the visible window on the trace's clock, in ns.
  double view_start_ns = 0, view_end_ns = 1;
  bool timeline_follow = true;  // keep the current step in view
  int64_t hovered_span = -1;
  TimelineIndex timeline;                                 // rows and lanes of `loaded.trace` (show_loaded: models.h)
  std::vector<std::pair<size_t, size_t>> timeline_flows;  // Trace::flows as (from, to) span indices
  bool timeline_dragging = false;                         // a drag that began on the timeline is panning it
  size_t timeline_followed_step = SIZE_MAX;               // the step the view last followed
  float timeline_current_px = -1;                         // the current span's width as last drawn (-1: not drawn)

  // Jumps and search (navigate.h): what the last jump said, at the step it said it.
  SearchView search;
  std::string jump_said;           // "no launch after this step" ("" when the jump moved)
  size_t jump_said_at = SIZE_MAX;  // the step it was said at (shown only while the step stays)

  // Graph panel: the autograd graph of `loaded.trace` (show_loaded: models.h)
  AutogradGraph graph;
  std::vector<const char*> graph_states;       // each node's state at the last drawn step (state dump)
  std::vector<GraphEdge> graph_edges_drawn;    // the edges drawn at that step, parallel ones apart (state dump)
  std::vector<std::string> graph_none_labels;  // per node, the label drawn for its None edges ("" none)
  std::vector<std::string> graph_legend;       // the legend's entries as drawn

  // The explanation of the current span (panel_detail.cpp), kept while the span stays the same.
  Explanation explanation;
  size_t explained_span = SIZE_MAX;
  std::weak_ptr<const trace::Trace> explained_of;
  NotesView notes;
  LessonView lesson;  // the Lesson tab (lesson.h)

  // The device's streams in `loaded.trace` (show_loaded: models.h): the
  // building's device strip and the streams panel (Note [The queue at time t]).
  StreamsModel streams;

  bool presenter = false;
  bool fold_helpers = false;    // the beginner's story (Note [The beginner's story]): V
  AppLayout layout;             // zoom, borders, panels shown (Note [The remembered layout])
  bool layout_changed = false;  // the user changed it: written out after the frame
  float dpi_scale = 1.0f;       // the monitor's content scale
  float ui_scale = 1.0f;        // the fonts' scale now: dpi_scale * layout.zoom
  bool show_help = false;
  RightTab right_tab = RightTab::Detail;  // the tab shown on the right (frame.cpp draws the tabs as buttons)
  std::string banner;                     // a message the user must see (bad file, missing asset)
  std::string open_path;                  // the Open/Save path field
  std::string file_title;                 // what the file popup is asking for
  int file_action = 0;                    // which popup it is (panel_toolbar.cpp)

  // Filled by the panels each frame, for the state dump and the tests.
  BuildingLayout building;          // the building as last drawn
  std::vector<TextFit> tab_labels;  // the right panel's tab labels as drawn
  // Every other text drawn into a space of its own (a graph node, a stream's
  // cell, a table's cell, a timeline label), as fitted: at most kTextsRecorded.
  static constexpr size_t kTextsRecorded = 4000;
  std::vector<DrawnText> texts_drawn;
  TextFit timeline_header;  // the timeline's header line as drawn
  std::vector<std::string> panels_drawn;
  int memory_blocks_drawn = 0;         // blocks the memory panel drew (all devices)
  std::string memory_highlight_drawn;  // the state of the block it outlined ("" when none)
  double frame_ms = 0;
  int fb_width = 0, fb_height = 0;  // the framebuffer, in pixels
  bool redraw_damaged = false;      // whether frames redraw only what changed
  double damaged_fraction = 1;      // of the window, redrawn by the last frame

  size_t step() const { return play.step(); }
  const trace::Trace& trace() const { return *loaded.trace; }
  bool has_steps() const { return !story.steps.empty(); }
  // The span at the current step (SIZE_MAX when the trace is empty).
  size_t current_span() const { return has_steps() ? story.steps[play.step()].span : SIZE_MAX; }
  // The playback's moment on the trace's clock (between two steps' times mid-move).
  int64_t now_ns() const { return time_at(story, play.position); }
};

// Shows `l`: the App takes its models (built here when `l` came without),
// and the playback and the timeline view are reset to the new call.
void show_loaded(App& app, Loaded l);
// The beginner's story on or off (Note [The beginner's story]), at the same moment of the call.
void set_fold_helpers(App& app, bool fold);
// Reads a trace file (descent's format or Chrome JSON) and checks that its
// spans form a tree; nullptr with `error` set otherwise. Touches no App, so
// it can run on another thread.
std::shared_ptr<const trace::Trace> read_trace_file(const std::string& path, std::string& error);
// Shows a trace read by read_trace_file.
void show_trace_file(App& app, const std::string& path, std::shared_ptr<const trace::Trace> t);
// Both: false with a banner on failure.
bool open_trace_file(App& app, const std::string& path);
bool open_compare_file(App& app, const std::string& path);
// The app's state as JSON: step, token floor, span, floors, panels, the code
// running. `stable`, when given, gets the same without what changes with the
// clock alone (the frame counter, a run's seconds and spans so far).
std::string state_json(const App& app, std::string* stable = nullptr);

// [SECTION] Running the user's code (runner.cpp) ----------------------------------

// Runs `code` on the Python thread; the window goes on drawing, and
// poll_run shows the result when it comes. False (and a console line) when
// another run is still going.
bool start_run(App& app, const std::string& code, int repeat, bool from_console);
// Each frame: the status of the run, and its result shown once it is ready
// (the console's output and error, the call on screen). True when a run ended.
bool poll_run(App& app);
// Stop: KeyboardInterrupt in the running code (Note [Stopping the user's code]).
void stop_run(App& app);
// "running, 3.2 s, 14,000 spans so far" ("" when nothing runs).
std::string run_status(const App& app);

// [SECTION] Panels (one file each) -----------------------------------------------

// The windows the layout (frame.cpp) places: ImGui never moves, resizes,
// folds or remembers them. A panel is also never raised over its
// neighbours when it takes the focus (the toolbar and the banner may be).
constexpr ImGuiWindowFlags kFixedWindowFlags = ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoResize |
                                               ImGuiWindowFlags_NoCollapse | ImGuiWindowFlags_NoSavedSettings;
constexpr ImGuiWindowFlags kPanelFlags = kFixedWindowFlags | ImGuiWindowFlags_NoBringToFrontOnFocus;

void draw_frame(App& app, ImFont* font);                 // frame.cpp: every panel in its place, in `font`
void draw_toolbar(App& app, ImVec2 pos, ImVec2 size);    // panel_toolbar.cpp: play, step, speed, scrub
void draw_building(App& app, ImVec2 pos, ImVec2 size);   // panel_building.cpp: the cross-section
void draw_timeline(App& app, ImVec2 pos, ImVec2 size);   // panel_timeline.cpp: the flame chart
void draw_detail(App& app);                              // panel_detail.cpp: args, floor text, source
void draw_memory(App& app);                              // panel_memory.cpp: the allocators
void draw_compare(App& app);                             // panel_compare.cpp: PyTorch beside descent
void draw_graph(App& app);                               // panel_graph.cpp: the autograd graph, recorded then walked
void draw_streams(App& app);                             // panel_streams.cpp: each stream's queue at the playback time
void draw_notes(App& app);                               // panel_notes.cpp: every Note of the sources, searchable
void open_note(App& app, const std::string& name);       // panel_notes.cpp: show this Note in the Notes tab
const Explanation& current_explanation(App& app);        // panel_detail.cpp: the current span's (cached)
void draw_console(App& app, ImVec2 pos, ImVec2 size);    // panel_console.cpp: the Python prompt
void console_submit(App& app, const std::string& line);  // panel_console.cpp: run one typed statement
void draw_presenter_console(App& app, ImVec2 pos, ImVec2 size);  // panel_console.cpp: the same, in large type
void handle_keys(App& app);                                      // panel_toolbar.cpp: one key per action
std::string step_label(const App& app);            // panel_toolbar.cpp: "12 / 30  floor 3, down into aten::add"
void jump(App& app, JumpKind kind, bool forward);  // panel_search.cpp: to the next/previous step of a kind
void search_next(App& app, bool forward);          // panel_search.cpp: to the next/previous span named the search
void open_search(App& app);                        // panel_search.cpp: Ctrl+F
void draw_search(App& app, ImVec2 pos);            // panel_search.cpp: the search field, when open

}  // namespace descent::ui
