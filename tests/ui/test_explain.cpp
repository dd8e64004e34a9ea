// The explanations (ui/explain.h), the Notes (ui/notes.h) and the building's
// floors against the detail panel, over real traces: every op of the op table
// on the CPU and on sim:0, with and without autograd, and the statements of
// tests/ui/explain_traces.py's EXTRA (written by the ctest fixture
// ui_explain_traces into $DESCENT_EXPLAIN_TRACES), plus the H200 trace of
// tests/tracer/data.
//
// [SECTION] The traces
// [SECTION] Every kind of span has an explanation
// [SECTION] What explanations cite
// [SECTION] The line that decided
// [SECTION] The Notes
// [SECTION] Panels that agree
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "tracer/sources.h"
#include "ui/explain.h"
#include "ui/notes.h"
#include "ui/story.h"

namespace descent::ui {
namespace {

namespace fs = std::filesystem;
using trace::Floor;

// [SECTION] The traces -------------------------------------------------------------

// Where the fixture wrote the traces; empty (the tests skip) when run outside ctest.
std::string traces_dir() {
  const char* d = std::getenv("DESCENT_EXPLAIN_TRACES");
  return d ? d : "";
}

struct Named {
  std::string name;
  trace::Trace trace;
};

std::vector<Named> load_traces() {
  std::vector<Named> out;
  const std::string dir = traces_dir();
  std::vector<fs::path> paths;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() == ".descent") paths.push_back(e.path());
  }
  std::sort(paths.begin(), paths.end());
  for (const fs::path& p : paths) out.push_back({p.stem().string(), trace::load(p.string())});
  out.push_back({"h200_cuda_add",
                 trace::load(std::string(DESCENT_TEST_SOURCE_DIR) + "/tests/tracer/data/h200_cuda_add.descent")});
  return out;
}

const std::vector<Named>& traces() {
  static const std::vector<Named> t = load_traces();
  return t;
}

const trace::Trace& named(const std::string& name) {
  for (const Named& n : traces())
    if (n.name == name) return n.trace;
  throw std::runtime_error("no trace named " + name + " in " + traces_dir());
}

#define NEED_TRACES()                                                      \
  if (traces_dir().empty())                                                \
  GTEST_SKIP() << "DESCENT_EXPLAIN_TRACES is not set: run through ctest, " \
                  "whose fixture ui_explain_traces writes the traces"

// A span's shape, independent of the explainer: its floor, its name (an op's
// name, a Python function's or a statement's text stand for their class), its
// parent's floor and the keys of its arguments. Spans of one shape are one kind.
std::string shape_of(const trace::Trace& t, const Story& s, size_t i) {
  const trace::Span& sp = t.spans[i];
  std::string name = sp.name;
  if (name.starts_with("aten::")) name = "aten::*";
  if (sp.floor == Floor::Python) name = sp.file.empty() ? "<statement>" : "<python function>";
  if (name.starts_with("autograd::engine::evaluate_function")) name = "autograd::engine::evaluate_function";
  if (sp.floor == Floor::Device) name = name.starts_with("Memcpy") ? "<memcpy>" : "<kernel>";
  const size_t p = s.parent_index[i];
  std::string out = std::to_string(static_cast<int>(sp.floor)) + " " + name + " under " +
                    (p == SIZE_MAX ? std::string("nothing") : std::to_string(static_cast<int>(t.spans[p].floor))) +
                    " (";
  std::set<std::string> keys;
  for (const trace::SpanArg& a : sp.args) keys.insert(a.key);
  for (const std::string& k : keys) out += k + " ";
  return out + ")";
}

// [SECTION] Every kind of span has an explanation ---------------------------------

TEST(Explain, EverySpanOfEveryOpOnEveryDeviceIsExplained) {
  NEED_TRACES();
  ASSERT_GT(traces().size(), 100u) << "the fixture wrote too few traces";
  std::map<std::string, std::string> kinds;  // shape -> the explanation's kind (the test's log lists them)
  std::set<std::string> distinct;
  int own_tasks = 0, shared_tasks = 0;
  for (const Named& n : traces()) {
    const Story s = build_story(n.trace);
    for (size_t i = 0; i < n.trace.spans.size(); ++i) {
      const Explanation e = explain(s, i);
      const std::string shape = shape_of(n.trace, s, i);
      ASSERT_FALSE(e.kind.empty()) << n.name << ": no explanation for span '" << n.trace.spans[i].name << "', "
                                   << shape;
      EXPECT_FALSE(e.title.empty()) << n.name << " " << shape;
      EXPECT_FALSE(e.sentences.empty()) << n.name << " " << shape;
      EXPECT_FALSE(e.notes.empty()) << n.name << ": " << e.kind << " cites no Note";
      EXPECT_FALSE(e.pytorch.empty()) << n.name << ": " << e.kind << " names no PyTorch file";
      std::vector<std::string> texts = e.sentences;
      texts.push_back(e.title);
      for (const std::string& sentence : texts) {
        // An argument the explanation expected and did not find is written "?".
        for (size_t q = sentence.find('?'); q != std::string::npos; q = sentence.find('?', q + 1)) {
          EXPECT_FALSE(q == 0 || sentence[q - 1] == ' ' || sentence[q - 1] == '(')
              << n.name << " " << e.kind << ": a value is missing: " << sentence;
        }
      }
      kinds.emplace(shape, e.kind);
      distinct.insert(e.kind);
      // A task of the packed matmul says whether it packed its own panels (Note [Packed matmul]).
      if (n.trace.spans[i].name == "tile task") {
        const bool own = std::any_of(n.trace.spans[i].args.begin(), n.trace.spans[i].args.end(),
                                     [](const trace::SpanArg& a) { return a.key == "packed_its_own_panels"; });
        ++(own ? own_tasks : shared_tasks);
        std::string all;
        for (const std::string& sentence : e.sentences) all += sentence + " ";
        EXPECT_EQ(all.find("own thread's buffers") != std::string::npos, own) << all;
        EXPECT_EQ(all.find("packing first") != std::string::npos, !own) << all;
      }
    }
  }
  EXPECT_GT(own_tasks, 0) << "no task of a one-step packed product in the traces";
  EXPECT_GT(shared_tasks, 0) << "no task of a packed product with packing items in the traces";
  for (const auto& [shape, kind] : kinds) std::cout << "  " << shape << " -> " << kind << "\n";
  std::cout << kinds.size() << " shapes of span, " << distinct.size() << " kinds of explanation\n";
  // The kinds a lesson asks about are all among them.
  for (const char* k : {"binding.op",           "allocator.wrapped_number",
                        "dispatch.call",        "dispatch.redispatch",
                        "dispatch.from_kernel", "autograd.none",
                        "autograd.recorded",    "autograd.evaluate_function",
                        "kernel.reference",     "kernel.optimized",
                        "kernel.device",        "kernel.parallel_for",
                        "allocator.cache_hit",  "allocator.cache_miss",
                        "allocator.raw_malloc", "allocator.free",
                        "streams.enqueue",      "launch",
                        "streams.synchronize",  "device.kernel",
                        "streams.copy",         "kernel.packed_item"}) {
    EXPECT_TRUE(distinct.count(k)) << "no span of the traces was explained as " << k;
  }
}

TEST(Explain, TheWrappedNumberAndTheToUnderTheKernel) {
  NEED_TRACES();
  const trace::Trace& t = named("operators");
  const Story s = build_story(t);
  bool wrapped = false, to = false;
  for (size_t i = 0; i < t.spans.size(); ++i) {
    const Explanation e = explain(s, i);
    if (e.kind == "binding.op" && t.spans[i].name == "add") {
      std::string all;
      for (const std::string& x : e.sentences) all += x;
      wrapped |= all.find("wrapped number") != std::string::npos;
    }
    const size_t p = s.parent_index[i];
    if (e.kind == "dispatch.from_kernel" && t.spans[i].name == "aten::to" && t.spans[p].name == "aten::add") {
      EXPECT_NE(e.title.find("aten::add"), std::string::npos) << e.title;
      std::string all;
      for (const std::string& x : e.sentences) all += x;
      EXPECT_NE(all.find("float32"), std::string::npos) << all;  // the result's dtype, read off the kernel's span
      EXPECT_NE(all.find("Python number"), std::string::npos) << all;
      to = true;
    }
  }
  EXPECT_TRUE(wrapped && to);
}

// [SECTION] What explanations cite -----------------------------------------------

// Paths of pytorch/pytorch that explanations may cite: each was looked up in
// the pytorch/pytorch repository (the search tool's find_files, by exact
// path) when it was written in. An explanation citing a file not listed here
// fails: check the new path the same way, then add it.
const std::set<std::string> kCheckedPyTorchPaths = {
    "torch/csrc/autograd/python_variable_indexing.cpp",
    "aten/src/ATen/Parallel.h",
    "aten/src/ATen/ParallelNative.cpp",
    "aten/src/ATen/ScalarOps.h",
    "aten/src/ATen/TensorIndexing.h",
    "aten/src/ATen/TensorIterator.cpp",
    "aten/src/ATen/core/DistributionsHelper.h",
    "aten/src/ATen/core/boxing/KernelFunction.h",
    "aten/src/ATen/core/dispatch/DispatchKeyExtractor.h",
    "aten/src/ATen/core/dispatch/Dispatcher.h",
    "aten/src/ATen/cuda/CUDAEvent.h",
    "aten/src/ATen/cuda/CachingHostAllocator.cpp",
    "aten/src/ATen/native/CPUBlas.cpp",
    "aten/src/ATen/native/Copy.cpp",
    "aten/src/ATen/native/DispatchStub.h",
    "aten/src/ATen/native/Scalar.cpp",
    "aten/src/ATen/native/TensorConversions.cpp",
    "aten/src/ATen/native/TensorShape.cpp",
    "aten/src/ATen/native/cpu/IndexKernel.cpp",
    "aten/src/ATen/native/cpu/Loops.h",
    "aten/src/ATen/native/cpu/Reduce.h",
    "aten/src/ATen/native/cpu/SumKernel.cpp",
    "aten/src/ATen/native/cuda/CUDALoops.cuh",
    "aten/src/ATen/native/cuda/CUDAScalar.cu",
    "aten/src/ATen/native/cuda/Copy.cu",
    "aten/src/ATen/record_function.h",
    "aten/src/ATen/templates/RegisterBackendSelect.cpp",
    "c10/core/CPUAllocator.cpp",
    "c10/core/GradMode.h",
    "c10/core/impl/alloc_cpu.cpp",
    "c10/cuda/CUDACachingAllocator.cpp",
    "c10/cuda/CUDAException.h",
    "c10/cuda/CUDAFunctions.cpp",
    "c10/cuda/CUDAStream.h",
    "tools/autograd/gen_variable_type.py",
    "tools/autograd/templates/ADInplaceOrViewType.cpp",
    "tools/autograd/templates/VariableType.cpp",
    "tools/autograd/templates/python_torch_functions.cpp",
    "tools/autograd/templates/python_variable_methods.cpp",
    "torch/_tensor.py",
    "torch/_tensor_str.py",
    "torch/autograd/__init__.py",
    "torch/csrc/autograd/VariableTypeUtils.h",
    "torch/csrc/autograd/engine.cpp",
    "torch/csrc/autograd/function.h",
    "torch/csrc/autograd/functions/accumulate_grad.h",
    "torch/csrc/autograd/functions/utils.h",
    "torch/csrc/autograd/input_buffer.cpp",
    "torch/csrc/distributed/c10d/ProcessGroupMPI.cpp",
    "torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp",
    "torch/csrc/distributed/c10d/ProcessGroupWrapper.cpp",
    "torch/csrc/distributed/c10d/Ops.cpp",
    "torch/csrc/autograd/profiler_python.cpp",
    "torch/csrc/autograd/python_engine.cpp",
    "torch/csrc/autograd/python_variable.cpp",
    "torch/csrc/autograd/saved_variable.h",
    "torch/csrc/profiler/kineto_shim.cpp",
    "torch/csrc/utils/python_arg_parser.cpp",
    "torch/csrc/utils/tensor_new.cpp",
    "torch/cuda/__init__.py",
};

TEST(Explain, EveryNoteCitedExistsAndEveryPyTorchFileWasChecked) {
  NEED_TRACES();
  const NoteIndex& notes = embedded_notes();
  std::set<std::string> cited_notes, cited_files;
  for (const Named& n : traces()) {
    const Story s = build_story(n.trace);
    for (size_t i = 0; i < n.trace.spans.size(); ++i) {
      const Explanation e = explain(s, i);
      for (const std::string& name : e.notes) {
        cited_notes.insert(name);
        EXPECT_NE(notes.find(name), nullptr) << e.kind << " cites Note [" << name << "], which no source holds";
      }
      for (const PyTorchPlace& p : e.pytorch) {
        cited_files.insert(p.file);
        EXPECT_TRUE(kCheckedPyTorchPaths.count(p.file)) << e.kind << " cites " << p.file << ", not a checked path";
        EXPECT_FALSE(p.function.empty()) << e.kind << " names no function in " << p.file;
      }
    }
  }
  std::cout << cited_notes.size() << " Notes and " << cited_files.size() << " PyTorch files cited\n";
}

// [SECTION] The line that decided ------------------------------------------------

TEST(Explain, TheLineThatDecidedIsTheDecision) {
  NEED_TRACES();
  std::set<std::string> floors;  // which kinds of span recorded one
  for (const Named& n : traces()) {
    const Story s = build_story(n.trace);
    for (size_t i = 0; i < n.trace.spans.size(); ++i) {
      const trace::Span& sp = n.trace.spans[i];
      const SourcePlace at = decided_at(sp);
      if (at.file.empty()) continue;
      // A saved trace whose file has changed since (the H200 recording), or has gone from this build
      // (its register_cpu.cpp, split by family since): the app shows no line for it (Note [Source
      // fingerprints]), so there is none to check here. A file the trace holds no fingerprint of
      // must still be embedded.
      const trace::SourceMatch match = trace::source_match(n.trace, at.file);
      const bool gone = match == trace::SourceMatch::NotOurs &&
                        n.trace.metadata.contains(std::string(trace::kSourceMetaPrefix) + at.file);
      if (match == trace::SourceMatch::Changed || gone) continue;
      floors.insert(trace::floor_name(sp.floor));
      const std::string_view text = trace::embedded_source(at.file);
      ASSERT_FALSE(text.empty()) << at.file << " is not embedded";
      std::istringstream in{std::string(text)};
      std::string line;
      for (uint32_t k = 0; k < at.line && std::getline(in, line); ++k) {
      }
      EXPECT_TRUE(line.find("DESCENT_DECIDES") != std::string::npos || line.find("DESCENT_HERE") != std::string::npos)
          << n.name << ": " << sp.name << " decided at " << at.file << ":" << at.line << ", which reads: " << line;
      const Explanation e = explain(s, i);
      EXPECT_TRUE(e.decided_recorded);
      EXPECT_EQ(e.decided.file, at.file);
    }
  }
  // The dispatcher's kernel, autograd's branch, the allocator's hit or miss, a kernel's loop.
  for (const char* f : {"dispatch", "autograd", "allocator", "kernels"}) EXPECT_TRUE(floors.count(f)) << f;
}

TEST(Explain, DecidedAtKeepsTheRepositoryPath) {
  trace::Span s;
  s.args.push_back({"decided_at", std::string("/home/ci/descent/floors/kernels/x.cu:12")});
  EXPECT_EQ(decided_at(s).file, "floors/kernels/x.cu");
  EXPECT_EQ(decided_at(s).line, 12u);
  s.args[0].value = std::string("floors/dispatch/dispatcher.cpp:283");
  EXPECT_EQ(decided_at(s).file, "floors/dispatch/dispatcher.cpp");
  s.args.clear();
  EXPECT_TRUE(decided_at(s).file.empty());
}

// [SECTION] The Notes ---------------------------------------------------------------

TEST(Notes, EveryNoteOfTheSourcesIsFound) {
  const NoteIndex& notes = embedded_notes();
  EXPECT_GE(notes.notes.size(), 75u);
  const Note* n = notes.find("Computing the key set");
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->file, "floors/dispatch/dispatcher.cpp");
  // Its line is the line of its name.
  std::istringstream in{std::string(trace::embedded_source(n->file))};
  std::string line;
  for (uint32_t k = 0; k < n->line; ++k) std::getline(in, line);
  EXPECT_NE(line.find("Note [Computing the key set]"), std::string::npos) << line;
  EXPECT_NE(n->text.find("computed fresh every time"), std::string::npos);
  EXPECT_EQ(n->text.find("//"), std::string::npos);  // comment markers taken off
  EXPECT_FALSE(n->cited_at.empty());
  // A note in a Python docstring, and the app's own.
  ASSERT_NE(notes.find("Streams in Python"), nullptr);
  EXPECT_EQ(notes.find("Streams in Python")->file, "floors/python/descent/_device.py");
  EXPECT_NE(notes.find("A call as steps"), nullptr);
  EXPECT_NE(notes.find("Tensor-core matmul"), nullptr);  // a .cu file
  for (const Note& x : notes.notes) {
    EXPECT_FALSE(x.text.empty()) << x.name;
    EXPECT_GT(x.line, 0u) << x.name;
  }
}

TEST(Notes, ParsingCommentsDocstringsAndReferences) {
  const std::string cpp =
      "int x;\n"
      "// Note [First]\n"
      "// ~~~~~~~~~~~~\n"
      "// One line,\n"
      "// another.\n"
      "//\n"
      "//   1. a list item that\n"
      "//      goes on\n"
      "//   2. second, see Note [Second\n"
      "//      thing]\n"
      "int y;  // Note [First] again\n";
  const std::string py =
      "\"\"\"Module.\n\nNote [Second thing]\n~~~~~~~~~~~~~~~~~~~\nDocstring text.\n\"\"\"\nimport os\n";
  const NoteIndex idx = parse_notes({{"a.cpp", cpp}, {"b.py", py}});
  ASSERT_EQ(idx.notes.size(), 2u);
  const Note* a = idx.find("First");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->line, 2u);
  EXPECT_EQ(a->text,
            "One line,\nanother.\n\n  1. a list item that\n     goes on\n  2. second, see Note [Second\n     thing]");
  ASSERT_EQ(a->cites.size(), 1u);
  EXPECT_EQ(a->cites[0], "Second thing");
  ASSERT_EQ(a->cited_at.size(), 1u);
  EXPECT_EQ(a->cited_at[0].line, 11u);
  const Note* b = idx.find("Second thing");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->text, "Docstring text.");
  ASSERT_EQ(b->cited_at.size(), 1u);  // the wrapped reference
  EXPECT_EQ(b->cited_at[0].file, "a.cpp");
  EXPECT_EQ(b->cited_at[0].line, 9u);
  const std::vector<std::string> p = paragraphs(*a);
  ASSERT_EQ(p.size(), 4u);
  EXPECT_EQ(p[0], "One line, another.");
  EXPECT_EQ(p[1], "");
  EXPECT_EQ(p[2], "  1. a list item that goes on");
  EXPECT_EQ(p[3], "  2. second, see Note [Second thing]");
  EXPECT_EQ(idx.search("docstring").size(), 1u);
  EXPECT_EQ(idx.search("FIRST")[0], idx.index_of("First"));
  EXPECT_EQ(idx.search("").size(), 2u);
  EXPECT_TRUE(idx.search("nowhere at all").empty());
}

// [SECTION] Panels that agree -------------------------------------------------------

// Every step of every told call: the floor of the step's span shows that span,
// going down and going up, as the detail panel does; a floor the call reaches
// is never skipped, and one it skips has a reason.
void expect_floors_agree(const std::string& name, const trace::Trace& t) {
  const Story s = build_story(t);
  for (size_t k = 0; k < s.steps.size(); ++k) {
    const auto v = floors_at(s, k);
    const size_t span = s.steps[k].span;
    const int f = building_floor(t.spans[span].floor);
    if (f != 0) {
      EXPECT_EQ(v[f].span, span) << name << " step " << k << (s.steps[k].down ? " down" : " up");
    }
    const size_t r = root_of_step(s, k);
    for (int g = 1; g <= kBuildingFloors; ++g) {
      const bool reached = !s.floor_steps[r][g].empty();
      EXPECT_EQ(v[g].state == FloorState::Skipped, !reached) << name << " step " << k << " floor " << g;
      if (!reached) {
        EXPECT_FALSE(v[g].skip_reason.empty()) << name << " floor " << g;
      }
    }
  }
}

// The skip reason of floor f for the statement whose text is `statement`.
std::string reason(const trace::Trace& t, const std::string& statement, int f) {
  const Story s = build_story(t);
  for (size_t r = 0; r < s.roots.size(); ++r) {
    if (t.spans[s.roots[r]].name != statement) continue;
    const auto v = floors_at(s, s.down_step[s.roots[r]]);
    return v[f].state == FloorState::Skipped ? v[f].skip_reason : "(reached)";
  }
  return "(no such statement)";
}

TEST(PanelsAgree, FloorsShowTheStepsSpanAndOnlyTrueSkipReasons) {
  NEED_TRACES();
  for (const char* name : {"operators", "operators_sim", "copies", "autograd", "autograd_sim", "del_cpu", "del_sim",
                           "synchronize", "error", "streams", "add_Tensor_cpu", "add_Tensor_sim0_grad"}) {
    expect_floors_agree(name, named(name));
  }
  expect_floors_agree("h200_cuda_add", named("h200_cuda_add"));
}

TEST(PanelsAgree, SkipReasonsSayWhatTheCallDid) {
  NEED_TRACES();
  auto has = [](const std::string& s, const char* what) { return s.find(what) != std::string::npos; };
  // A CPU call: floors 7 and 8 are skipped because its kernels ran on the CPU.
  const trace::Trace& ops = named("operators");
  EXPECT_TRUE(has(reason(ops, "y = x + 1", 7), "CPU")) << reason(ops, "y = x + 1", 7);
  EXPECT_TRUE(has(reason(ops, "x = descent.ones(2, 2)", 4), "factory")) << reason(ops, "x = descent.ones(2, 2)", 4);
  // del x on the CPU: no op, no factory, not "ran on the CPU"; the statement's freeing is untraced.
  const trace::Trace& del_cpu = named("del_cpu");
  for (int f = 2; f <= 8; ++f) {
    const std::string r = reason(del_cpu, "del x", f);
    EXPECT_FALSE(has(r, "factory") || has(r, "ran on the CPU") || has(r, "(reached)")) << f << ": " << r;
  }
  EXPECT_TRUE(has(reason(del_cpu, "del x", 2), "not traced")) << reason(del_cpu, "del x", 2);
  // del x on sim:0: the block goes back to the pool (floor 6), nothing is queued.
  const trace::Trace& del_sim = named("del_sim");
  EXPECT_EQ(reason(del_sim, "del x", 6), "(reached)");
  EXPECT_TRUE(has(reason(del_sim, "del x", 7), "pool")) << reason(del_sim, "del x", 7);
  EXPECT_FALSE(has(reason(del_sim, "del x", 4), "factory")) << reason(del_sim, "del x", 4);
  // synchronize: C++ was entered (floor 7), though not through an op's binding.
  const trace::Trace& sync = named("synchronize");
  const std::string r2 = reason(sync, "descent.sim.synchronize()", 2);
  EXPECT_FALSE(has(r2, "never")) << r2;
  EXPECT_TRUE(has(r2, "synchronize")) << r2;
  EXPECT_EQ(reason(sync, "descent.sim.synchronize()", 7), "(reached)");
  EXPECT_TRUE(has(reason(sync, "descent.sim.synchronize()", 8), "waited"))
      << reason(sync, "descent.sim.synchronize()", 8);
  EXPECT_TRUE(has(reason(sync, "descent.sim.synchronize()", 4), "waited"))
      << reason(sync, "descent.sim.synchronize()", 4);
  // An error: the kernel raised before it made its output.
  const trace::Trace& err = named("error");
  EXPECT_TRUE(has(reason(err, "y = x + z", 6), "raised")) << reason(err, "y = x + z", 6);
  EXPECT_TRUE(has(reason(err, "y = x + z", 7), "raised")) << reason(err, "y = x + z", 7);
  // A device call reaches 7 and 8; grad mode off still reaches floor 4.
  EXPECT_EQ(reason(named("operators_sim"), "y = x + 1", 8), "(reached)");
  EXPECT_EQ(reason(named("autograd"), "with descent.no_grad():\n    z = x * 2", 4), "(reached)");
}

}  // namespace
}  // namespace descent::ui
