// Loading what the app shows, and the app's state as JSON (for --state and the tests).
#include <algorithm>
#include <cstdio>
#include <utility>

#include "ui/app.h"
#include "ui/roofline.h"

namespace descent::ui {

// [SECTION] Loading -----------------------------------------------------------

void prepare_loaded(Loaded& l) {
  if (!l.models) l.models = build_models(*l.trace, /*fold_helpers=*/false);
}

// The one place the App takes a trace's models (models.h).
void take_models(App& app, TraceModels m) {
  const trace::Trace& t = *app.loaded.trace;
  if (m.folded != app.fold_helpers) m.story = build_story(t, app.fold_helpers);  // prepared before V was pressed
  app.story = std::move(m.story);
  app.streams = std::move(m.streams);
  app.timeline = std::move(m.timeline);
  app.timeline_flows = std::move(m.flows);
  app.timeline_followed_step = SIZE_MAX;
  app.graph = std::move(m.graph);
  app.graph_states.clear();  // what the graph tab drew of the trace before
  app.graph_edges_drawn.clear();
  app.graph_none_labels.clear();
}

void show_loaded(App& app, Loaded l) {
  app.loaded = std::move(l);
  std::optional<TraceModels> m = std::exchange(app.loaded.models, std::nullopt);
  take_models(app, m ? std::move(*m) : build_models(*app.loaded.trace, app.fold_helpers));
  app.search.searched.clear();  // steps of the story shown before
  app.jump_said.clear();
  app.play.playing = false;
  app.play.position = 0;
  app.hovered_span = -1;
  app.timeline_follow = true;
  const auto& spans = app.loaded.trace->spans;
  if (!spans.empty()) {
    int64_t lo = spans.front().start_ns, hi = spans.front().end_ns;
    for (const trace::Span& s : spans) {
      lo = std::min(lo, s.start_ns);
      hi = std::max(hi, s.end_ns);
    }
    app.view_start_ns = static_cast<double>(lo);
    app.view_end_ns = static_cast<double>(std::max(hi, lo + 1));
  }
}

void set_fold_helpers(App& app, bool fold) {
  if (app.fold_helpers == fold || !app.loaded.trace) {
    app.fold_helpers = fold;
    return;
  }
  // The same moment in the other story: the current span, or the nearest
  // span above it that the other story tells.
  size_t span = app.current_span();
  const bool down = app.has_steps() && app.story.steps[app.step()].down;
  app.fold_helpers = fold;
  app.story = build_story(*app.loaded.trace, fold);
  app.search.searched.clear();  // its matches are steps of the other story
  app.jump_said.clear();
  while (span != SIZE_MAX && span < app.story.down_step.size() && app.story.down_step[span] == SIZE_MAX) {
    span = app.story.parent_index[span];
  }
  if (span != SIZE_MAX && span < app.story.down_step.size()) {
    app.play.scrub(app.story, down ? app.story.down_step[span] : app.story.up_step[span]);
  } else {
    app.play.to_start();
  }
}

std::shared_ptr<const trace::Trace> read_trace_file(const std::string& path, std::string& error) {
  try {
    auto t = std::make_shared<trace::Trace>(trace::load_any(path));
    const std::string problems = trace::check_structure(*t);
    if (!problems.empty()) {
      error = "Cannot show " + path + ": its spans do not form a tree:\n" + problems;
      return nullptr;
    }
    return t;
  } catch (const std::exception& e) {
    error = std::string("Cannot open the trace: ") + e.what();
    return nullptr;
  }
}

void show_trace_file(App& app, const std::string& path, std::shared_ptr<const trace::Trace> t) {
  Loaded l;
  l.trace = std::move(t);
  l.label = path;
  show_loaded(app, std::move(l));
}

bool open_trace_file(App& app, const std::string& path) {
  auto t = read_trace_file(path, app.banner);
  if (t) show_trace_file(app, path, std::move(t));
  return t != nullptr;
}

bool open_compare_file(App& app, const std::string& path) {
  std::shared_ptr<const trace::Trace> t = read_trace_file(path, app.banner);
  if (!t) return false;
  app.compare = std::move(t);
  app.compare_label = path;
  app.right_tab = RightTab::Compare;
  return true;
}

// [SECTION] State as JSON ------------------------------------------------------

namespace {

std::string quoted(const std::string& s) {
  std::string out;
  trace::append_json_string(out, s);
  return out;
}

std::string arg_json(const trace::ArgValue& v) {
  std::string out;
  trace::append_json_value(out, v);
  return out;
}

// A text as drawn in the space it was given (issue 23: readable on a projector).
std::string fit_json(const TextFit& f) {
  char widths[96];
  std::snprintf(widths, sizeof widths, ", \"width\": %.0f, \"given\": %.0f", f.width, f.given);
  return "{\"text\": " + quoted(f.text) + ", \"shown\": " + quoted(f.shown) + widths +
         ", \"shortened\": " + (f.shortened ? "true" : "false") + ", \"clipped\": " + (f.clipped() ? "true" : "false") +
         "}";
}

std::string strings_json(const std::vector<std::string>& v) {
  std::string o = "[";
  for (size_t k = 0; k < v.size(); ++k) o += (k ? ", " : "") + quoted(v[k]);
  return o + "]";
}

std::string rect4(const float* r) {
  char t[96];
  std::snprintf(t, sizeof t, "[%.0f, %.0f, %.0f, %.0f]", r[0], r[1], r[2], r[3]);
  return t;
}

// What a floor's band shows, line by line as placed (its name and time first).
std::string shown_json(const FloorLayout& fl) {
  std::string o = "[";
  for (const PlacedText& t : fl.texts) o += (o.size() > 1 ? ", " : "") + quoted(t.fit.shown);
  return o + "]";
}

const char* state_name(FloorState s) {
  switch (s) {
    case FloorState::Active:
      return "active";
    case FloorState::Visited:
      return "visited";
    case FloorState::Ahead:
      return "ahead";
    case FloorState::Skipped:
      return "skipped";
  }
  return "?";
}

std::string span_json(const App& app, size_t i) {
  const trace::Span& s = app.trace().spans[i];
  const Timing t = timing_of(app.story, i);
  std::string out =
      "{\"id\": " + std::to_string(s.id) + ", \"name\": " + quoted(s.name) +
      ", \"floor\": " + std::to_string(int(s.floor)) + ", \"floor_name\": " + quoted(trace::floor_name(s.floor)) +
      ", \"inclusive_ns\": " + std::to_string(t.inclusive_ns) + ", \"self_ns\": " + std::to_string(t.self_ns) +
      ", \"warm_samples\": " + std::to_string(t.warm_samples) + ", \"warm\": " + (t.warm ? "true" : "false") +
      ", \"timing\": " + quoted(timing_text(t)) + ", \"args\": {";
  for (size_t k = 0; k < s.args.size(); ++k) {
    out += (k ? ", " : "") + quoted(s.args[k].key) + ": " + arg_json(s.args[k].value);
  }
  return out + "}}";
}

// Whether the trace's version of `file` is this build's (Note [Source fingerprints]).
std::string source_match_name(const App& app, const std::string& file) {
  switch (trace::source_match(app.trace(), file)) {
    case trace::SourceMatch::Same:
      return "same";
    case trace::SourceMatch::Changed:
      return "changed";
    case trace::SourceMatch::Unknown:
      return "unknown";
    case trace::SourceMatch::NotOurs:
      return "not ours";
  }
  return "";
}

// The current span's place on its device's roofline (ui/roofline.h); null
// when it is not a kernel span that recorded its work.
std::string roofline_json(const App& app) {
  if (!app.has_steps()) return "  \"roofline\": null,\n";
  const RooflinePoint p = roofline_of(app.story, app.current_span());
  if (!p.known) return "  \"roofline\": null,\n";
  const char* bound = p.bound_word();
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "  \"roofline\": {\"device\": %s, \"bound\": \"%s\", \"bytes\": %.0f, \"flops\": %.0f, "
                "\"seconds\": %.9g, \"fraction\": %.6g, \"intensity\": %.6g, \"ridge\": %.6g},\n",
                quoted(p.device).c_str(), bound, p.bytes, p.flops, p.seconds, p.fraction(), p.intensity(), p.ridge());
  return buf;
}

// The current span's explanation (ui/explain.h) and the Notes tab.
std::string explanation_json(const App& app) {
  std::string o = "  \"explanation\": ";
  if (!app.has_steps()) {
    o += "null,\n";
  } else {
    const Explanation e = explain(app.story, app.current_span());
    auto list = [](const std::vector<std::string>& v) {
      std::string s = "[";
      for (size_t k = 0; k < v.size(); ++k) s += (k ? ", " : "") + quoted(v[k]);
      return s + "]";
    };
    std::string places = "[";
    for (size_t k = 0; k < e.pytorch.size(); ++k) {
      places += (k ? ", " : "") + std::string("{\"file\": ") + quoted(e.pytorch[k].file) +
                ", \"function\": " + quoted(e.pytorch[k].function) + "}";
    }
    o += "{\"kind\": " + quoted(e.kind) + ", \"title\": " + quoted(e.title) + ", \"sentences\": " + list(e.sentences) +
         ", \"notes\": " + list(e.notes) + ", \"pytorch\": " + places + "], \"source\": " +
         quoted(e.decided.file.empty() ? "" : e.decided.file + ":" + std::to_string(e.decided.line)) +
         ", \"decided_recorded\": " + (e.decided_recorded ? "true" : "false") +
         ", \"source_match\": " + quoted(e.decided.file.empty() ? "" : source_match_name(app, e.decided.file)) + "},\n";
  }
  const NoteIndex& notes = embedded_notes();
  o += "  \"notes\": {\"count\": " + std::to_string(notes.notes.size()) +
       ", \"shown\": " + std::to_string(notes.search(app.notes.filter).size()) + ", \"selected\": " +
       (app.notes.selected < notes.notes.size() ? quoted(notes.notes[app.notes.selected].name) : std::string("null")) +
       "},\n";
  return o;
}

// The device at the playback's moment (Note [The queue at time t]): each
// stream's queue, and what the building's device strip showed.
std::string device_json(const App& app) {
  const int64_t now = app.now_ns();
  const int64_t origin = app.has_steps() ? app.story.steps.front().at_ns : 0;
  std::string o = "  \"device\": {\"time_ns\": " + std::to_string(now - origin) + ", \"lanes\": [";
  for (size_t l = 0; l < app.streams.lanes.size(); ++l) {
    const StreamLane& lane = app.streams.lanes[l];
    const LaneAt a = lane_at(lane, now);
    auto names = [&](const std::vector<size_t>& ks) {
      std::string s = "[";
      for (size_t k = 0; k < ks.size(); ++k) s += (k ? ", " : "") + quoted(lane.work[ks[k]].name);
      return s + "]";
    };
    o += std::string(l ? ", " : "") + "{\"label\": " + quoted(lane.label) +
         ", \"work\": " + std::to_string(lane.work.size()) + ", \"ahead\": " + std::to_string(a.ahead) +
         ", \"queued\": " + names(a.queued) +
         ", \"running\": " + (a.running == SIZE_MAX ? std::string("null") : quoted(lane.work[a.running].name)) +
         ", \"done\": " + names(a.done) + ", \"queue_depth\": " + std::to_string(a.queue_depth) + "}";
  }
  const DeviceStripLayout& strip = app.building.strip;
  const ImVec4 r = strip.rect;
  char rect[96];
  std::snprintf(rect, sizeof rect, "[%.0f, %.0f, %.0f, %.0f]", r.x, r.y, r.z, r.w);
  o += "], \"strip_rect\": " + std::string(rect) + ", \"strip_text\": " + quoted(strip.text) + ", \"echoes\": [";
  for (size_t k = 0; k < strip.echoes.size(); ++k) o += (k ? ", " : "") + quoted(strip.echoes[k]);
  o += "]},\n";
  o += "  \"timeline_rows\": [";
  for (size_t k = 0; k < app.timeline.rows().size(); ++k) o += (k ? ", " : "") + quoted(app.timeline.rows()[k].label);
  return o + "],\n";
}

// The memory panel's model at the playback's moment (Note [Replaying the
// allocator's history]): per device, the history, the segments and blocks
// replayed up to now, the block the current floor-6 span touched, and
// whether replaying everything gives the snapshot after.
std::string segments_json(const std::vector<MemSegment>& segs, uint64_t highlight) {
  std::string o = "[";
  for (size_t i = 0; i < segs.size(); ++i) {
    const MemSegment& s = segs[i];
    o += std::string(i ? ", " : "") + "{\"address\": " + std::to_string(s.address) +
         ", \"size\": " + std::to_string(s.size) + ", \"pool\": " + quoted(s.small ? "small" : "large") +
         ", \"blocks\": [";
    for (size_t k = 0; k < s.blocks.size(); ++k) {
      const MemBlock& b = s.blocks[k];
      o += std::string(k ? ", " : "") + "{\"address\": " + std::to_string(b.address) +
           ", \"size\": " + std::to_string(b.size) + ", \"requested\": " + std::to_string(b.requested) +
           ", \"state\": " + quoted(block_state_name(b.state)) +
           ", \"highlight\": " + (highlight != 0 && b.address == highlight ? "true" : "false") + "}";
    }
    o += "]}";
  }
  return o + "]";
}

std::string memory_json(const App& app) {
  std::string o = "  \"memory\": {\"snapshots\": " + std::string(app.loaded.devices.empty() ? "false" : "true") +
                  ", \"now_ns\": " + std::to_string(app.has_steps() ? app.now_ns() : 0) +
                  ", \"blocks_drawn\": " + std::to_string(app.memory_blocks_drawn) +
                  ", \"highlight_drawn\": " + quoted(app.memory_highlight_drawn) + ", \"devices\": [";
  for (size_t i = 0; i < app.loaded.devices.size(); ++i) {
    const DeviceMemory& d = app.loaded.devices[i];
    const DeviceMemoryView v = device_memory_at(d, app.story, app.has_steps() ? app.step() : 0, app.now_ns());
    o += std::string(i ? ",\n    " : "\n    ") + "{\"device\": " + quoted(d.device) + ", \"history\": [";
    for (size_t k = 0; k < d.history.size(); ++k) {
      const MemEntry& e = d.history[k];
      o += std::string(k ? ", " : "") + "{\"action\": " + quoted(entry_action_name(e.action)) +
           ", \"addr\": " + std::to_string(e.addr) + ", \"size\": " + std::to_string(e.size) +
           ", \"time_ns\": " + std::to_string(e.time_ns) + "}";
    }
    const MemCounters &b = d.stats_before, &a = d.stats_after;
    auto counters = [](const MemCounters& c) {
      return "{\"allocated\": " + std::to_string(c.allocated_bytes) +
             ", \"reserved\": " + std::to_string(c.reserved_bytes) +
             ", \"allocations\": " + std::to_string(c.allocations) +
             ", \"cache_hits\": " + std::to_string(c.cache_hits()) + "}";
    };
    o += "], \"replayed\": " + std::to_string(v.at.replayed) + ", \"problem\": " + quoted(v.at.problem) +
         ", \"replay_matches_after\": " + (same_memory(replay(d, INT64_MAX).segments, d.after) ? "true" : "false") +
         ", \"entry\": " + (v.entry == SIZE_MAX ? std::string("null") : std::to_string(v.entry)) +
         ", \"highlight\": " + (v.entry == SIZE_MAX ? std::string("null") : std::to_string(v.highlight)) +
         ", \"stats\": {\"before\": " + counters(b) + ", \"after\": " + counters(a) + "}" +
         ", \"segments\": " + segments_json(v.at.segments, v.highlight) + "}";
  }
  // The call's outermost floor-6 spans, with their steps and the history entry each touched.
  o += "],\n    \"allocator_spans\": [";
  const auto& spans = app.trace().spans;
  bool first = true;
  for (size_t i = 0; app.loaded.trace && i < spans.size() && i < app.story.down_step.size(); ++i) {
    const size_t par = app.story.parent_index[i];
    if (app.story.down_step[i] == SIZE_MAX || building_floor(spans[i].floor) != 6 ||
        (par != SIZE_MAX && building_floor(spans[par].floor) == 6))
      continue;
    std::string entries;
    for (size_t k = 0; k < app.loaded.devices.size(); ++k) {
      const size_t e = entry_in_span(app.loaded.devices[k], spans[i].start_ns, spans[i].end_ns).first;
      if (e != SIZE_MAX)
        entries += (entries.empty() ? "" : ", ") + quoted(app.loaded.devices[k].device) + ": " + std::to_string(e);
    }
    o += std::string(first ? "" : ", ") + "{\"name\": " + quoted(spans[i].name) +
         ", \"down_step\": " + std::to_string(app.story.down_step[i]) +
         ", \"up_step\": " + std::to_string(app.story.up_step[i]) + ", \"entry\": {" + entries + "}}";
    first = false;
  }
  return o + "]},\n";
}

// Moving through the story (navigate.h): the step's label, what the last
// jump said, the search, and the current span's width on the timeline.
std::string navigation_json(const App& app) {
  const SearchView& v = app.search;
  char timeline[240];
  std::snprintf(timeline, sizeof timeline,
                "  \"timeline_view\": {\"start_ns\": %.0f, \"end_ns\": %.0f, \"whole_ns\": %lld, \"follow\": %s, "
                "\"current_px\": %.1f},\n",
                app.view_start_ns, app.view_end_ns,
                static_cast<long long>(app.timeline.max_ns() - app.timeline.min_ns()),
                app.timeline_follow ? "true" : "false", app.timeline_current_px);
  return "  \"step_label\": " + quoted(step_label(app)) + ",\n" +
         "  \"jump_said\": " + quoted(app.jump_said_at == app.step() ? app.jump_said : std::string()) + ",\n" +
         "  \"search\": {\"open\": " + (v.open ? "true" : "false") +
         ", \"has_keys\": " + (v.has_keys ? "true" : "false") + ", \"text\": " + quoted(v.text) +
         ", \"matches\": " + std::to_string(v.matches.size()) + ", \"label\": " + quoted(v.label) + "},\n" + timeline;
}

// The graph panel at this step, when it was drawn: the nodes (Note [The graph
// in the trace]; the leaves named, Note [Naming the leaves]), the edges drawn,
// one per use, and the legend.
std::string graph_json(const App& app) {
  const AutogradGraph& g = app.graph;
  auto list = [](const std::vector<std::string>& v) {
    std::string o = "[";
    for (size_t k = 0; k < v.size(); ++k) o += (k ? ", " : "") + quoted(v[k]);
    return o + "]";
  };
  std::string o = "  \"graph\": [";
  for (size_t k = 0; k < g.nodes.size() && k < app.graph_states.size(); ++k) {
    const GraphNode& n = g.nodes[k];
    std::string next;
    for (size_t e = 0; e < n.next.size(); ++e) next += (e ? ", " : "") + std::to_string(n.next[e]);
    o += std::string(k ? ",\n    " : "\n    ") + "{\"id\": " + std::to_string(n.id) + ", \"name\": " + quoted(n.name) +
         ", \"title\": " + quoted(n.title()) + ", \"state\": " + quoted(app.graph_states[k]) +
         ", \"layer\": " + std::to_string(n.layer) + ", \"variable\": " + quoted(n.variable) +
         ", \"shape\": " + quoted(n.shape) + ", \"saved\": " + quoted(n.saved) + ", \"next\": [" + next +
         "], \"input_shapes\": " + list(n.input_shapes) + ", \"grads_in\": " + quoted(n.grads_in) +
         ", \"grads_out\": " + quoted(n.grads_out) +
         ", \"none_label\": " + quoted(k < app.graph_none_labels.size() ? app.graph_none_labels[k] : std::string()) +
         ", \"details\": " + list(node_details(g, k)) + "}";
  }
  o += "],\n  \"graph_edges\": [";
  for (size_t k = 0; k < app.graph_edges_drawn.size(); ++k) {
    const GraphEdge& e = app.graph_edges_drawn[k];
    if (e.from >= g.nodes.size() || e.to >= g.nodes.size()) continue;  // drawn from another trace's graph
    o += std::string(k ? ", " : "") + "{\"from\": " + std::to_string(g.nodes[e.from].id) +
         ", \"to\": " + std::to_string(g.nodes[e.to].id) + ", \"slot\": " + std::to_string(e.slot) +
         ", \"parallel\": " + std::to_string(e.parallel) + ", \"of\": " + std::to_string(e.parallel_count) + "}";
  }
  return o + "],\n  \"graph_legend\": " + list(app.graph_legend) + ",\n";
}

}  // namespace

// The Lesson tab (lesson.h): what the tests read to follow a lesson.
std::string lesson_json(const App& app) {
  const LessonView& v = app.lesson;
  auto b = [](bool x) { return std::string(x ? "true" : "false"); };
  std::string o = "  \"lesson\": {\"tab\": " + b(app.right_tab == RightTab::Lesson) +
                  ", \"catalog\": " + std::to_string(v.catalog.size()) + ", \"picked\": " + std::to_string(v.picked) +
                  ", \"open\": " + b(v.open()) + ", \"busy\": " + b(!v.in_flight.empty() || !v.queue.empty()) +
                  ", \"problem\": " + quoted(v.problem);
  o += ", \"progress\": [";
  for (size_t k = 0; k < v.catalog.size(); ++k) {
    const LessonEntry& e = v.catalog[k];
    o += std::string(k ? ", " : "") + "{\"name\": " + quoted(e.name) + ", \"seen\": " + std::to_string(e.seen) +
         ", \"right\": " + std::to_string(e.right) + ", \"answered\": " + std::to_string(e.answered) +
         ", \"passed\": " + std::to_string(e.passed) + ", \"error\": " + quoted(e.error) + "}";
  }
  o += "]";
  if (v.open()) {
    o += ", \"name\": " + quoted(v.name) + ", \"step\": " + std::to_string(v.step) +
         ", \"steps\": " + std::to_string(v.step_titles.size()) + ", \"title\": " + quoted(v.step_title) +
         ", \"asking\": " + b(v.asking()) + ", \"seen\": " + std::to_string(v.seen.size()) +
         ", \"prose_lines\": " + strings_json(v.prose_lines) + ", \"question_rect\": " + rect4(v.question_rect) +
         ", \"question_clip\": " + rect4(v.question_clip);
    char ms[32];
    std::snprintf(ms, sizeof ms, "%.1f", v.open_ms);
    o += std::string(", \"open_ms\": ") + ms;
    o += ", \"predictions\": [";
    for (size_t k = 0; k < v.predictions.size(); ++k) {
      const LessonPrediction& p = v.predictions[k];
      o += std::string(k ? ", " : "") + "{\"ask\": " + quoted(p.ask) + ", \"answered\": " + b(p.answered) +
           ", \"revealed\": " + b(p.revealed) + ", \"right\": " + b(p.right) +
           ", \"answer\": " + quoted(p.done() ? p.answer_text : "") +
           ", \"evidence_span\": " + std::to_string(p.evidence_span) + "}";
    }
    o += "]";
    if (v.exercise) {
      const LessonExercise& e = *v.exercise;
      o += ", \"exercise\": {\"checked\": " + b(e.checked) + ", \"passed\": " + b(e.passed) +
           ", \"reason\": " + quoted(e.reason) + ", \"hints_shown\": " + std::to_string(e.hints_shown) +
           ", \"editor\": " + quoted(e.editor) + ", \"editing\": " + b(v.editor_active) +
           ", \"attempts\": " + std::to_string(e.attempts.size()) +
           ", \"attempt_shown\": " + std::to_string(e.attempt_shown) + "}";
    }
  }
  return o + "},\n";
}

std::string state_json(const App& app, std::string* stable) {
  std::string o;
  o += "  \"source\": " + quoted(app.loaded.label) + ",\n";
  const Running& r = app.running;
  o += "  \"running\": " +
       (r.active ? "{\"code\": " + quoted(r.code) + ", \"from_console\": " + (r.from_console ? "true" : "false") +
                       ", \"stopping\": " + (r.stop_asked ? "true" : "false") + "}"
                 : std::string("null")) +
       ",\n";
  char stop_ms[32];
  std::snprintf(stop_ms, sizeof stop_ms, "%.1f", app.last_stop_ms);
  o += "  \"last_stop_ms\": " + std::string(app.last_stop_ms < 0 ? "null" : stop_ms) + ",\n";
  o += "  \"trace_spans\": " + std::to_string(app.loaded.trace ? app.trace().spans.size() : 0) + ",\n";
  o += "  \"steps\": " + std::to_string(app.story.steps.size()) + ",\n";
  o += "  \"step\": " + std::to_string(app.step()) + ",\n";
  o += "  \"playing\": " + std::string(app.play.playing ? "true" : "false") + ",\n";
  o += "  \"pace\": " + quoted(app.play.pace == Pace::Teaching ? "teaching" : "real time") + ",\n";
  o += "  \"speed\": " + std::to_string(app.play.speed) + ",\n";
  o += "  \"presenter\": " + std::string(app.presenter ? "true" : "false") + ",\n";
  {
    static const char* kTabs[] = {"detail", "memory", "compare", "graph", "streams", "notes", "lesson"};
    o += "  \"right_tab\": " + quoted(kTabs[static_cast<int>(app.right_tab)]) + ",\n";
  }
  o += "  \"fold_helpers\": " + std::string(app.fold_helpers ? "true" : "false") + ",\n";
  {
    const AppLayout& l = app.layout;
    char layout[256];
    std::snprintf(layout, sizeof layout,
                  "  \"layout\": {\"zoom\": %.3f, \"ui_scale\": %.3f, \"split_x\": %.3f, \"split_y\": %.3f, "
                  "\"timeline\": %s, \"console\": %s},\n",
                  l.zoom, app.ui_scale, l.split_x, l.split_y, l.timeline ? "true" : "false",
                  l.console ? "true" : "false");
    o += layout;
  }
  o += "  \"redraw\": " + quoted(app.redraw_damaged ? "damaged" : "full") + ",\n";
  if (app.has_steps()) {
    const Step& st = app.story.steps[app.step()];
    o += "  \"direction\": " + quoted(st.down ? "down" : "up") + ",\n";
    const RunOf run = run_of_step(app.story, app.step());
    o += "  \"run\": [" + std::to_string(run.k) + ", " + std::to_string(run.n) + "],\n";
    o += "  \"token_floor\": " + std::to_string(token_floor(app.story, app.step())) + ",\n";
    o += "  \"span\": " + span_json(app, st.span) + ",\n";
    const auto floors = floors_at(app.story, app.step());
    o += "  \"floors\": [\n";
    for (int f = 1; f <= kBuildingFloors; ++f) {
      const FloorView& v = floors[f];
      const FloorLayout& drawn = app.building.floors[f];
      const ImVec4 r = drawn.rect;
      const ImVec4 c = floor_color_vec(static_cast<trace::Floor>(f));
      char rect[160];
      std::snprintf(rect, sizeof rect, "[%.0f, %.0f, %.0f, %.0f], \"color\": [%d, %d, %d]", r.x, r.y, r.z, r.w,
                    int(c.x * 255 + 0.5f), int(c.y * 255 + 0.5f), int(c.z * 255 + 0.5f));
      o += "    {\"floor\": " + std::to_string(f) + ", \"title\": " + quoted(floor_title(f)) +
           ", \"state\": " + quoted(state_name(v.state)) +
           ", \"span\": " + (v.span == SIZE_MAX ? "null" : quoted(app.trace().spans[v.span].name)) +
           ", \"span_id\": " + (v.span == SIZE_MAX ? "null" : std::to_string(app.trace().spans[v.span].id)) +
           ", \"skip_reason\": " + quoted(v.skip_reason) + ", \"decision\": " + quoted(drawn.decision) +
           ", \"decision_fit\": " + fit_json(drawn.decision_fit) + ", \"shown\": " + shown_json(drawn) +
           ", \"rect\": " + rect + "}" + (f < kBuildingFloors ? ",\n" : "\n");
    }
    o += "  ],\n";
  } else {
    o += "  \"token_floor\": null,\n  \"span\": null,\n  \"floors\": [],\n";
  }
  o += "  \"panels\": [";
  for (size_t k = 0; k < app.panels_drawn.size(); ++k) o += (k ? ", " : "") + quoted(app.panels_drawn[k]);
  o += "],\n";
  o += "  \"tabs\": [";
  for (size_t k = 0; k < app.tab_labels.size(); ++k) o += (k ? ", " : "") + fit_json(app.tab_labels[k]);
  o += "],\n";
  o += "  \"timeline_header\": " + fit_json(app.timeline_header) + ",\n";
  o += "  \"texts\": [";
  for (size_t k = 0; k < app.texts_drawn.size(); ++k) {
    const DrawnText& d = app.texts_drawn[k];
    o += std::string(k ? ",\n    " : "\n    ") + "{\"panel\": " + quoted(d.panel) + ", \"fit\": " + fit_json(d.fit) +
         "}";
  }
  o += "],\n";
  o += navigation_json(app);
  o += "  \"compare\": " + (app.compare ? quoted(app.compare_label) : std::string("null")) + ",\n";
  {
    const App::CompareMatch& m = app.compare_match;
    const bool found = app.compare && m.other < app.compare->spans.size();
    o += "  \"compare_match\": {\"name\": " + quoted(m.name) + ", \"k\": " + std::to_string(m.k) +
         ", \"found\": " + (found ? "true" : "false") +
         ", \"floor\": " + std::to_string(found ? building_floor(app.compare->spans[m.other].floor) : 0) +
         ", \"kernel\": " + (m.kernel ? "true" : "false") + ", \"why\": " + quoted(m.why) + "},\n";
    o += "  \"compare_provenance\": " + quoted(app.compare_provenance) + ",\n";
    o += "  \"compare_cells\": [";
    for (int f = 1; f <= 9; ++f)
      o += (f > 1 ? ", [" : "[") + quoted(app.compare_cells[f][0]) + ", " + quoted(app.compare_cells[f][1]) + "]";
    o += "],\n";
  }
  o += device_json(app);
  o += explanation_json(app);
  o += roofline_json(app);
  o += memory_json(app);
  o += graph_json(app);
  o += lesson_json(app);
  o += "  \"error\": " + quoted(app.loaded.error) + ",\n";
  o += "  \"banner\": " + quoted(app.banner) + ",\n";
  o += "  \"console_lines\": " + std::to_string(app.console.size()) + ",\n";
  o += "  \"console_has_keys\": " + std::string(app.console_has_keys ? "true" : "false") + ",\n";
  o += "  \"presenter_console\": " + std::string(app.presenter && app.presenter_console ? "true" : "false") + ",\n";
  o += "  \"console_input\": " + quoted(app.input) + ",\n";
  o += "  \"console_last\": " + quoted(app.console.empty() ? std::string() : app.console.back().text) + "\n";
  o += "}\n";
  // What moves with the clock alone: first, so the rest compares as `stable`.
  char clock[160];
  std::snprintf(clock, sizeof clock, "  \"frame\": %llu,\n  \"run_seconds\": %.3f,\n  \"run_spans\": %llu,\n",
                static_cast<unsigned long long>(app.frames), r.active ? r.seconds : 0.0,
                static_cast<unsigned long long>(r.active ? r.spans : 0));
  std::string full = "{\n" + std::string(clock) + "  \"status\": " + quoted(run_status(app)) + ",\n" + o;
  if (stable) *stable = std::move(o);
  return full;
}

}  // namespace descent::ui
