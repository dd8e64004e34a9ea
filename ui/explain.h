// Why a span did what it did: an explanation built from the span's own
// arguments (and its parent's and children's), for the detail panel. Plain
// data, no ImGui: tests/ui checks it over traces of every op, without a window.
//
// [SECTION] Model
// [SECTION] Explaining
//
// Note [Explaining a span]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// A floor's general text (assets/floors/<n>.txt) says what the floor is for;
// it is the same at every step. An explanation says what this span decided
// and why, in sentences made from what the trace recorded: the dispatcher's
// key set, what fell through and the kernel it picked; autograd's graph=none
// and its reason, or the node, its edges and what it saved; the loop a kernel
// chose; the allocator's hit, split or new segment; the stream, its queue and
// the grid. Where the span's arguments do not say it all, its neighbours do:
// a cpu_alloc under the binding is a Python number made into a 0-d tensor; an
// aten::to under a kernel is an operand changing dtype before the loop; a
// dispatch with redispatch=true is a kernel passing the call below itself.
// A span that recorded none of what its kind records once it has decided
// (a kernel with no variant, an Autograd kernel with no graph) was left by an
// exception before it decided: the explanation says so rather than guess.
//
// Each explanation names the Notes that cover its mechanism (the app opens
// them in the Notes tab, ui/notes.h) and the file and function of PyTorch that
// do the same job, as text. Every kind of span the runtime emits has one:
// tests/ui/test_explain.cpp traces every op of the op table on the CPU and on
// sim:0, with and without autograd, and checks each span, that each Note
// cited exists, and that each PyTorch file cited is in its list of paths
// checked against pytorch/pytorch. The source view shows the line that
// decided (Note [Where a span decided] in tracer/tracer.h) where the span
// recorded one, the line that opened it otherwise.
#pragma once

#include <string>
#include <vector>

#include "tracer/trace.h"
#include "ui/notes.h"
#include "ui/story.h"

namespace descent::ui {

// [SECTION] Model ---------------------------------------------------------------

// A place in PyTorch's sources that does the same job (text only: the app reads no network).
struct PyTorchPlace {
  std::string file;      // a path in the pytorch/pytorch repository
  std::string function;  // what does the job there
};

struct Explanation {
  std::string kind;                    // "dispatch.call", "allocator.cache_hit", ...; "" when the span is unknown
  std::string title;                   // one line: what was decided
  std::vector<std::string> sentences;  // why, from the trace
  std::vector<std::string> notes;      // names of the Notes that cover it, the main one first (the N key opens it)
  std::vector<PyTorchPlace> pytorch;   // where PyTorch does the same job
  SourcePlace decided;                 // the line to show: where it decided, else where it opened ("" when none)
  bool decided_recorded = false;       // whether the span recorded decided_at (else `decided` is its own site)
};

// [SECTION] Explaining ----------------------------------------------------------

// The explanation of span `i` of the story's trace.
Explanation explain(const Story& s, size_t i);
// The same, building the story first (for a single span; a panel keeps its Story).
Explanation explain(const trace::Trace& t, size_t i);

// The span's decided_at argument as a place ("" file when it has none). A
// path written whole by a compiler that did not shorten it keeps only its
// part from floors/, tracer/ or ui/ on.
SourcePlace decided_at(const trace::Span& s);

}  // namespace descent::ui
