// The values view's model. See values_model.h, Note [A view as a window onto cells].
#include "ui/values_model.h"

#include <algorithm>

#include "tracer/json.h"

namespace descent::ui {

namespace {

std::string string_of(const json::Value* v) { return v && v->is_string() ? std::string(v->as_string()) : ""; }
int64_t int_of(const json::Value* v) { return v && v->is_number() && v->is_integer() ? v->as_int() : 0; }
bool bool_of(const json::Value* v) { return v && v->type() == json::Type::Bool && v->as_bool(); }
std::vector<int64_t> ints_of(const json::Value* v) {
  std::vector<int64_t> out;
  if (v && v->is_array())
    for (size_t i = 0; i < v->size(); ++i) out.push_back(int_of(&(*v)[i]));
  return out;
}

ValuesSnapshot snapshot_of(const json::Value& s) {
  ValuesSnapshot out;
  out.statement = string_of(s.find("statement"));
  out.raised = bool_of(s.find("raised"));
  out.left_out = int_of(s.find("left_out"));
  if (const json::Value* st = s.find("storages"); st && st->is_array()) {
    for (size_t i = 0; i < st->size(); ++i) {
      const json::Value& v = (*st)[i];
      ValueStorage g;
      g.id = string_of(v.find("id"));
      g.dtype = string_of(v.find("dtype"));
      g.device = string_of(v.find("device"));
      g.itemsize = int_of(v.find("itemsize"));
      g.cells = int_of(v.find("cells"));
      g.why = string_of(v.find("why"));
      if (const json::Value* vals = v.find("values"); vals && vals->is_array())
        for (size_t k = 0; k < vals->size(); ++k) g.values.push_back(string_of(&(*vals)[k]));
      out.storages.push_back(std::move(g));
    }
  }
  if (const json::Value* ts = s.find("tensors"); ts && ts->is_array()) {
    for (size_t i = 0; i < ts->size(); ++i) {
      const json::Value& v = (*ts)[i];
      ValueTensor t;
      t.name = string_of(v.find("name"));
      t.storage = string_of(v.find("storage"));
      t.sizes = ints_of(v.find("sizes"));
      t.strides = ints_of(v.find("strides"));
      t.offset = int_of(v.find("offset"));
      t.version = int_of(v.find("version"));
      t.requires_grad = bool_of(v.find("requires_grad"));
      t.grad_fn = string_of(v.find("grad_fn"));
      t.base = string_of(v.find("base"));
      if (t.sizes.size() != t.strides.size()) continue;  // not a tensor the view can draw
      out.tensors.push_back(std::move(t));
    }
  }
  return out;
}

}  // namespace

const ValueStorage* ValuesSnapshot::storage(const std::string& id) const {
  for (const ValueStorage& g : storages)
    if (g.id == id) return &g;
  return nullptr;
}

const ValueTensor* ValuesSnapshot::tensor(const std::string& name) const {
  for (const ValueTensor& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

ValuesModel build_values(const trace::Trace& t, const Story& s) {
  ValuesModel m;
  const auto it = t.metadata.find("values.snapshots");
  if (it == t.metadata.end()) {
    m.error =
        "this trace recorded no values (a trace made before the values view, or by descent.trace() "
        "rather than a run of statements)";
    return m;
  }
  try {
    const json::Document doc = json::parse(it->second, "values.snapshots");
    const json::Value& root = doc.root();
    const json::Value* snaps = root.is_object() ? root.find("snapshots") : nullptr;
    if (!snaps || !snaps->is_array()) throw trace::TraceFormatError("values.snapshots: no \"snapshots\" array");
    for (size_t i = 0; i < snaps->size(); ++i)
      if ((*snaps)[i].is_object()) m.snapshots.push_back(snapshot_of((*snaps)[i]));
    m.statements_left_out = int_of(root.find("statements_left_out"));
  } catch (const std::exception& e) {
    m = ValuesModel{};
    m.error = std::string("the trace's values could not be read: ") + e.what();
    return m;
  }
  // Statement k is the k-th floor-1 root of the story named as it (roots of
  // other kinds, such as the wait for the devices at the end, lie between).
  const size_t n = m.snapshots.empty() ? 0 : m.snapshots.size() - 1;
  m.statement_span.assign(n, SIZE_MAX);
  size_t r = 0;
  for (size_t k = 0; k < n; ++k) {
    const std::string& text = m.snapshots[k + 1].statement;
    for (size_t q = r; q < s.roots.size(); ++q) {
      const trace::Span& sp = t.spans[s.roots[q]];
      if (sp.floor == trace::Floor::Python && sp.name == text) {
        m.statement_span[k] = s.roots[q];
        r = q + 1;
        break;
      }
    }
  }
  return m;
}

ValuesAt values_at(const ValuesModel& m, const Story& s, size_t step) {
  ValuesAt at;
  if (m.snapshots.empty()) return at;
  if (s.steps.empty() || step >= s.steps.size()) {  // nothing ran (a line that raised at once): the last state
    at.before = at.after = &m.snapshots.back();
    at.after_shown = true;
    return at;
  }
  const size_t root = root_of_span(s, s.steps[step].span);
  // The statement of this root, or the last one that began before it.
  size_t k = SIZE_MAX;
  bool inside = false;
  for (size_t q = 0; q < m.statement_span.size(); ++q) {
    const size_t sp = m.statement_span[q];
    if (sp == SIZE_MAX) continue;
    if (sp == root) {
      k = q;
      inside = true;
      break;
    }
    if (s.down_step[sp] != SIZE_MAX && s.down_step[sp] <= step) k = q;
  }
  if (k == SIZE_MAX) {  // before the first recorded statement
    at.before = at.after = &m.snapshots.front();
    return at;
  }
  at.statement = k;
  at.before = &m.snapshots[k];
  at.after = &m.snapshots[std::min(k + 1, m.snapshots.size() - 1)];
  at.after_shown = !inside || step >= s.up_step[root];
  return at;
}

int64_t numel_of(const ValueTensor& t) {
  int64_t n = 1;
  for (int64_t d : t.sizes) n *= d;
  return n;
}

std::vector<int64_t> cells_of(const ValueTensor& t, size_t cap) {
  std::vector<int64_t> out;
  const int64_t n = numel_of(t);
  if (n <= 0) return out;
  std::vector<int64_t> index(t.sizes.size(), 0);
  for (int64_t e = 0; e < n && out.size() < cap; ++e) {
    int64_t cell = t.offset;
    for (size_t d = 0; d < index.size(); ++d) cell += index[d] * t.strides[d];
    out.push_back(cell);
    for (size_t d = index.size(); d-- > 0;) {  // the next index, row-major
      if (++index[d] < t.sizes[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

ValuesDiff diff_values(const ValuesSnapshot& before, const ValuesSnapshot& after) {
  ValuesDiff d;
  for (const ValueStorage& g : after.storages) {
    ValuesDiff::Storage out;
    out.changed.assign(g.values.size(), false);
    const ValueStorage* was = before.storage(g.id);
    out.fresh = was == nullptr;
    if (was) {
      for (size_t c = 0; c < g.values.size(); ++c) {
        // A cell no tensor read before ("?") is not lit: nothing says it changed.
        if (c < was->values.size() && was->values[c] != "?" && g.values[c] != "?" && was->values[c] != g.values[c]) {
          out.changed[c] = true;
          ++out.changed_count;
        }
      }
    }
    d.storages.push_back(std::move(out));
  }
  for (const ValueTensor& t : after.tensors) {
    ValuesDiff::Tensor out;
    const ValueTensor* was = before.tensor(t.name);
    // The same name on another storage is a new tensor (x = x + 1), not x written.
    out.fresh = was == nullptr || was->storage != t.storage;
    if (!out.fresh) {
      out.version_before = was->version;
      out.bumped = t.version > was->version;
    }
    d.tensors.push_back(std::move(out));
  }
  return d;
}

std::string dims_text(const std::vector<int64_t>& v) {
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + (v.size() == 1 ? ",)" : ")");
}

}  // namespace descent::ui
