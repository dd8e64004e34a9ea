// Why a span of floors 3 and 4 did what it did: the dispatcher's key set,
// what fell through and the kernel it picked; autograd's node, or why none. See Note [Explaining a span] in explain.h; the reading of a
// span they share is explain_span.h.
//
// [SECTION] Floor 3: the dispatcher
// [SECTION] Floor 4: autograd
#include "ui/explain_span.h"

namespace descent::ui::explaining {

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
      return "Its " + key +
             " kernel is a composite: it does its work by calling other ops, each a dispatch of its "
             "own under this span.";
    }
  }
  return "The " + key + " kernel runs.";
}

// A kernel passing the call below itself, with the keys up to its own
// removed; and why PyTorch's profiler shows one span where descent shows two.
Explanation redispatch_span(const At& a, const std::string& keyset, const std::string& kernel) {
  const Span* p = a.parent();
  Explanation e = make("dispatch.redispatch",
                       "Redispatch of " + a.sp.name + ": " + (kernel.empty() ? "the next key" : kernel) + " runs next");
  std::string by =
      p ? (p->floor == Floor::Autograd ? "The Autograd kernel" : "The " + str(*p, "kernel", "previous") + " kernel")
        : std::string("A kernel");
  say(e, by + " passed the call down with the keys up to its own removed: what is left is " +
             (keyset.empty() ? std::string("the set below it") : keyset) + ", and its highest key is " +
             (kernel.empty() ? std::string("the next kernel") : kernel) + ".");
  say(e,
      "PyTorch's profiler records an op once, at its first dispatch (Dispatcher::call opens the RecordFunction; "
      "Dispatcher::redispatch records nothing), so its trace has one " +
          a.sp.name +
          " where descent shows two: "
          "descent shows the redispatch on purpose, to make the walk down the keys visible.");
  note(e, "Dispatch key priority");
  note(e, "A span per redispatch");
  if (p && p->floor == Floor::Autograd) note(e, "What an Autograd kernel does");
  if (p && str(*p, "kernel") == "ADInplaceOrView") note(e, "ADInplaceOrView");
  if (p && str(*p, "kernel") == "BackendSelect") note(e, "Computing the key set");
  pytorch(e, "aten/src/ATen/core/dispatch/Dispatcher.h", "Dispatcher::redispatch (no RecordFunction)");
  pytorch(e, "aten/src/ATen/record_function.h", "RecordFunction: what the profiler records per op");
  return e;
}

// The kernel of op `p` calling another op through the dispatcher, as any
// caller would: aten::to is an operand changing dtype before the loop.
void called_from_kernel(const At& a, const Span& p, const std::string& keyset, Explanation& e) {
  e.title = "The kernel of " + p.name + " calls " + a.sp.name + " through the dispatcher";
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
    say(e, "Before its loop, the kernel of " + p.name + " converts an operand" +
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
      say(e,
          "Here the operand is the Python number the binding wrapped as a 0-d tensor (its cpu_alloc under "
          "the binding): an int64 or a double in C++ until it is converted here.");
    }
    note(e, "Type promotion");
    pytorch(e, "aten/src/ATen/TensorIterator.cpp",
            "TensorIteratorBase::compute_types: operands cast to the common dtype");
    pytorch(e, "aten/src/ATen/native/TensorConversions.cpp", "to, _to_copy");
  } else {
    say(e, "The kernel of " + p.name + " calls another op, " + a.sp.name +
               ", through the dispatcher, as any "
               "caller would.");
  }
  if (!keyset.empty() && !contains(keyset, "Autograd") && a.ancestor_on(Floor::Autograd) != SIZE_MAX) {
    say(e,
        "Its key set has no Autograd key: the Autograd kernel above runs the op below autograd, with the "
        "Autograd keys excluded, so what a kernel calls records no graph.");
  }
}

// What every first dispatch decided: the key set, what fell through, the
// highest key left and what its kernel does next.
void keys_and_kernel(const At& a, const std::string& keyset, const std::string& kernel, const std::string& fall,
                     Explanation& e) {
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

// A first dispatch, by who called: a kernel, a composite, backward's
// formula, an Autograd kernel, or the binding.
Explanation call_span(const At& a, const std::string& keyset, const std::string& kernel, const std::string& fall) {
  const Span* p = a.parent();
  const bool from_kernel = p && p->floor == Floor::Kernels;
  const bool in_composite = p && p->floor == Floor::Dispatch;
  const size_t evaluate = a.ancestor_on(Floor::Autograd);
  const bool in_backward = evaluate != SIZE_MAX && starts_with(a.t().spans[evaluate].name, "autograd::engine::");
  const char* kind = from_kernel                        ? "dispatch.from_kernel"
                     : in_composite                     ? "dispatch.in_composite"
                     : in_backward                      ? "dispatch.in_backward"
                     : p && p->floor == Floor::Autograd ? "dispatch.from_autograd"
                                                        : "dispatch.call";
  Explanation e = make(
      kind, "The dispatcher ran " + a.sp.name + "'s " + (kernel.empty() ? std::string("kernel") : kernel + " kernel"));
  if (from_kernel) {
    called_from_kernel(a, *p, keyset, e);
  } else if (in_composite) {
    e.title = p->name + " is a composite: it calls " + a.sp.name;
    say(e, p->name +
               "'s kernel is a decomposition into other ops (CompositeImplicitAutograd): it has no loop of "
               "its own, and " +
               a.sp.name + " is one of the ops it calls, dispatched like any other call.");
    note(e, "Composite ops decompose");
  } else if (in_backward) {
    e.title = "Backward's formula calls " + a.sp.name;
    say(e, "The formula of " + str(a.t().spans[evaluate], "node", "the node") +
               " computes gradients with "
               "ordinary ops, dispatched like any other call. Grad mode is off during backward (unless create_graph), "
               "so their Autograd kernels record nothing.");
    note(e, "How backward walks the graph");
    pytorch(e, "torch/csrc/autograd/engine.cpp", "Engine::evaluate_function, call_function");
  } else if (p && p->floor == Floor::Autograd) {
    e.title = "The Autograd kernel of " + p->name + " calls " + a.sp.name;
    say(e,
        "While recording " + str(*p, "node", "its node") + ", the Autograd kernel of " + p->name + " calls " +
            a.sp.name + " itself" +
            (short_op(a.sp.name) == "clone" ? ": an in-place op saves a copy of self before self is written." : "."));
    note(e, "What an Autograd kernel does");
  }
  keys_and_kernel(a, keyset, kernel, fall, e);
  return e;
}

Explanation dispatch_span(const At& a) {
  const std::string keyset = str(a.sp, "keyset");
  const std::string kernel = str(a.sp, "kernel");
  const std::string fall = str(a.sp, "fallthrough");
  const bool redispatch = flag(a.sp, "redispatch");
  Explanation e = redispatch ? redispatch_span(a, keyset, kernel) : call_span(a, keyset, kernel, fall);
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
      say(e, a.sp.name +
                 " writes in place, and autograd refuses an in-place write to a leaf that requires grad "
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
    say(e,
        "Every tensor carries its device's Autograd key, so every call of an op with a derivative stops here "
        "first, whether or not anything requires grad. This kernel asks two questions: is grad mode on, and does "
        "any tensor input require grad?");
    if (contains(graph, "no input requires grad")) {
      say(e, "No input of " + a.sp.name +
                 " requires grad, so there is nothing to record: it redispatches below "
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
      say(e, a.sp.name +
                 "'s result is bool: a comparison has no gradient, so its Autograd kernel records nothing "
                 "whatever its inputs, and runs the op below autograd so that the ops its kernel calls skip autograd "
                 "too.");
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
  else if (!saved.empty())
    say(e, "It saved " + saved + ": what the formula of " + node + " reads in backward.");
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
    say(e,
        "The gradient of a leaf that requires grad has arrived, complete: AccumulateGrad adds it into the "
        "leaf's .grad (or stores it there, the first time).");
    pytorch(e, "torch/csrc/autograd/functions/accumulate_grad.h", "AccumulateGrad::accumulateGrad");
  } else {
    std::string s =
        "Every gradient this node waits for has arrived and been summed in its input buffer, so the "
        "engine runs its formula: the ops under this span.";
    const std::string saved = str(a.sp, "saved");
    if (!saved.empty()) s += " It reads what the forward pass saved: " + saved + ".";
    say(e, s);
    say(e,
        "Its outputs are checked against the shapes and dtypes of the inputs they are the gradients of, then "
        "added to the input buffers of the nodes its edges lead to.");
    note(e, "Validating a node's outputs");
    pytorch(e, "torch/csrc/autograd/input_buffer.cpp", "InputBuffer::add");
  }
  say(e, "Of the ready nodes the engine runs the most recently created first, as PyTorch's ready queue does.");
  note(e, "How backward walks the graph");
  pytorch(e, "torch/csrc/autograd/engine.cpp", "Engine::evaluate_function");
  return e;
}

}  // namespace descent::ui::explaining
