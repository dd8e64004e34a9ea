// Why a span did what it did, from the trace. See Note [Explaining a span] in explain.h.
//
// [SECTION] Explaining
//
// Which explainer a span gets, by its floor and what it recorded; the
// explainers are in a file per family of floors: explain_python.cpp (floors
// 1 and 2), explain_dispatch.cpp (3 and 4), explain_kernels.cpp (5 and 6),
// explain_device.cpp (7 to 9), reading the span through explain_span.h.
#include "ui/explain.h"

#include <cstdlib>

#include "ui/explain_span.h"

namespace descent::ui {

namespace explaining {

// [SECTION] Explaining -------------------------------------------------------------

// Whether a floor-7 span named `why` lies under span i, at any depth: a read
// (".item()", ".cpu()") waits inside the op that copies (Note [Reading a
// device tensor waits]).
bool read_waits_under(const At& a, size_t i, const std::string& why) {
  for (size_t c : a.s.children(i)) {
    const Span& sp = a.t().spans[c];
    if ((sp.floor == Floor::Streams && sp.name == why) || read_waits_under(a, c, why)) return true;
  }
  return false;
}

Explanation explain_at(const At& a) {
  const Span& sp = a.sp;
  switch (sp.floor) {
    case Floor::Python:
      return sp.file.empty() ? python_statement(a) : python_function(a);
    case Floor::Binding:
      if (has(sp, "overload")) return binding_op(a);
      if (sp.name == "tensor") return binding_tensor(a);
      if (sp.name == "_run_backward") return binding_backward(a);
      if (sp.name == "__getitem__" || sp.name == "__setitem__") return binding_index(a);
      if (read_waits_under(a, a.i, sp.name)) return binding_read(a);  // a floor-7 wait of the same name under it
      return {};
    case Floor::Dispatch:
      return dispatch_span(a);
    case Floor::Autograd:
      return starts_with(sp.name, "autograd::engine::evaluate_function") ? autograd_evaluate(a) : autograd_kernel(a);
    case Floor::Kernels:
      return starts_with(sp.name, "parallel_for") ? parallel_span(a) : kernel_span(a);
    case Floor::Allocator:
      if (sp.name == "cpu_alloc") return cpu_alloc(a);
      if (sp.name == "caching_alloc") return caching_alloc(a);
      return allocator_other(a);
    case Floor::Streams:
      return streams_span(a);
    case Floor::Launch:
      return has(sp, "kernel") ? launch_span(a) : Explanation{};
    case Floor::Device:
      return device_span(a);
    default:
      return {};
  }
}

}  // namespace explaining

SourcePlace decided_at(const trace::Span& s) {
  const std::string v = explaining::str(s, trace::kDecidedAt);
  const size_t colon = v.rfind(':');
  if (v.empty() || colon == std::string::npos) return {};
  std::string file = v.substr(0, colon);
  for (const char* root : {"floors/", "tracer/", "ui/"}) {  // a whole path: from the repository's folders on
    const size_t at = file.find(std::string("/") + root);
    if (file[0] == '/' && at != std::string::npos) {
      file = file.substr(at + 1);
      break;
    }
  }
  return {file, static_cast<uint32_t>(std::strtoul(v.c_str() + colon + 1, nullptr, 10))};
}

Explanation explain(const Story& s, size_t i) {
  Explanation e = explaining::explain_at(explaining::At{s, i, s.trace->spans[i]});
  const trace::Span& sp = s.trace->spans[i];
  e.decided = decided_at(sp);
  e.decided_recorded = !e.decided.file.empty();
  if (!e.decided_recorded) e.decided = {sp.file, sp.line};
  return e;
}

Explanation explain(const trace::Trace& t, size_t i) {
  const Story s = build_story(t);
  return explain(s, i);
}

}  // namespace descent::ui
