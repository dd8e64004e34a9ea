// The models of a trace, built in one place. See models.h.
#include "ui/models.h"

#include <algorithm>
#include <set>
#include <unordered_map>

namespace descent::ui {

TraceModels build_models(const trace::Trace& t, bool fold_helpers) {
  TraceModels m;
  m.folded = fold_helpers;
  m.story = build_story(t, fold_helpers);
  m.streams = build_streams(t);
  m.timeline = TimelineIndex::build(t, m.story.parent_index);
  m.flows = flow_indices(t);
  m.graph = build_graph(t);
  return m;
}

std::vector<std::pair<size_t, size_t>> flow_indices(const trace::Trace& t) {
  std::vector<std::pair<size_t, size_t>> out;
  if (t.flows.empty()) return out;
  std::unordered_map<uint64_t, size_t> by_id;
  by_id.reserve(t.spans.size());
  for (size_t i = 0; i < t.spans.size(); ++i) by_id.emplace(t.spans[i].id, i);
  for (const trace::Flow& f : t.flows) {
    const auto a = by_id.find(f.from), b = by_id.find(f.to);
    if (a != by_id.end() && b != by_id.end()) out.emplace_back(a->second, b->second);
  }
  return out;
}

// [SECTION] The compare view's model ------------------------------------------------------------

std::array<FloorOps, 10> floor_ops(const trace::Trace& t, bool kineto) {
  std::array<FloorOps, 10> out;
  const Story s = build_story(t);  // for self times
  std::set<uint64_t> calls_ops;    // the dispatcher calls that call another
  for (const trace::Span& sp : t.spans)
    if (sp.floor == trace::Floor::Dispatch && sp.parent != 0) calls_ops.insert(sp.parent);
  std::array<std::unordered_map<std::string, size_t>, 10> where;  // per floor: an op's index in `ops`
  auto count = [&](int f, const std::string& n) {
    auto [it, fresh] = where[f].emplace(n, out[f].ops.size());
    if (fresh) out[f].ops.emplace_back(n, 0);
    ++out[f].ops[it->second].second;
  };
  for (size_t i = 0; i < t.spans.size(); ++i) {
    const int f = static_cast<int>(t.spans[i].floor);
    if (f < 1 || f > 9) continue;
    ++out[f].spans;
    out[f].self_ns += s.self_ns[i];
    count(f, t.spans[i].name);
    if (kineto && t.spans[i].floor == trace::Floor::Dispatch && !calls_ops.count(t.spans[i].id)) {
      const int k = static_cast<int>(trace::Floor::Kernels);
      ++out[k].spans;
      out[k].within_dispatch = true;
      count(k, t.spans[i].name + "'s kernel");
    }
  }
  return out;
}

RaisedAt raised_at(const Story& s, const std::string& error) {
  RaisedAt r;
  if (error.empty() || s.roots.empty() || !s.trace) return r;
  // The exception's last line that says something (a traceback ends with it).
  size_t end = error.find_last_not_of(" \n");
  if (end != std::string::npos) {
    const size_t start = error.rfind('\n', end);
    r.message = error.substr(start == std::string::npos ? 0 : start + 1,
                             end + 1 - (start == std::string::npos ? 0 : start + 1));
  }
  // The statement that raised is the last call told; down its last children to where it stopped.
  size_t at = s.roots.back();
  for (;;) {
    const auto kids = s.children(at);
    size_t next = SIZE_MAX;
    for (size_t k = kids.size(); k-- > 0;) {
      if (s.trace->spans[kids[k]].floor != trace::Floor::Allocator) {  // a free on the way out is not the raise
        next = kids[k];
        break;
      }
    }
    if (next == SIZE_MAX) break;
    at = next;
  }
  // A kernel that chose its loop ran to its end: what raised came after it, in the statement's Python.
  if (s.trace->spans[at].floor == trace::Floor::Kernels && s.trace->spans[at].find_arg("variant")) at = s.roots.back();
  r.span = at;
  r.floor = building_floor(s.trace->spans[at].floor);
  r.op = s.trace->spans[at].name;
  return r;
}

// Note [PyTorch's place for a failed check]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A call that raises stops at a check, and PyTorch's check for the same
// mistake is not always TensorIterator's. A structured op checks in its meta
// function, run by its CPU kernel's wrapper before any output is made: mm's
// "mat1 and mat2 shapes cannot be multiplied" is TORCH_META_FUNC(mm) in
// LinearAlgebra.cpp, mv's is TORCH_META_FUNC(addmv) in Blas.cpp; dot checks
// in Blas.cpp's dot_check, bmm in common_checks_baddbmm_bmm. Shapes that do
// not broadcast fail in ExpandUtils.cpp's infer_size_impl (which
// TensorIterator's compute_shape calls), a bad dim in c10's maybe_wrap_dim, a
// view's shape in InferSize.h. The op decides first, then the message: an op
// not listed falls back to the message, and to TensorIterator's build only
// for an elementwise op.
PyTorchCheck pytorch_check_of(const std::string& op, const std::string& message) {
  const std::string o = op.rfind("aten::", 0) == 0 ? op.substr(6) : op;
  const auto says = [&](const char* words) { return message.find(words) != std::string::npos; };
  const std::string la = "aten/src/ATen/native/LinearAlgebra.cpp", blas = "aten/src/ATen/native/Blas.cpp";
  if (says("Dimension out of range"))
    return {"c10/core/WrapDimMinimal.cpp", "maybe_wrap_dim", "a dim within [-ndim, ndim)"};
  if (says("must have the same dtype") || says("expected m1 and m2 to have the same dtype"))
    return {la, "addmm_impl_cpu_", "both matrices of one dtype"};
  if (o == "mm")
    return {la, "TORCH_META_FUNC(mm)", "two matrices whose inner sizes agree (mat1's columns, mat2's rows)"};
  if (o == "addmm") return {la, "TORCH_META_FUNC(addmm): ADDMM_META()", "two matrices whose inner sizes agree"};
  if (o == "bmm" || o == "baddbmm")
    return {la, "common_checks_baddbmm_bmm", "3-D batches of one count whose matrices multiply"};
  if (o == "matmul") return {la, "_matmul_impl", "operands of at least one dimension that multiply"};
  if (o == "mv") return {blas, "TORCH_META_FUNC(addmv)", "a matrix and a vector of its column count"};
  if (o == "dot") return {blas, "dot_check", "two 1-D tensors of one dtype and size"};
  if (says("is invalid for input of size"))
    return {"aten/src/ATen/InferSize.h", "infer_size_impl", "a shape with as many elements as the input"};
  if (says("view size is not compatible"))
    return {"aten/src/ATen/native/TensorShape.cpp", "view_impl", "strides the new shape can be read with"};
  if (says("The expanded size of the tensor"))
    return {"aten/src/ATen/ExpandUtils.cpp", "inferExpandGeometry", "sizes that keep or widen size-1 dimensions"};
  if (says("must match the size of tensor"))
    return {"aten/src/ATen/ExpandUtils.cpp", "infer_size_impl (from TensorIteratorBase::compute_shape)",
            "shapes that broadcast"};
  if (says("Sizes of tensors must match except in dimension"))
    return {"aten/src/ATen/native/TensorShape.h", "check_cat_shape_except_dim", "tensors of one shape but the dim"};
  if (o == "cat") return {"aten/src/ATen/native/TensorShape.cpp", "TORCH_META_FUNC(cat)", "tensors that can be joined"};
  return {};
}

}  // namespace descent::ui
