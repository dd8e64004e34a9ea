// The values view's model: the tensors a run's statements left in the user's
// namespace, each storage as its cells and each tensor as a window onto them,
// before and after each statement (Note [Recording the values] in
// floors/python/descent/_values.py records them into the trace's metadata
// "values.snapshots"). No ImGui: the tests build it without a window.
//
// Note [A view as a window onto cells]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A tensor is a storage (cells of one dtype, in a row) and three numbers per
// look at it: sizes, strides, and a storage offset. Its element (i, j) is
// cell offset + i*stride[0] + j*stride[1]. So `y = x.t()` owns no cells: it is
// x's six cells seen with the strides swapped; `x[:, 1]` is two of them, from
// cell 1 every 3; `ones(1).expand(4)` is one cell seen four times (stride 0).
// The view draws each storage once, as its row of cells with their values,
// and under it every tensor on it: its sizes, strides, offset and version
// counter, and its elements as a grid whose every box names the cell it reads
// (cells_of). A statement's in-place write is the storage's cells whose
// values changed between the snapshot before it and the one after, lit on the
// storage and in every window that reads them, and the version counters that
// went up (diff_values); a storage that is new after the statement is marked
// new, not lit as written.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tracer/trace.h"
#include "ui/story.h"

namespace descent::ui {

struct ValueStorage {
  std::string id;                   // "cpu:0x5f1e2a40" ("#2" appended when the address came back for a new one)
  std::string dtype, device;        // "float32", "cpu"
  int64_t itemsize = 0;             // bytes per cell
  int64_t cells = 0;                // the farthest cell any tensor on it reaches, plus one
  std::vector<std::string> values;  // the first min(cells, 256) cells' values as text; "?" where no tensor reads it
  std::string why;                  // why there are no values ("on sim:0: ..."), "" when there are
};

struct ValueTensor {
  std::string name;     // "x", "parts[0]", "w.grad", "x._base"
  std::string storage;  // its ValueStorage's id
  std::vector<int64_t> sizes, strides;
  int64_t offset = 0, version = 0;
  bool requires_grad = false;
  std::string grad_fn;  // "AddBackward0", "" for none
  std::string base;     // the name of the tensor it is a view of ("" when it is not a view)
};

struct ValuesSnapshot {
  std::string statement;  // the statement it is after ("" for the one before the first)
  bool raised = false;    // the statement raised
  std::vector<ValueStorage> storages;
  std::vector<ValueTensor> tensors;
  int64_t left_out = 0;  // tensors reachable past the recorder's cap
  const ValueStorage* storage(const std::string& id) const;
  const ValueTensor* tensor(const std::string& name) const;
};

struct ValuesModel {
  std::vector<ValuesSnapshot> snapshots;  // [0]: before the first statement; [k]: after statement k
  std::vector<size_t> statement_span;     // per statement k (from 0): its span (SIZE_MAX: not in the story)
  int64_t statements_left_out = 0;        // statements past the recorder's cap
  std::string error;                      // why there is no model ("" when there is one)
  bool empty() const { return snapshots.empty(); }
};

// The model of `t`'s metadata "values.snapshots", its statements matched to
// the story's root spans in order (a floor-1 root named as the statement).
// No metadata, or metadata that does not parse: empty, with `error` saying so.
ValuesModel build_values(const trace::Trace& t, const Story& s);

// The values at `step`: the statement whose call it is in, and the snapshots
// before and after it. `after_shown` is false while the token is still inside
// the statement (its result is not back yet), true from its last step on.
struct ValuesAt {
  size_t statement = SIZE_MAX;  // from 0; SIZE_MAX when the step is in no recorded statement
  const ValuesSnapshot* before = nullptr;
  const ValuesSnapshot* after = nullptr;
  bool after_shown = false;
  const ValuesSnapshot* shown() const { return after_shown ? after : before; }
};
ValuesAt values_at(const ValuesModel& m, const Story& s, size_t step);

// Per element of `t` in row-major order (at most `cap` of them), the storage
// cell it reads: offset + sum(index[d] * strides[d]).
std::vector<int64_t> cells_of(const ValueTensor& t, size_t cap = 4096);
int64_t numel_of(const ValueTensor& t);

// What a statement changed (Note [A view as a window onto cells]): per storage
// of `after`, which of its cells hold another value than before (none for a
// storage new after it); per tensor of `after`, whether its version counter
// went up and whether it is new.
struct ValuesDiff {
  struct Storage {
    bool fresh = false;         // not there before (or a new storage at an old address)
    std::vector<bool> changed;  // per recorded cell
    int64_t changed_count = 0;
  };
  struct Tensor {
    bool fresh = false;
    bool bumped = false;  // its version counter went up
    int64_t version_before = 0;
  };
  std::vector<Storage> storages;  // parallel to after.storages
  std::vector<Tensor> tensors;    // parallel to after.tensors
};
ValuesDiff diff_values(const ValuesSnapshot& before, const ValuesSnapshot& after);

// "(2, 3)" for sizes or strides.
std::string dims_text(const std::vector<int64_t>& v);

}  // namespace descent::ui
