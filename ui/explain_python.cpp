// Why a span of floors 1 and 2 did what it did: a line of the user's
// code, a function of the descent package, the binding's call of an op. See Note [Explaining a span] in explain.h; the reading of a
// span they share is explain_span.h.
//
// [SECTION] Floor 1: Python
// [SECTION] Floor 2: the binding
#include "ui/explain_span.h"

namespace descent::ui::explaining {

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
  say(e,
      "descent.tracing.run runs your code one statement at a time, each inside a floor-1 span of its own, "
      "so everything under this span happened while this line ran.");
  if (bindings + functions + below == 0) {
    std::string s =
        "Nothing was recorded under it: the line called no op of descent and asked no allocator for "
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
             " in " + a.sp.file +
             ". While a trace records, a profile hook opens a floor-1 span for every call of "
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
    std::string s = "The call came in through " + python +
                    ", a C function of the tensor's base class generated from "
                    "the op table, as PyTorch generates its Tensor methods.";
    const bool reflected =
        contains(python, "__rsub__") || contains(python, "__rtruediv__") || contains(python, "__rpow__");
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
    say(e,
        "An argument that was no tensor (a numpy array, in an elementwise op) was read into a new tensor, as "
        "tensor() reads it: the cpu_alloc under this span.");
  }
  if (wrapped) {
    say(e,
        "A Python number among the arguments became a 0-d \"wrapped number\" tensor (a C++ int64 or double in "
        "8 bytes): the cpu_alloc under this span is its memory, asked before the dispatcher was called. A "
        "wrapped number has the lowest priority in type promotion, so x + 1 keeps x's dtype.");
    note(e, "Type promotion");
    pytorch(e, "torch/csrc/utils/python_arg_parser.cpp",
            "PythonArgs::tensor_slow: a number becomes a wrapped-number tensor");
  }
  say(e,
      "With the arguments unwrapped into C++ values it releases the GIL and calls the dispatcher (floor 3); on "
      "the way back up it wraps the result in a Python Tensor, the same object each time for the same tensor.");
  note(e, "Parsing arguments");
  note(e, "What an argument accepts");
  pytorch(e, "torch/csrc/utils/python_arg_parser.cpp", "PythonArgParser::raw_parse: the overload whose signature fits");
  pytorch(e,
          python.empty() ? "tools/autograd/templates/python_torch_functions.cpp"
                         : "tools/autograd/templates/python_variable_methods.cpp",
          python.empty() ? "the generated torch.* functions" : "the generated Tensor methods (THPVariable_add, ...)");
  pytorch(e, "torch/csrc/autograd/python_variable.cpp", "THPVariable_Wrap: the result as a Python object");
  return e;
}

Explanation binding_tensor(const At&) {
  Explanation e = make("binding.tensor", "descent.tensor(data): a new tensor from Python data");
  say(e,
      "tensor() is not an op of the table: the binding reads the number, the nested lists or the array "
      "itself and fills a new CPU tensor, of the dtype given, else one inferred from the data (Python bools, "
      "ints and floats give bool, int64 and float32; an array keeps its dtype, or the nearest descent has). Its "
      "memory is the cpu_alloc under this span.");
  note(e, "numpy arrays descent reads");
  note(e, "What an argument accepts");
  pytorch(e, "torch/csrc/utils/tensor_new.cpp", "internal_new_from_data: torch.tensor(data)");
  return e;
}

Explanation binding_index(const At& a) {
  const bool write = a.sp.name == "__setitem__";
  Explanation e =
      make("binding.index", write ? "x[i] = v: the index and the value read in C" : "x[i]: the index read in C");
  std::vector<std::string> ops;
  for (size_t c : a.children()) {
    const Span& k = a.t().spans[c];
    if (k.floor == Floor::Dispatch) ops.push_back(k.name);
  }
  std::string list;
  for (size_t k = 0; k < ops.size(); ++k) list += (k ? ", " : "") + ops[k];
  say(e, "Indexing is no op of the table: Tensor's mapping slot (a C function, as PyTorch's THPVariable_" +
             std::string(write ? "setitem" : "getitem") +
             ") reads the index left to right and calls one op per part: select for an int, slice for a slice "
             "that is not `:`, unsqueeze for None; integer and bool tensors (and lists) are left for one " +
             std::string(write ? "aten::index_put_" : "aten::index") + " call after the views, which copies.");
  if (write)
    say(e,
        "A Python number becomes a 0-d CPU tensor of x's dtype (no op makes it: its cpu_alloc is under this "
        "span) and goes through aten::lift_fresh; then copy_, or fill_ for a 0-d value, writes it into the view.");
  say(e, ops.empty() ? std::string("No op ran here.") : "The ops it ran, in order: " + list + ".");
  note(e, "Indexing in C");
  if (write) note(e, "x[i] = v as PyTorch writes it");
  note(e, "Advanced indexing");
  pytorch(e, "torch/csrc/autograd/python_variable_indexing.cpp",
          write ? "THPVariable_setitem, valueToTensor" : "THPVariable_getitem");
  pytorch(e, "aten/src/ATen/TensorIndexing.h", "applySlicing, get_item, set_item, copy_to");
  return e;
}

Explanation binding_backward(const At&) {
  Explanation e = make("binding.backward", "Tensor.backward crosses into C++: _C._run_backward");
  say(e,
      "The Python function backward() hands the roots and their gradients to the engine here. The engine "
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
  say(e,
      "The values of a device tensor are not in host memory, and the kernels that compute them may still be "
      "queued. So " +
          a.sp.name +
          " crossed into C++ here and reads them through an op (aten::item -> "
          "aten::_local_scalar_dense for .item(), aten::to -> aten::_to_copy -> aten::copy_ otherwise), which queues "
          "the copy on the device's current stream behind those kernels and then waits for the stream once (the "
          "floor-7 span named " +
          a.sp.name + "), as PyTorch's cudaMemcpyAsync then cudaStreamSynchronize.");
  note(e, "Reading a device tensor waits");
  pytorch(e, "aten/src/ATen/native/Scalar.cpp", "item, _local_scalar_dense");
  pytorch(e, "aten/src/ATen/native/cuda/CUDAScalar.cu", "_local_scalar_dense_cuda: a copy and a wait for the stream");
  return e;
}

}  // namespace descent::ui::explaining
