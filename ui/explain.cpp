// Why a span did what it did, from the trace. See Note [Explaining a span] in explain.h.
//
// [SECTION] Reading a span
// [SECTION] Floor 1: Python
// [SECTION] Floor 2: the binding
// [SECTION] Floor 3: the dispatcher
// [SECTION] Floor 4: autograd
// [SECTION] Floor 5: kernels
// [SECTION] Floor 6: the allocators
// [SECTION] Floor 7: streams
// [SECTION] Floors 8 and 9: the launch and the device
// [SECTION] Explaining
#include "ui/explain.h"

#include <algorithm>
#include <cstdlib>
#include <string_view>

namespace descent::ui {

namespace {

using trace::Floor;
using trace::Span;

// [SECTION] Reading a span ---------------------------------------------------------

// The span and its place in the story, for the explainers below.
struct At {
  const Story& s;
  size_t i;
  const Span& sp;
  const trace::Trace& t() const { return *s.trace; }
  const Span* parent() const {
    const size_t p = s.parent_index[i];
    return p == SIZE_MAX ? nullptr : &t().spans[p];
  }
  size_t parent_index() const { return s.parent_index[i]; }
  std::span<const size_t> children() const { return s.children(i); }
  // The nearest ancestor on floor f (SIZE_MAX when none).
  size_t ancestor_on(Floor f) const {
    for (size_t p = s.parent_index[i]; p != SIZE_MAX; p = s.parent_index[p])
      if (t().spans[p].floor == f) return p;
    return SIZE_MAX;
  }
};

bool has(const Span& s, const char* key) { return s.find_arg(key) != nullptr; }

std::string str(const Span& s, const char* key, const std::string& fallback = "") {
  const trace::ArgValue* v = s.find_arg(key);
  if (!v) return fallback;
  if (const auto* x = std::get_if<std::string>(v)) return *x;
  if (const auto* x = std::get_if<int64_t>(v)) return std::to_string(*x);
  if (const auto* x = std::get_if<bool>(v)) return *x ? "true" : "false";
  return fallback;
}

int64_t num(const Span& s, const char* key, int64_t fallback = -1) {
  const trace::ArgValue* v = s.find_arg(key);
  if (!v) return fallback;
  if (const auto* x = std::get_if<int64_t>(v)) return *x;
  if (const auto* x = std::get_if<double>(v)) return static_cast<int64_t>(*x);
  if (const auto* x = std::get_if<bool>(v)) return *x;
  return fallback;
}

bool flag(const Span& s, const char* key) {
  const trace::ArgValue* v = s.find_arg(key);
  if (!v) return false;
  if (const auto* b = std::get_if<bool>(v)) return *b;
  if (const auto* x = std::get_if<int64_t>(v)) return *x != 0;
  if (const auto* x = std::get_if<std::string>(v)) return *x == "true";
  return false;
}

// 512 B, 2 MiB, 1.5 KiB.
std::string bytes_text(int64_t n) {
  if (n < 0) return "?";
  const char* units[] = {"B", "KiB", "MiB", "GiB"};
  double v = static_cast<double>(n);
  int u = 0;
  while (v >= 1024 && u < 3) v /= 1024, ++u;
  char buf[32];
  if (u == 0 || v == static_cast<double>(static_cast<int64_t>(v)))
    std::snprintf(buf, sizeof buf, "%.0f %s", v, units[u]);
  else std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  return buf;
}

std::string plural(int64_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

bool starts_with(const std::string& s, std::string_view p) { return std::string_view(s).starts_with(p); }
bool contains(const std::string& s, std::string_view p) { return s.find(p) != std::string::npos; }

// "aten::add_" -> "add_"
std::string short_op(const std::string& name) { return starts_with(name, "aten::") ? name.substr(6) : name; }
bool is_inplace_name(const std::string& name) {
  return !name.empty() && name.back() == '_' && !starts_with(short_op(name), "_");
}

// The device a key set's backend names: "CPU", "Sim", "CUDA" (the highest, as the dispatcher takes it).
std::string backend_of(const std::string& keyset) {
  if (contains(keyset, "CUDA")) return "CUDA";
  if (contains(keyset, "Sim")) return "Sim";
  if (contains(keyset, "CPU")) return "CPU";
  return "";
}

// Each key of an "A|B|C" list.
std::vector<std::string> keys_of(const std::string& keyset) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at <= keyset.size() && !keyset.empty()) {
    const size_t bar = std::min(keyset.find('|', at), keyset.size());
    out.push_back(keyset.substr(at, bar - at));
    at = bar + 1;
  }
  return out;
}

Explanation make(const char* kind, std::string title) {
  Explanation e;
  e.kind = kind;
  e.title = std::move(title);
  return e;
}

void say(Explanation& e, std::string s) { e.sentences.push_back(std::move(s)); }
void note(Explanation& e, const char* name) {
  if (std::find(e.notes.begin(), e.notes.end(), name) == e.notes.end()) e.notes.emplace_back(name);
}
void pytorch(Explanation& e, const char* file, const char* function) { e.pytorch.push_back({file, function}); }

// [SECTION] Floor 1: Python ---------------------------------------------------------

Explanation python_statement(const At& a) {
  Explanation e = make("python.statement", "Your statement: " + a.sp.name);
  int bindings = 0, functions = 0, below = 0;
  std::string below_names;  // the first two spans below floor 2 reached without the binding
  for (size_t c : a.children()) {
    const Span& k = a.t().spans[c];
    bindings += k.floor == Floor::Binding;
    functions += k.floor == Floor::Python;
    if (k.floor != Floor::Binding && k.floor != Floor::Python && below++ < 2) {
      below_names += (below_names.empty() ? "" : ", ") + k.name;
    }
  }
  say(e, "descent.tracing.run runs your code one statement at a time, each inside a floor-1 span of its own, "
         "so everything under this span happened while this line ran.");
  if (bindings + functions + below == 0) {
    std::string s = "Nothing was recorded under it: the line called no op of descent and asked no allocator for "
                    "device memory.";
    if (starts_with(a.sp.name, "del ")) {
      s += " `del` only drops a name; a CPU tensor's memory goes back to the C library's malloc untraced, so a "
           "`del` on the CPU leaves no span.";
    }
    say(e, s);
  } else {
    std::string s = "Directly under it: ";
    std::vector<std::string> parts;
    if (bindings)
      parts.push_back(plural(bindings, "call into descent._C (floor 2)", "calls into descent._C (floor 2)"));
    if (functions)
      parts.push_back(
          plural(functions, "function of the descent package in Python", "functions of the descent package in Python"));
    if (below) {
      parts.push_back(plural(below, "span of a lower floor reached without the binding",
                             "spans of lower floors reached without the binding") +
                      " (" + below_names + (below > 2 ? ", ..." : "") + ")");
    }
    for (size_t k = 0; k < parts.size(); ++k) s += (k ? k + 1 == parts.size() ? " and " : ", " : "") + parts[k];
    say(e, s + ".");
  }
  note(e, "A call as steps");
  pytorch(e, "torch/csrc/autograd/profiler_python.cpp",
          "PythonTracer: torch.profiler(with_stack=True) records Python frames");
  return e;
}

Explanation python_function(const At& a) {
  Explanation e = make("python.function", "Python: " + a.sp.name + ", a function of the descent package");
  say(e, "descent writes in Python what torch writes in Python (torch/_tensor.py, torch/cuda): this is " + a.sp.name +
             " in " + a.sp.file + ". While a trace records, a profile hook opens a floor-1 span for every call of "
             "a function of the package.");
  int bindings = 0;
  for (size_t c : a.children()) bindings += a.t().spans[c].floor == Floor::Binding;
  if (bindings) say(e, "It crossed into C++ " + plural(bindings, "time", "times") + " (the floor-2 spans under it).");
  note(e, "Span source sites");
  if (contains(a.sp.name, "backward")) {
    note(e, "How backward walks the graph");
    pytorch(e, "torch/_tensor.py", "Tensor.backward");
    pytorch(e, "torch/autograd/__init__.py", "backward");
  } else if (contains(a.sp.name, "synchronize") || starts_with(a.sp.name, "_DeviceModule") ||
             contains(a.sp.file, "_device.py")) {
    note(e, "Streams in Python");
    pytorch(e, "torch/cuda/__init__.py", "synchronize, current_stream, Stream and Event");
  } else if (contains(a.sp.file, "_formatting.py") || contains(a.sp.name, "repr") || contains(a.sp.name, "format")) {
    pytorch(e, "torch/_tensor_str.py", "_str: how a tensor prints");
  } else {
    pytorch(e, "torch/_tensor.py", "class Tensor: the methods PyTorch writes in Python");
  }
  return e;
}

// [SECTION] Floor 2: the binding ---------------------------------------------------

Explanation binding_op(const At& a) {
  const std::string overload = str(a.sp, "overload");
  const std::string python = str(a.sp, "python");
  Explanation e = make("binding.op", "The binding chose the overload " + overload);
  note(e, "Parsing arguments");  // the first Note is the one N opens
  say(e, "descent._C matched the Python arguments against the schemas of " + a.sp.name +
             "'s overloads in the op table, in order, and took the first they fit: " + overload + ".");
  if (!python.empty()) {
    std::string s = "The call came in through " + python + ", a C function of the tensor's base class generated from "
                    "the op table, as PyTorch generates its Tensor methods.";
    const bool reflected = contains(python, "__rsub__") || contains(python, "__rtruediv__") || contains(python, "__rpow__");
    if (reflected)
      s += " A reflected operator runs what torch/_tensor.py's does: 2 - x is rsub(x, 2), 2 / x is x.reciprocal() * 2, "
           "2 ** x is pow(2, x).";
    if (contains(python, "__i")) s += " An augmented assignment (x += 1) calls the in-place overload and keeps x.";
    say(e, s);
    note(e, "Tensor methods from the op table");
    if (reflected) note(e, "Reflected operators");
  }
  // A Python number among the arguments: the binding's own cpu_alloc, before the dispatcher.
  int64_t wrapped = 0, read = 0;  // cpu_allocs of 8 bytes (a number) and of other sizes (an array read)
  for (size_t c : a.children()) {
    const Span& k = a.t().spans[c];
    if (k.floor == Floor::Allocator && k.name == "cpu_alloc") (num(k, "bytes") == 8 ? wrapped : read) += 1;
  }
  if (read) {
    say(e, "An argument that was no tensor (a numpy array, in an elementwise op) was read into a new tensor, as "
           "tensor() reads it: the cpu_alloc under this span.");
  }
  if (wrapped) {
    say(e, "A Python number among the arguments became a 0-d \"wrapped number\" tensor (a C++ int64 or double in "
           "8 bytes): the cpu_alloc under this span is its memory, asked before the dispatcher was called. A "
           "wrapped number has the lowest priority in type promotion, so x + 1 keeps x's dtype.");
    note(e, "Type promotion");
    pytorch(e, "torch/csrc/utils/python_arg_parser.cpp",
            "PythonArgs::tensor_slow: a number becomes a wrapped-number tensor");
  }
  say(e, "With the arguments unwrapped into C++ values it releases the GIL and calls the dispatcher (floor 3); on "
         "the way back up it wraps the result in a Python Tensor, the same object each time for the same tensor.");
  note(e, "Parsing arguments");
  note(e, "What an argument accepts");
  pytorch(e, "torch/csrc/utils/python_arg_parser.cpp", "PythonArgParser::raw_parse: the overload whose signature fits");
  pytorch(e, python.empty() ? "tools/autograd/templates/python_torch_functions.cpp"
                            : "tools/autograd/templates/python_variable_methods.cpp",
          python.empty() ? "the generated torch.* functions" : "the generated Tensor methods (THPVariable_add, ...)");
  pytorch(e, "torch/csrc/autograd/python_variable.cpp", "THPVariable_Wrap: the result as a Python object");
  return e;
}

Explanation binding_tensor(const At&) {
  Explanation e = make("binding.tensor", "descent.tensor(data): a new tensor from Python data");
  say(e, "tensor() is not an op of the table: the binding reads the number, the nested lists or the array "
         "itself and fills a new CPU tensor, of the dtype given, else one inferred from the data (Python bools, "
         "ints and floats give bool, int64 and float32; an array keeps its dtype, or the nearest descent has). Its "
         "memory is the cpu_alloc under this span.");
  note(e, "numpy arrays descent reads");
  note(e, "What an argument accepts");
  pytorch(e, "torch/csrc/utils/tensor_new.cpp", "internal_new_from_data: torch.tensor(data)");
  return e;
}

Explanation binding_backward(const At&) {
  Explanation e = make("binding.backward", "Tensor.backward crosses into C++: _C._run_backward");
  say(e, "The Python function backward() hands the roots and their gradients to the engine here. The engine "
         "(floor 4) walks the graph from the root's grad_fn: one evaluate_function span per node it runs, each "
         "with the ops of the node's formula under it.");
  note(e, "How backward walks the graph");
  pytorch(e, "torch/csrc/autograd/python_engine.cpp", "THPEngine_run_backward");
  pytorch(e, "torch/csrc/autograd/engine.cpp", "Engine::execute");
  return e;
}

// A read of a device tensor's values (".item()", ".cpu()", "print", ...): Note [Reading a device tensor waits].
Explanation binding_read(const At& a) {
  Explanation e = make("binding.read", a.sp.name + " reads a device tensor's values on the host");
  say(e, "The values of a device tensor are not in host memory, and the kernels that compute them may still be "
         "queued. So " + a.sp.name + " crossed into C++ here and reads them through an op (aten::item -> "
         "aten::_local_scalar_dense for .item(), aten::to -> aten::_to_copy -> aten::copy_ otherwise), which queues "
         "the copy on the device's current stream behind those kernels and then waits for the stream once (the "
         "floor-7 span named " + a.sp.name + "), as PyTorch's cudaMemcpyAsync then cudaStreamSynchronize.");
  note(e, "Reading a device tensor waits");
  pytorch(e, "aten/src/ATen/native/Scalar.cpp", "item, _local_scalar_dense");
  pytorch(e, "aten/src/ATen/native/cuda/CUDAScalar.cu", "_local_scalar_dense_cuda: a copy and a wait for the stream");
  return e;
}

// [SECTION] Floor 3: the dispatcher ------------------------------------------------

// Why a key falls through for this op, in a clause.
std::string why_fell_through(const std::string& key, const std::string& op) {
  if (key == "BackendSelect") return "BackendSelect is only for factories, which have no tensor to take a device from";
  if (key == "ADInplaceOrView")
    return "ADInplaceOrView only matters to an op that writes in place or makes a view, and " + op + " does neither";
  if (starts_with(key, "Autograd")) return key + ": " + op + " has no derivative to record";
  if (starts_with(key, "Autocast")) return key + ": no autocast region is active";
  return key + " has no kernel for " + op;
}

// What the kernel chosen at `key` does next, in a sentence.
std::string what_kernel_does(const std::string& key, const At& a) {
  if (key == "BackendSelect") {
    return "BackendSelect's kernel reads the call's device argument and redispatches to that device's kernel: the "
           "redispatch under this span.";
  }
  if (key == "ADInplaceOrView") {
    return "ADInplaceOrView's kernel bumps the version counter of the tensor written in place, or records a "
           "view's base, then redispatches below itself.";
  }
  if (starts_with(key, "Autograd")) {
    return "The Autograd kernel (floor 4) decides whether to record a graph node, then redispatches below itself.";
  }
  for (size_t c : a.children()) {
    const Span& k = a.t().spans[c];
    if (k.floor == Floor::Kernels) return "The " + key + " kernel runs on floor 5.";
  }
  for (size_t c : a.children()) {
    if (a.t().spans[c].floor == Floor::Dispatch) {
      return "Its " + key + " kernel is a composite: it does its work by calling other ops, each a dispatch of its "
             "own under this span.";
    }
  }
  return "The " + key + " kernel runs.";
}

Explanation dispatch_span(const At& a) {
  const std::string keyset = str(a.sp, "keyset");
  const std::string kernel = str(a.sp, "kernel");
  const std::string fall = str(a.sp, "fallthrough");
  const bool redispatch = flag(a.sp, "redispatch");
  const Span* p = a.parent();
  Explanation e;
  if (redispatch) {
    e = make("dispatch.redispatch", "Redispatch of " + a.sp.name + ": " + (kernel.empty() ? "the next key" : kernel) +
                                        " runs next");
    std::string by =
        p ? (p->floor == Floor::Autograd ? "The Autograd kernel" : "The " + str(*p, "kernel", "previous") + " kernel")
          : std::string("A kernel");
    say(e, by + " passed the call down with the keys up to its own removed: what is left is " +
               (keyset.empty() ? std::string("the set below it") : keyset) + ", and its highest key is " +
               (kernel.empty() ? std::string("the next kernel") : kernel) + ".");
    say(e, "PyTorch's profiler records an op once, at its first dispatch (Dispatcher::call opens the RecordFunction; "
           "Dispatcher::redispatch records nothing), so its trace has one " + a.sp.name + " where descent shows two: "
           "descent shows the redispatch on purpose, to make the walk down the keys visible.");
    note(e, "Dispatch key priority");
    note(e, "A span per redispatch");
    if (p && p->floor == Floor::Autograd) note(e, "What an Autograd kernel does");
    if (p && str(*p, "kernel") == "ADInplaceOrView") note(e, "ADInplaceOrView");
    if (p && str(*p, "kernel") == "BackendSelect") note(e, "Computing the key set");
    pytorch(e, "aten/src/ATen/core/dispatch/Dispatcher.h", "Dispatcher::redispatch (no RecordFunction)");
    pytorch(e, "aten/src/ATen/record_function.h", "RecordFunction: what the profiler records per op");
  } else {
    const bool from_kernel = p && p->floor == Floor::Kernels;
    const bool in_composite = p && p->floor == Floor::Dispatch;
    const size_t evaluate = a.ancestor_on(Floor::Autograd);
    const bool in_backward = evaluate != SIZE_MAX && starts_with(a.t().spans[evaluate].name, "autograd::engine::");
    const char* kind = from_kernel                        ? "dispatch.from_kernel"
                       : in_composite                     ? "dispatch.in_composite"
                       : in_backward                      ? "dispatch.in_backward"
                       : p && p->floor == Floor::Autograd ? "dispatch.from_autograd"
                                                          : "dispatch.call";
    e = make(kind,
             "The dispatcher ran " + a.sp.name + "'s " + (kernel.empty() ? std::string("kernel") : kernel + " kernel"));
    if (from_kernel) {
      e.title = "The kernel of " + p->name + " calls " + a.sp.name + " through the dispatcher";
      if (short_op(a.sp.name) == "to") {
        // The dtype converted to: the output of the copy kernel under this call.
        std::string to_dtype;
        std::vector<size_t> todo(a.children().begin(), a.children().end());
        while (!todo.empty() && to_dtype.empty()) {
          const size_t k = todo.back();
          todo.pop_back();
          if (a.t().spans[k].floor == Floor::Kernels && has(a.t().spans[k], "dtype"))
            to_dtype = str(a.t().spans[k], "dtype");
          for (size_t c : a.s.children(k)) todo.push_back(c);
        }
        say(e, "Before its loop, the kernel of " + p->name + " converts an operand" +
                   (to_dtype.empty() ? std::string() : " to " + to_dtype) +
                   ": type promotion chose the dtype the op computes in from both operands, and an operand of "
                   "another dtype is converted first. It does so as any caller would, through the dispatcher: "
                   "aten::to.");
        // The binding above made a wrapped number for a Python operand.
        const size_t binding = a.ancestor_on(Floor::Binding);
        bool wrapped = false;
        if (binding != SIZE_MAX) {
          for (size_t c : a.s.children(binding)) {
            const Span& k = a.t().spans[c];
            wrapped |= k.floor == Floor::Allocator && k.name == "cpu_alloc";
          }
        }
        if (wrapped) {
          say(e, "Here the operand is the Python number the binding wrapped as a 0-d tensor (its cpu_alloc under "
                 "the binding): an int64 or a double in C++ until it is converted here.");
        }
        note(e, "Type promotion");
        pytorch(e, "aten/src/ATen/TensorIterator.cpp",
                "TensorIteratorBase::compute_types: operands cast to the common dtype");
        pytorch(e, "aten/src/ATen/native/TensorConversions.cpp", "to, _to_copy");
      } else {
        say(e, "The kernel of " + p->name + " calls another op, " + a.sp.name + ", through the dispatcher, as any "
               "caller would.");
      }
      if (!keyset.empty() && !contains(keyset, "Autograd") && a.ancestor_on(Floor::Autograd) != SIZE_MAX) {
        say(e, "Its key set has no Autograd key: the Autograd kernel above runs the op below autograd, with the "
               "Autograd keys excluded, so what a kernel calls records no graph.");
      }
    } else if (in_composite) {
      e.title = p->name + " is a composite: it calls " + a.sp.name;
      say(e, p->name + "'s kernel is a decomposition into other ops (CompositeImplicitAutograd): it has no loop of "
             "its own, and " + a.sp.name + " is one of the ops it calls, dispatched like any other call.");
      note(e, "Composite ops decompose");
    } else if (in_backward) {
      e.title = "Backward's formula calls " + a.sp.name;
      say(e, "The formula of " + str(a.t().spans[evaluate], "node", "the node") + " computes gradients with "
             "ordinary ops, dispatched like any other call. Grad mode is off during backward (unless create_graph), "
             "so their Autograd kernels record nothing.");
      note(e, "How backward walks the graph");
      pytorch(e, "torch/csrc/autograd/engine.cpp", "Engine::evaluate_function, call_function");
    } else if (p && p->floor == Floor::Autograd) {
      e.title = "The Autograd kernel of " + p->name + " calls " + a.sp.name;
      say(e, "While recording " + str(*p, "node", "its node") + ", the Autograd kernel of " + p->name +
             " calls " + a.sp.name + " itself" +
             (short_op(a.sp.name) == "clone" ? ": an in-place op saves a copy of self before self is written."
                                             : "."));
      note(e, "What an Autograd kernel does");
    }
    if (!keyset.empty()) {
      std::string s = "The key set is " + keyset + ": the keys of the call's tensors";
      s += backend_of(keyset).empty() ? " (it has none: a factory takes no tensor)" : "";
      s += ", plus the keys this thread includes (BackendSelect, ADInplaceOrView), minus those it excludes.";
      say(e, s);
    }
    if (!fall.empty()) {
      std::string s = "Fell through: ";
      const std::vector<std::string> keys = keys_of(fall);
      for (size_t k = 0; k < keys.size(); ++k) s += (k ? "; " : "") + why_fell_through(keys[k], a.sp.name);
      say(e, s + ". A fallthrough key is masked out before the highest key is taken, at no cost.");
    }
    if (!kernel.empty()) say(e, "The highest key left is " + kernel + ". " + what_kernel_does(kernel, a));
    note(e, "Computing the key set");
    note(e, "Dispatch key priority");
    if (kernel == "ADInplaceOrView") note(e, "ADInplaceOrView");
    pytorch(e, "aten/src/ATen/core/dispatch/Dispatcher.h", "Dispatcher::call");
    pytorch(e, "aten/src/ATen/core/dispatch/DispatchKeyExtractor.h",
            "computeDispatchKeySet: tensors' keys, included, excluded");
    if (!fall.empty()) pytorch(e, "aten/src/ATen/core/boxing/KernelFunction.h", "KernelFunction::makeFallthrough");
    if (kernel == "BackendSelect")
      pytorch(e, "aten/src/ATen/templates/RegisterBackendSelect.cpp", "the generated BackendSelect kernels");
    if (kernel == "ADInplaceOrView")
      pytorch(e, "tools/autograd/templates/ADInplaceOrViewType.cpp", "the generated ADInplaceOrView kernels");
  }
  if (const std::string c = str(a.sp, "convention"); !c.empty()) {
    say(e, c == "unboxed"
               ? "convention=unboxed: a typed C++ call, the kernel called with the arguments as they are, no "
                 "stack of IValues."
               : "convention=boxed: the arguments travel as a stack of IValues, the form every kernel accepts.");
    note(e, "Boxed and unboxed calls");
  }
  if (kernel.empty() && !redispatch) say(e, "The trace recorded no key set for this call.");
  return e;
}

// [SECTION] Floor 4: autograd -----------------------------------------------------

Explanation autograd_kernel(const At& a) {
  const std::string graph = str(a.sp, "graph");
  if (graph.empty()) {
    Explanation e = make("autograd.stopped", "The Autograd kernel of " + a.sp.name + " stopped before deciding");
    say(e, "It recorded neither graph=none nor a node: the call left this kernel by an exception before it chose.");
    if (is_inplace_name(a.sp.name)) {
      say(e, a.sp.name + " writes in place, and autograd refuses an in-place write to a leaf that requires grad "
                         "(or a view of one) here, before anything is written.");
    }
    note(e, "What an Autograd kernel does");
    note(e, "Explaining a span");
    pytorch(e, "torch/csrc/autograd/VariableTypeUtils.h", "check_inplace: a leaf that requires grad is refused");
    return e;
  }
  if (starts_with(graph, "none")) {
    const std::string reason = graph.size() > 6 ? graph.substr(6) : graph;
    Explanation e = make(contains(graph, "not differentiable") ? "autograd.not_differentiable" : "autograd.none",
                         "Autograd: no graph for " + a.sp.name + " (" + reason + ")");
    note(e, "What an Autograd kernel does");
    say(e, "Every tensor carries its device's Autograd key, so every call of an op with a derivative stops here "
           "first, whether or not anything requires grad. This kernel asks two questions: is grad mode on, and does "
           "any tensor input require grad?");
    if (contains(graph, "no input requires grad")) {
      say(e, "No input of " + a.sp.name + " requires grad, so there is nothing to record: it redispatches below "
             "autograd at once. This check is what autograd costs an op that records nothing.");
    } else if (contains(graph, "grad mode is off")) {
      const size_t up = a.ancestor_on(Floor::Autograd);
      const bool in_backward = up != SIZE_MAX && starts_with(a.t().spans[up].name, "autograd::engine::");
      say(e,
          std::string("Grad mode is off") +
              (in_backward ? ": backward runs the formulas with grad mode off (create_graph=False), so the ops "
                             "computing gradients record no graph of their own."
                           : " (descent.no_grad(), or inference mode): nothing is recorded, whatever requires grad."));
      note(e, "Grad mode is a flag, not a key");
    } else {
      say(e, a.sp.name + "'s result is bool: a comparison has no gradient, so its Autograd kernel records nothing "
             "whatever its inputs, and runs the op below autograd so that the ops its kernel calls skip autograd too.");
    }
    note(e, "What an Autograd kernel does");
    pytorch(e, "tools/autograd/templates/VariableType.cpp", "the generated VariableType kernels (Autograd keys)");
    pytorch(e, "torch/csrc/autograd/functions/utils.h", "compute_requires_grad");
    pytorch(e, "c10/core/GradMode.h", "GradMode::is_enabled");
    return e;
  }
  const std::string node = str(a.sp, "node");
  Explanation e = make("autograd.recorded", "Autograd recorded " + node + " for " + a.sp.name);
  const std::string edges = str(a.sp, "edges");
  say(e, "An input requires grad and grad mode is on, so the Autograd kernel ran " + a.sp.name +
             " below itself (the redispatch under this span) and recorded a node, " + node + " (node " +
             str(a.sp, "node_id", "?") + "), whose formula backward will run.");
  if (!edges.empty()) {
    const int64_t n = static_cast<int64_t>(std::count(edges.begin(), edges.end(), ',') + 1);
    std::string s = "Its " + plural(n, "edge", "edges") + " (" + edges + ") " + (n == 1 ? "leads" : "lead") +
                    " where its gradients go, one per tensor input: another op's node, "
                    "AccumulateGrad for a leaf that requires grad (it adds into .grad), None for an input that does "
                    "not require grad.";
    say(e, s);
  }
  const std::string saved = str(a.sp, "saved");
  if (saved == "nothing")
    say(e, "It saved nothing: the formula of " + node + " needs no input to compute its gradients.");
  else if (!saved.empty()) say(e, "It saved " + saved + ": what the formula of " + node + " reads in backward.");
  if (is_inplace_name(a.sp.name)) {
    say(e, "An in-place op moves self's history onto the new node: the old grad_fn becomes the node's edge.");
    note(e, "In-place on a view");
  }
  note(e, "What an Autograd kernel does");
  note(e, "The graph autograd records");
  note(e, "One derivative per op");
  pytorch(e, "tools/autograd/gen_variable_type.py",
          "emits each op's VariableType kernel: grad_fn, edges, saved variables");
  pytorch(e, "torch/csrc/autograd/function.h", "Node, collect_next_edges");
  pytorch(e, "torch/csrc/autograd/saved_variable.h", "SavedVariable");
  return e;
}

Explanation autograd_evaluate(const At& a) {
  const std::string node = str(a.sp, "node", a.sp.name.substr(a.sp.name.find(':') + 1));
  Explanation e = make("autograd.evaluate_function", "Backward runs " + node);
  note(e, "How backward walks the graph");
  if (node == "AccumulateGrad") {
    say(e, "The gradient of a leaf that requires grad has arrived, complete: AccumulateGrad adds it into the "
           "leaf's .grad (or stores it there, the first time).");
    pytorch(e, "torch/csrc/autograd/functions/accumulate_grad.h", "AccumulateGrad::accumulateGrad");
  } else {
    std::string s = "Every gradient this node waits for has arrived and been summed in its input buffer, so the "
                    "engine runs its formula: the ops under this span.";
    const std::string saved = str(a.sp, "saved");
    if (!saved.empty()) s += " It reads what the forward pass saved: " + saved + ".";
    say(e, s);
    say(e, "Its outputs are checked against the shapes and dtypes of the inputs they are the gradients of, then "
           "added to the input buffers of the nodes its edges lead to.");
    note(e, "Validating a node's outputs");
    pytorch(e, "torch/csrc/autograd/input_buffer.cpp", "InputBuffer::add");
  }
  say(e, "Of the ready nodes the engine runs the most recently created first, as PyTorch's ready queue does.");
  note(e, "How backward walks the graph");
  pytorch(e, "torch/csrc/autograd/engine.cpp", "Engine::evaluate_function");
  return e;
}

// [SECTION] Floor 5: kernels -------------------------------------------------------

// Notes and PyTorch places for an op's own loop.
void op_specific(Explanation& e, const std::string& op) {
  const std::string o = short_op(op);
  if (o == "sum" || o == "mean" || starts_with(o, "sum") || starts_with(o, "mean")) {
    note(e, "Cascade summation");
    pytorch(e, "aten/src/ATen/native/cpu/SumKernel.cpp", "cascade_sum");
  } else if (o == "mm" || o == "bmm" || o == "mv" || o == "dot" || o == "matmul") {
    note(e, "Register-blocked matmul");
    pytorch(e, "aten/src/ATen/native/CPUBlas.cpp", "cpublas::gemm");
  } else if (starts_with(o, "index")) {
    note(e, "Advanced indexing");
    pytorch(e, "aten/src/ATen/native/cpu/IndexKernel.cpp", "index_kernel, index_put_kernel");
  } else if (o == "rand" || o == "randn") {
    note(e, "Counter-based random numbers");
    pytorch(e, "aten/src/ATen/core/DistributionsHelper.h", "uniform_real_distribution, normal_distribution");
  } else if (starts_with(o, "max")) {
    pytorch(e, "aten/src/ATen/native/cpu/Reduce.h", "binary_kernel_reduce");
  } else if (is_inplace_name(op)) {
    note(e, "In-place ops");
  }
}

// Whether the kernel span at `a` runs a factory: its dispatch was redispatched by BackendSelect.
bool is_factory(const At& a) {
  const Span* d = a.parent();
  if (!d || d->floor != Floor::Dispatch || !flag(*d, "redispatch")) return false;
  const size_t pd = a.s.parent_index[a.parent_index()];
  return pd != SIZE_MAX && str(a.t().spans[pd], "kernel") == "BackendSelect";
}

Explanation kernel_span(const At& a) {
  const std::string variant = str(a.sp, "variant");
  const std::string dtype = str(a.sp, "dtype");
  const int64_t numel = num(a.sp, "numel");
  const std::string what =
      numel >= 0 ? plural(numel, "element", "elements") + (dtype.empty() ? "" : " of " + dtype) : "";
  // Special spans of the copy kernels (register_cpu.cpp).
  if (a.sp.name == "contiguous on the host" || a.sp.name == "contiguous on the device" ||
      a.sp.name == "cast on the device" || a.sp.name == "cast into self") {
    Explanation e = make("kernel.copy_step", "A step of a copy: " + a.sp.name);
    say(e, "A copy between devices moves one contiguous block of bytes; a strided source is made contiguous, and a "
           "change of dtype is made by a cast on one side, before or after the bytes move.");
    note(e, "Copies between devices");
    pytorch(e, "aten/src/ATen/native/Copy.cpp", "copy_impl");
    return e;
  }
  if (variant.empty()) {
    Explanation e = make("kernel.stopped", "The kernel of " + a.sp.name + " stopped before choosing a loop");
    say(e, "It recorded no variant (and no dtype or element count): the call left the kernel by an exception "
           "during its checks, before the output was made. The error says which check: shapes that do not "
           "broadcast, a dtype the op refuses, a number that does not fit.");
    note(e, "Explaining a span");
    note(e, "Type promotion");
    pytorch(e, "aten/src/ATen/TensorIterator.cpp", "TensorIteratorBase::build: the checks before the loop");
    return e;
  }
  if (starts_with(variant, "view")) {
    Explanation e = make("kernel.view", a.sp.name + " is a view: no loop, no copy");
    say(e, "The result shares the input's memory: a new tensor header with its own sizes, strides and offset over "
           "the same storage, so no memory is asked for and no element moves.");
    if (contains(variant, "no base")) {
      say(e, "It is recorded as no view (no base): the result is over memory nothing else holds (reshape's copy, "
             "a product's output), so autograd need not track the aliasing.");
    } else {
      say(e, "The result remembers its base, so that autograd can see an in-place write through it.");
      note(e, "Version counter and view base");
    }
    note(e, "Views and strides");
    pytorch(e, "aten/src/ATen/native/TensorShape.cpp", "view, transpose, as_strided");
    return e;
  }
  if (variant == "between devices" || variant == "none (same memory)") {
    Explanation e = make("kernel.copy",
                         variant == "between devices" ? "A copy between devices" : "A copy onto itself: nothing to do");
    say(e, variant == "between devices"
               ? "Source and destination are on different devices: the bytes move as one queued copy on the "
                 "device's stream (floor 7), not as a loop of this kernel."
               : "Source and destination are the same memory: the copy has nothing to move.");
    note(e, "Copies between devices");
    pytorch(e, "aten/src/ATen/native/Copy.cpp", "copy_impl");
    pytorch(e, "aten/src/ATen/native/cuda/Copy.cu", "copy_kernel_cuda: cudaMemcpyAsync on the current stream");
    return e;
  }
  if (variant == "sim" || variant == "cuda") {
    Explanation e = make("kernel.device", "The kernel of " + a.sp.name + " enqueues its loop on " +
                                              (variant == "sim" ? std::string("sim:0") : std::string("the GPU")));
    say(e,
        "One kernel body serves every device: everything before the loop (its checks, the result's shape and "
        "dtype, the output's memory from the device's caching allocator) ran here on the host, as for the CPU. "
        "Only the loop differs: it becomes one device kernel over " +
            (what.empty() ? std::string("the output") : what) +
            ", put on the current stream (floors 7 and 8), unless there is nothing to compute.");
    say(e, "The host returns without waiting for it: the kernel runs later, when the device reaches it in the queue.");
    note(e, "One kernel body, two devices");
    note(e, "Streams and the two clocks");
    pytorch(e, "aten/src/ATen/native/cuda/CUDALoops.cuh", "gpu_kernel_impl, launch_vectorized_kernel");
    op_specific(e, a.sp.name);
    return e;
  }
  // A CPU loop: reference or optimized.
  Explanation e =
      make(variant == "optimized" ? "kernel.optimized" : "kernel.reference",
           "The kernel of " + a.sp.name + " ran the " + variant + " loop" + (what.empty() ? "" : " over " + what));
  if (is_factory(a)) {
    say(e, "A factory: it made its output on the device its device argument named (BackendSelect sent the call "
           "here), with the cpu_alloc under it, and fills it.");
  } else {
    say(e, "Before the loop it checked its arguments, worked out the result's shape and dtype (broadcasting and "
           "promoting, for an op of two operands) and asked the allocator for the output (the cpu_alloc under it, "
           "when it made one).");
  }
  int threads = 0;
  for (size_t c : a.children()) {
    const Span& k = a.t().spans[c];
    if (k.name == "parallel_for") threads = std::max<int>(threads, static_cast<int>(num(k, "threads", 1)));
  }
  if (variant == "optimized") {
    std::string s = "It took the optimized loop: a contiguous fast path the compiler vectorizes";
    if (has(a.sp, "isa"))
      s += ", here with the vector unit's " + str(a.sp, "isa") + " instructions (the widest the CPU has, unless set)";
    s += threads > 1
             ? ", split over " + std::to_string(threads) + " threads of the intra-op pool (the parallel_for under it)."
             : ", on this one thread (too little work to wake the pool).";
    say(e, s);
    note(e, "Intra-op parallelism");
  } else if (is_factory(a)) {
    say(e, "A factory on the CPU has one loop, the fill, named reference: there is nothing to choose.");
  } else {
    say(e, "It took the reference loop: plain strided loops written for reading. The optimized loop was not used: "
           "it does not apply to these inputs (it wants contiguous operands of the result's shape), this op has none "
           "on the CPU, or reference kernels were asked for (descent trace --reference).");
  }
  say(e, "A CPU kernel runs right here on the calling thread: when it returns the work is done, and nothing is "
         "queued on floors 7 and 8.");
  note(e, "One op table");
  op_specific(e, a.sp.name);
  pytorch(e, "aten/src/ATen/TensorIterator.cpp", "TensorIteratorBase::build: broadcasting, promotion, the output");
  pytorch(e, "aten/src/ATen/native/DispatchStub.h",
          "DispatchStub: the loop for the CPU's vector unit (DEFAULT, AVX2, AVX512)");
  pytorch(e, "aten/src/ATen/native/cpu/Loops.h", "cpu_kernel_vec");
  return e;
}

Explanation parallel_span(const At& a) {
  if (a.sp.name == "parallel_for") {
    const int64_t threads = num(a.sp, "threads", 1);
    Explanation e = make("kernel.parallel_for", "The loop is split over " + plural(threads, "thread", "threads"));
    say(e, "The loop is long enough to be worth waking the intra-op pool: its range is cut into chunks of at least "
           "a grain of elements, run by " + plural(threads, "thread", "threads") + " (this one among them), each "
           "chunk a span on its own thread (the timeline shows them), and this thread waits for all of them.");
    note(e, "Intra-op parallelism");
    pytorch(e, "aten/src/ATen/Parallel.h", "at::parallel_for");
    return e;
  }
  Explanation e = make("kernel.parallel_chunk", "A chunk of a parallel loop: elements " + str(a.sp, "begin", "?") +
                                                    " to " + str(a.sp, "end", "?"));
  say(e, "One chunk of a loop that parallel_for split: the elements from begin up to end, run by one thread of the "
         "intra-op pool. A flow joins it to the loop that handed it out.");
  note(e, "Intra-op parallelism");
  note(e, "Flows between threads");
  pytorch(e, "aten/src/ATen/ParallelNative.cpp", "invoke_parallel");
  return e;
}

// [SECTION] Floor 6: the allocators ------------------------------------------------

Explanation cpu_alloc(const At& a) {
  const int64_t bytes = num(a.sp, "bytes");
  const Span* p = a.parent();
  Explanation e = make("allocator.cpu_alloc", "The CPU allocator: " + bytes_text(bytes));
  if (p && p->floor == Floor::Binding) {
    e.kind = "allocator.wrapped_number";
    e.title = "The CPU allocator: " + bytes_text(bytes) + " for a Python number";
    say(e, "The binding is making a 0-d tensor of a Python number (a \"wrapped number\": an int64 or a double, " +
               bytes_text(bytes) + "), before any op runs.");
    note(e, "Type promotion");
    pytorch(e, "aten/src/ATen/ScalarOps.h", "scalar_to_tensor, wrapped_scalar_tensor");
  } else if (p && p->floor == Floor::Kernels) {
    say(e, "The kernel of " + p->name + " asks for its output: " + bytes_text(bytes) +
               (has(*p, "numel") ? " for " + plural(num(*p, "numel"), "element", "elements") +
                                       (has(*p, "dtype") ? " of " + str(*p, "dtype") : "")
                                 : std::string()) + ".");
  } else if (p && p->floor == Floor::Dispatch) {
    say(e, "A kernel makes a 0-d tensor of a number argument before its loop (x ** 2 makes its exponent one, as "
           "PyTorch's wrapped numbers): " + bytes_text(bytes) + ".");
  } else if (p && p->floor == Floor::Autograd) {
    say(e, "Autograd's kernel asks for memory while recording: " + bytes_text(bytes) + ".");
  } else {
    say(e, "A tensor's memory on the host: " + bytes_text(bytes) + ".");
  }
  say(e, "Host memory needs no cache of descent's own: the C library's malloc keeps free lists and is cheap to ask. "
         "The allocator aligns each block to a cache line and counts the bytes; small blocks are taken from malloc "
         "and aligned by hand, so they come from its fast per-thread cache.");
  note(e, "Small host blocks");
  pytorch(e, "c10/core/CPUAllocator.cpp", "DefaultCPUAllocator::allocate");
  pytorch(e, "c10/core/impl/alloc_cpu.cpp", "alloc_cpu");
  return e;
}

Explanation caching_alloc(const At& a) {
  const int64_t bytes = num(a.sp, "bytes"), block = num(a.sp, "block");
  const std::string pool = str(a.sp, "pool"), stream = str(a.sp, "stream", "?");
  const bool hit = flag(a.sp, "hit"), split = flag(a.sp, "split");
  if (!has(a.sp, "hit")) {
    Explanation e = make("allocator.caching_alloc", "The caching allocator: " + bytes_text(bytes));
    say(e, "A device tensor's memory comes from the device's caching allocator; this span recorded only the size.");
    note(e, "Caching allocator policy");
    pytorch(e, "c10/cuda/CUDACachingAllocator.cpp", "DeviceCachingAllocator::malloc");
    return e;
  }
  int64_t segment = -1;
  for (size_t c : a.children()) {
    if (a.t().spans[c].name == "raw_malloc") segment = num(a.t().spans[c], "bytes");
  }
  Explanation e =
      make(hit ? "allocator.cache_hit" : "allocator.cache_miss",
           std::string(hit ? "Cache hit: " : "Cache miss: ") + bytes_text(bytes) + " from the " + pool + " pool");
  say(e, "The request, rounded up to a multiple of 512 B, is " + bytes_text(bytes) + ", which puts it in the " + pool +
             " pool (" + (pool == "small" ? "1 MiB or less" : "over 1 MiB") + "); the search is for the smallest "
             "free block of that pool and of stream " + stream + " that is large enough.");
  if (hit) {
    say(e, "One was found: the device was not asked for anything, which is what makes a cached allocation cost "
           "about as little as a CPU one.");
  } else {
    say(e, "None was free, so the allocator asked the device for a new segment" +
               (segment >= 0 ? " of " + bytes_text(segment) : std::string()) +
               " (the raw_malloc under this span: cudaMalloc, or the simulated device's host arena)" +
               (segment > bytes ? ", larger than the request, so that later requests are served from the rest."
                                : ": a large request gets a segment of its own size, rounded up to 2 MiB."));
  }
  if (split) {
    say(e, "The block was larger than the request, so it was split: this tensor takes " + bytes_text(block) +
               " and the remainder stays free in the pool for the next request.");
  } else {
    say(e, "The block was handed out whole (" + bytes_text(block) + "): what would be left over is too small to keep "
           "as a block of its own.");
  }
  note(e, "Caching allocator policy");
  if (hit) note(e, "The hit path");
  pytorch(e, "c10/cuda/CUDACachingAllocator.cpp", hit ? "DeviceCachingAllocator::malloc, get_free_block, should_split"
                                                      : "DeviceCachingAllocator::malloc, alloc_block");
  return e;
}

Explanation allocator_other(const At& a) {
  const std::string& n = a.sp.name;
  Explanation e;
  if (n == "raw_malloc") {
    const int64_t bytes = num(a.sp, "bytes");
    e = make("allocator.raw_malloc", "A new segment from the device: " + bytes_text(bytes));
    say(e, "Asking the device itself (cudaMalloc, or the simulated device's host arena) is slow and synchronizes "
           "the device, so it asks for whole segments: 2 MiB for the small pool, 20 MiB for a large request under "
           "10 MiB, a large one rounded up to 2 MiB. The segment becomes the pool's blocks.");
    note(e, "Caching allocator policy");
    pytorch(e, "c10/cuda/CUDACachingAllocator.cpp", "DeviceCachingAllocator::alloc_block (cudaMalloc)");
  } else if (n == "caching_free") {
    const int64_t waits = num(a.sp, "waits_on", 0);
    e = make("allocator.free", "A block goes back to the pool: " + bytes_text(num(a.sp, "block")));
    const Span* p = a.parent();
    const std::string who = p && p->floor == Floor::Python
                                ? "The statement dropped the last reference to a device tensor"
                                : "The last reference to a device tensor went away";
    if (waits > 0) {
      say(e, who + ", but its block was also used on " + plural(waits, "other stream", "other streams") +
                 " (record_stream): an event is recorded on each, and the block returns to the free pool of stream " +
                 str(a.sp, "stream", "?") + " only once they have passed, since a kernel there may still read it.");
      note(e, "Deferred frees");
    } else {
      say(e, who + ": its block returns to the free pool of stream " + str(a.sp, "stream", "?") +
                 ", merged with free neighbours, for the next request.");
    }
    say(e, "Nothing is given back to the device: that is empty_cache's job.");
    note(e, "Caching allocator policy");
    pytorch(e, "c10/cuda/CUDACachingAllocator.cpp", "DeviceCachingAllocator::free, free_block");
  } else if (n == "process_events") {
    e = make("allocator.process_events", "Deferred frees whose events have passed: " + str(a.sp, "completed", "?"));
    say(e, "Before searching the pool, the allocator returns the blocks whose other streams have passed the events "
           "recorded when they were freed; " + str(a.sp, "completed", "?") + " completed now.");
    note(e, "Deferred frees");
    pytorch(e, "c10/cuda/CUDACachingAllocator.cpp", "DeviceCachingAllocator::process_events");
  } else if (n == "record_stream") {
    e = make("allocator.record_stream", "A block is marked as used on stream " + str(a.sp, "stream", "?"));
    say(e, "record_stream tells the allocator that another stream uses this tensor, so that its free waits for "
           "that stream's work instead of handing the block out while a kernel may still read it.");
    note(e, "Deferred frees");
    pytorch(e, "c10/cuda/CUDACachingAllocator.cpp", "DeviceCachingAllocator::recordStream");
  } else if (n == "empty_cache") {
    e = make("allocator.empty_cache",
             "empty_cache: " + plural(num(a.sp, "segments", 0), "segment", "segments") + " given back");
    say(e, "Every cached segment with no block in use is given back to the device (raw_free); a segment with any "
           "block still allocated stays.");
    note(e, "Caching allocator policy");
    pytorch(e, "c10/cuda/CUDACachingAllocator.cpp", "DeviceCachingAllocator::emptyCache");
  } else if (n == "raw_free") {
    e = make("allocator.raw_free", "A segment goes back to the device: " + bytes_text(num(a.sp, "bytes")));
    say(e, "A whole free segment is returned to the device (cudaFree, or the simulated device's arena).");
    note(e, "Caching allocator policy");
    pytorch(e, "c10/cuda/CUDACachingAllocator.cpp", "DeviceCachingAllocator::release_block (cudaFree)");
  } else if (n == "synchronize_device") {
    e = make("allocator.synchronize", "Out of memory: the allocator waits for every pending free");
    say(e, "The device refused a new segment, so the allocator waits for the device, completes every deferred free, "
           "releases the cached segments and tries once more before raising OutOfMemoryError.");
    note(e, "Caching allocator policy");
    pytorch(e, "c10/cuda/CUDACachingAllocator.cpp", "synchronize_and_free_events");
  } else if (n == "pinned_alloc") {
    e = make("allocator.pinned",
             "Pinned host memory: " + bytes_text(num(a.sp, "bytes")) + " (" + str(a.sp, "api") + ")");
    say(e, "Page-locked host memory, which the device can copy from without staging it first, so a copy from it "
           "can be asynchronous for the host.");
    if (str(a.sp, "api") != "cudaHostAlloc") {
      say(e, "With no GPU usable it is ordinary aligned host memory marked pinned: a copy from it to sim:0 reads "
             "the bytes when the copy runs, as a GPU would.");
    }
    note(e, "Pinned host memory");
    pytorch(e, "aten/src/ATen/cuda/CachingHostAllocator.cpp", "CachingHostAllocator");
  }
  return e;
}

// [SECTION] Floor 7: streams -------------------------------------------------------

std::string depth_clause(int64_t depth) {
  if (depth < 0) return "";
  if (depth == 0) return " The device had already taken it by the time the queue was read (depth 0).";
  if (depth == 1) return " The queue held only this work: nothing ahead of it, the device can start at once.";
  return " The queue held " + std::to_string(depth) + " items: this one and " + std::to_string(depth - 1) +
         " ahead of it, which the device runs first.";
}

Explanation streams_span(const At& a) {
  const std::string& n = a.sp.name;
  const std::string api = str(a.sp, "api");
  const std::string stream = str(a.sp, "stream");
  Explanation e;
  if (n == "enqueue") {
    e = make("streams.enqueue", "Queued on stream " + (stream.empty() ? std::string("?") : stream));
    say(e, "A device op is not run, it is queued: the launch below puts the kernel on stream " + stream +
               ", this thread's current stream for the device, a first-in first-out queue the device drains on its "
               "own." + depth_clause(num(a.sp, "queue_depth")));
    say(e, "The host returns as soon as the work is queued; the kernel runs later, on the device's clock.");
    note(e, "Streams and the two clocks");
    note(e, "The queue at time t");
    pytorch(e, "c10/cuda/CUDAStream.h", "getCurrentCUDAStream");
  } else if (n == "simMemcpyAsync" || n == "cudaMemcpyAsync") {
    e = make("streams.copy", "A copy of " + bytes_text(num(a.sp, "bytes")) + " queued on stream " + stream);
    note(e, "Copies between devices");
    say(e,
        "The bytes move as one piece of work on the stream, in order with the kernels queued before it, with no "
        "kernel launch (" +
            n + "); the device's Memcpy span, joined by correlation " + str(a.sp, "correlation", "?") +
            ", shows when it really ran." + depth_clause(num(a.sp, "queue_depth")));
    if (has(a.sp, "pinned")) {
      say(e, flag(a.sp, "pinned") ? "The host memory is pinned, so the copy need not be staged."
                                  : "The host memory is pageable, so the copy is staged through a pinned buffer.");
      note(e, "Pinned host memory");
    }
    note(e, "Copies between devices");
    pytorch(e, "aten/src/ATen/native/cuda/Copy.cu", "copy_kernel_cuda: cudaMemcpyAsync on the current stream");
  } else if (n == "event_record") {
    e = make("streams.event_record", "An event is recorded on stream " + stream);
    say(e, "An event is a marker put in the stream's queue: it passes when the device reaches it, after the work "
           "queued before it. The host does not wait.");
    note(e, "Streams in Python");
    pytorch(e, "aten/src/ATen/cuda/CUDAEvent.h", "CUDAEvent::record");
  } else if (n == "stream_wait_event") {
    e = make("streams.wait_event", "Stream " + stream + " waits for an event (the host does not)");
    say(e, "Work queued on stream " + stream + " from now on starts only after the event has passed on its own "
           "stream: one stream waits for another on the device, and the host goes on.");
    note(e, "Streams in Python");
    pytorch(e, "aten/src/ATen/cuda/CUDAEvent.h", "CUDAEvent::block");
  } else if (n == "event_synchronize") {
    e = make("streams.event_synchronize", "The host waits for an event on stream " + stream);
    say(e, "The host stops until the device has passed the event, that is until the work queued before it on its "
           "stream has run.");
    note(e, "Streams in Python");
    pytorch(e, "aten/src/ATen/cuda/CUDAEvent.h", "CUDAEvent::synchronize");
  } else if (contains(api, "ynchronize")) {
    const bool device = has(a.sp, "device") && !has(a.sp, "stream");
    const bool end = n == trace::kEndOfRecordingWait;
    const bool read = !end && n != "synchronize" && n != "stream_synchronize";
    e = make(end ? "streams.end_of_recording" : read ? "streams.read_wait" : "streams.synchronize",
             "The host waits: " + api + (device ? " on " + str(a.sp, "device") : " on stream " + stream));
    if (end) {
      say(e, "The recording itself waits here for the work queued on the device, so that every kernel's span is in "
             "the trace. It belongs to the recording, not to your code: warm medians leave it out.");
      note(e, "Warm medians");
    } else if (read) {
      say(e, n + " needs the tensor's values on the host, so the host must wait for the kernels that compute them.");
      note(e, "Reading a device tensor waits");
    } else if (a.parent() && a.parent()->floor == Floor::Kernels) {
      say(e, "The kernel of " + a.parent()->name + " copies to the host: the bytes can be read only once the copy "
             "queued on the stream has run, so it waits for the stream here.");
      note(e, "Copies between devices");
    }
    say(e, std::string("The host stops until ") +
               (device ? "every stream of " + str(a.sp, "device") + " is empty" : "stream " + stream + " is empty") +
               (!has(a.sp, "queue_depth")      ? std::string(".")
                : num(a.sp, "queue_depth") == 0 ? std::string(": nothing was queued when it asked, so it did not wait.")
                                                : ": " + plural(num(a.sp, "queue_depth"), "item was", "items were") +
                                                      " still queued when it asked."));
    if (num(a.sp, "queue_depth") != 0) {
      say(e, "This is where the device's time shows up on the host: until now the host only queued work.");
    }
    note(e, "Streams and the two clocks");
    pytorch(e, device ? "c10/cuda/CUDAFunctions.cpp" : "c10/cuda/CUDAStream.h",
            device ? "device_synchronize (cudaDeviceSynchronize)" : "CUDAStream::synchronize (cudaStreamSynchronize)");
  }
  return e;
}

// [SECTION] Floors 8 and 9: the launch and the device -----------------------------

// The device span whose correlation is the launch's, and the reverse.
size_t correlated(const trace::Trace& t, size_t i, bool device_side) {
  const int64_t c = num(t.spans[i], "correlation");
  if (c <= 0) return SIZE_MAX;
  for (size_t k = 0; k < t.spans.size(); ++k) {
    if (k == i || (t.spans[k].floor == Floor::Device) != device_side) continue;
    if (num(t.spans[k], "correlation") == c) return k;
  }
  return SIZE_MAX;
}

Explanation launch_span(const At& a) {
  const std::string kernel = str(a.sp, "kernel");
  const int64_t grid = num(a.sp, "grid", 1) * num(a.sp, "grid_y", 1) * num(a.sp, "grid_z", 1);
  const int64_t block = num(a.sp, "block", 0);
  const bool cuda = starts_with(a.sp.name, "cuda");
  Explanation e = make("launch", "Launch " + kernel + ": " + plural(grid, "block", "blocks") + " of " +
                                     plural(block, "thread", "threads"));
  note(e, "What a launch is");
  std::string s = "The kernel is launched over a grid of " + plural(grid, "block", "blocks") + " of " +
                  std::to_string(block) + " threads each (" + std::to_string(grid * block) + " threads";
  const size_t k = a.ancestor_on(Floor::Kernels);
  if (k != SIZE_MAX && has(a.t().spans[k], "numel")) {
    s += " for " + plural(num(a.t().spans[k], "numel"), "element", "elements") + " of " + a.t().spans[k].name;
  }
  s += "), " + std::to_string(std::max<int64_t>(0, num(a.sp, "shared_bytes", 0))) + " B of shared memory per block, "
       "on stream " + str(a.sp, "stream", "?") + ".";
  say(e, s);
  if (cuda) {
    say(e, "cudaLaunchKernel returns as soon as the launch is queued; the GPU runs the kernel when its stream gets "
           "there. CUPTI reports when it really ran, joined to this span by correlation " +
               str(a.sp, "correlation", "?") + ".");
    note(e, "A launch's host cost");
  } else {
    say(e, "On the simulated device the launch hands the same kernel body to the stream's worker thread, which runs "
           "it block by block over the grid when it reaches it; correlation " + str(a.sp, "correlation", "?") +
           " joins this span to the device's.");
    note(e, "The simulated device");
  }
  note(e, "What a launch is");
  pytorch(e, "aten/src/ATen/native/cuda/CUDALoops.cuh",
          "launch_vectorized_kernel: kernel<<<grid, num_threads, 0, stream>>>");
  pytorch(e, "c10/cuda/CUDAException.h", "C10_CUDA_KERNEL_LAUNCH_CHECK");
  return e;
}

Explanation device_span(const At& a) {
  const bool copy = str(a.sp, "work") == "memcpy" || starts_with(a.sp.name, "Memcpy");
  const bool memset = starts_with(a.sp.name, "Memset");
  const std::string device = str(a.sp, "device");
  Explanation e = make(copy ? "device.memcpy" : memset ? "device.memset" : "device.kernel",
                       (copy || memset ? "The device copies: " : "The device runs ") + a.sp.name);
  std::string s = "This is the device's own clock: the work ran on " +
                  (device.empty() ? std::string("the device") : device) + " stream " + str(a.sp, "stream", "?") +
                  " for " + trace::format_duration(a.sp.duration_ns());
  const size_t launch = correlated(a.t(), a.i, false);
  if (launch != SIZE_MAX) {
    const int64_t gap = a.sp.start_ns - a.t().spans[launch].start_ns;
    s += ", starting " + trace::format_duration(gap) + " after the host began to queue it (" +
         a.t().spans[launch].name + ")";
  }
  say(e, s + ". The gap is the queue: the host had moved on long before.");
  note(e, "Device spans");
  note(e, "The queue at time t");
  if (contains(device, "sim")) note(e, "The simulated device");
  else if (contains(device, "cuda")) note(e, "Device activity from CUPTI");
  if (copy) note(e, "Copies between devices");
  pytorch(e, "torch/csrc/profiler/kineto_shim.cpp",
          "the profiler's bridge to Kineto, which reads CUPTI's activity records");
  return e;
}

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
    case Floor::Python: return sp.file.empty() ? python_statement(a) : python_function(a);
    case Floor::Binding:
      if (has(sp, "overload")) return binding_op(a);
      if (sp.name == "tensor") return binding_tensor(a);
      if (sp.name == "_run_backward") return binding_backward(a);
      if (read_waits_under(a, a.i, sp.name)) return binding_read(a);  // a floor-7 wait of the same name under it
      return {};
    case Floor::Dispatch: return dispatch_span(a);
    case Floor::Autograd:
      return starts_with(sp.name, "autograd::engine::evaluate_function") ? autograd_evaluate(a) : autograd_kernel(a);
    case Floor::Kernels: return starts_with(sp.name, "parallel_for") ? parallel_span(a) : kernel_span(a);
    case Floor::Allocator:
      if (sp.name == "cpu_alloc") return cpu_alloc(a);
      if (sp.name == "caching_alloc") return caching_alloc(a);
      return allocator_other(a);
    case Floor::Streams: return streams_span(a);
    case Floor::Launch: return has(sp, "kernel") ? launch_span(a) : Explanation{};
    case Floor::Device: return device_span(a);
    default: return {};
  }
}

}  // namespace

SourcePlace decided_at(const trace::Span& s) {
  const std::string v = str(s, trace::kDecidedAt);
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
  Explanation e = explain_at(At{s, i, s.trace->spans[i]});
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
