// Floor 4: the backward engine.
//
// [SECTION] Validating a node's outputs
// [SECTION] The graph task and the threads that work it
// [SECTION] Running the graph
// [SECTION] backward and grad
//
// Note [How backward walks the graph]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// loss.backward() starts at the loss's grad_fn, its input buffer holding the
// gradient of the loss (ones for a one-element loss). With several roots
// (autograd.backward([a, b])) a GraphRoot node comes first, whose outputs
// are their gradients and whose edges lead to their grad_fns; PyTorch skips
// that dummy root when there is one, and so does descent. The engine works
// as PyTorch's does (Note [Which thread runs a node] says on which thread):
//   1. It walks the graph once from the root and counts, for every node,
//      how many edges point at it: the gradients it must wait for.
//   2. It keeps an input buffer per node: each gradient arriving at one of
//      the node's inputs is added there (a tensor used twice, as in x * x,
//      gets two gradients that are summed before its node runs). The sum is
//      made by the node that produced the second gradient, inside its span,
//      and in place (aten::add_) into a buffer nothing else holds, as
//      PyTorch's InputBuffer::accumulate does; with create_graph it is an
//      aten::add, so that the sum has a graph.
//   3. A node whose count reaches zero is ready; of the ready nodes it runs
//      the most recently created first (PyTorch's ready queue orders by
//      sequence number; AccumulateGrad's is the largest, so .grad is
//      written as soon as a leaf's gradient is complete).
//   4. Running a node: the tensor hooks of its results, retain_grad, its
//      pre-hooks, then apply() (the formula, with its kernels traced beneath
//      the node's span), its post-hooks, and, without retain_graph, it frees
//      its saved tensors; a second backward through it then fails with
//      PyTorch's message. Each output is checked and shaped to the input it
//      flows to (Note [Validating a node's outputs]) and added to the next
//      node's buffer.
// Grad mode during backward is create_graph: off by default, so the
// formulas record nothing; on, so that the gradients themselves have a graph.
// autograd.grad() runs the same walk, but only the nodes on a path to the
// requested inputs, and takes the gradients where they arrive at those
// inputs' edges instead of running their AccumulateGrad.
#include "floors/autograd/engine.h"

#include <condition_variable>
#include <exception>
#include <map>
#include <mutex>
#include <queue>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "floors/autograd/derivatives.h"
#include "floors/dispatch/dispatcher.h"
#include "floors/kernels/kernels.h"
#include "tracer/tracer.h"

namespace descent::autograd {

namespace {

// [SECTION] Validating a node's outputs ---------------------------------------------------

// Note [Validating a node's outputs]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A gradient must have the shape and dtype of the tensor it is the gradient
// of: the next node's recorded input (GradMeta). A formula may hand back the
// gradient of a broadcast input in the broadcast shape ((3, 4) for a bias of
// (4,)); it is summed down here, over the dimensions broadcasting added or
// stretched (sum_to). One that cannot be summed down is the formula's bug, and
// raises PyTorch's message. A gradient of another dtype (an int64 input's,
// a _to_copy's) is cast to the input's, and one on another device (the
// gradient of x.to("sim:0") for a CPU x) is moved to the input's device.
// PyTorch's validate_outputs does the same.
Tensor validate(const Node& fn, size_t i, Tensor g, const Edge& e) {
  const GradMeta& m = e.fn->inputs[e.input_nr];
  if (!(g.sizes() == m.sizes)) {
    DESCENT_CHECK(expandable_to(m.sizes, g.sizes()), Error, "Function ", fn.name,
                  " returned an invalid gradient at index ", i, " - got ", g.sizes().str(),
                  " but expected shape compatible with ", m.sizes.str());
    g = sum_to(g, m.sizes);
  }
  if (g.dtype() != m.dtype || !(g.device() == m.device))
    g = call(Op::_to_copy, g, m.dtype, g.device() == m.device ? IValue() : IValue(m.device));
  return g;
}

// [SECTION] The graph task and the threads that work it ---------------------------------

// Note [Which thread runs a node]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// PyTorch's engine runs a node on the thread of the device its gradients
// are on: a node whose input buffer holds CPU tensors runs on the thread
// that called backward(), and one whose gradients are on a device runs on
// that device's own worker thread, started the first time the device needs
// one and kept for the life of the process (Engine's device_ready_queues:
// one ReadyQueue and one thread per device). The calling thread works its
// own queue meanwhile and waits for the graph task to end: when the last
// node is done, whichever thread ran it wakes the caller. So in a trace of
// loss.backward() on sim:0 or cuda:0, the evaluate_function spans of the
// device's nodes, and the kernels they launch, are on another thread than
// the forward's, as torch.profiler shows them. The state the graph task
// shares (dependency counts, input buffers, captures) is guarded by one
// mutex, taken around the bookkeeping but not around a node's formula. The
// worker takes on the caller's thread-local state for each node (grad mode
// as create_graph asks, inference mode, the dispatch include and exclude
// sets, the kernel variant), as PyTorch's ThreadLocalStateGuard does. One
// difference: PyTorch runs each node's kernels on the stream its forward
// op used; descent's worker uses its device's current stream, the default
// one (descent's nodes do not record a stream).
struct GraphTask;

struct ReadyItem {
  uint64_t sequence_nr;
  Node* fn;  // null: a wake-up for the caller, the graph task has ended
  GraphTask* task;
  bool operator<(const ReadyItem& o) const { return sequence_nr < o.sequence_nr; }
};

// A thread's ready nodes, the most recently created first.
class ReadyQueue {
 public:
  // Notifies under the lock: the caller may end its graph task, and with it
  // this queue, as soon as it sees the wake-up item.
  void push(ReadyItem item) {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push(item);
    ready_.notify_one();
  }
  ReadyItem pop() {
    std::unique_lock<std::mutex> lock(mutex_);
    ready_.wait(lock, [&] { return !queue_.empty(); });
    ReadyItem item = queue_.top();
    queue_.pop();
    return item;
  }

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::priority_queue<ReadyItem> queue_;
};

// [SECTION] Running the graph ----------------------------------------------------------

struct GraphRoot final : Node {
  GraphRoot(TensorList g, std::vector<Edge> edges) : Node("GraphRoot"), grads(std::move(g)) {
    next_edges = std::move(edges);
    qualified = "torch::autograd::GraphRoot";
  }
  TensorList apply(TensorList&&) override { return grads; }
  TensorList grads;
};

struct Capture {
  Node* fn;
  uint32_t input_nr;
};

struct GraphTask {
  BackwardOptions opts;
  bool accumulate = true;         // backward(): run AccumulateGrad; grad(): capture instead
  std::vector<Capture> captures;  // grad(): where each input's gradient arrives
  TensorList captured;
  std::unordered_map<Node*, int> dependencies;
  std::unordered_map<Node*, TensorList> buffers;
  std::unordered_set<Node*> needed;  // grad(): the nodes on a path to a capture
  // Note [Which thread runs a node]
  std::mutex mutex;          // guards the five above, outstanding and error
  int outstanding = 0;       // nodes queued or running
  std::exception_ptr error;  // the first node that failed; the rest are skipped
  ReadyQueue cpu_queue;      // the calling thread's
  AutogradState autograd;    // the caller's thread-local state, taken on by the workers
  LocalKeys keys;
  kernels::Variant variant = kernels::Variant::Auto;
  trace::SpanRef caller;  // the caller's open span: device threads' nodes get a flow from it
};

// Sets a thread's state to the graph task's for one node, then puts it back.
class TaskStateGuard {
 public:
  explicit TaskStateGuard(const GraphTask& t)
      : autograd_(autograd_state()), keys_(local_keys()), variant_(kernels::requested_variant()) {
    autograd_state() = t.autograd;
    local_keys() = t.keys;
    kernels::requested_variant() = t.variant;
  }
  ~TaskStateGuard() {
    autograd_state() = autograd_;
    local_keys() = keys_;
    kernels::requested_variant() = variant_;
  }

 private:
  AutogradState autograd_;
  LocalKeys keys_;
  kernels::Variant variant_;
};

// The device a node runs on: its gradients' (the first not on the CPU), as InputBuffer::device().
Device device_of(const TensorList& in) {
  for (const Tensor& t : in)
    if (t.defined() && t.device().type != DeviceType::CPU) return t.device();
  return Device{};
}

void device_thread_main(ReadyQueue* queue);

// The queue of the thread that runs `device`'s nodes: the caller's for the
// CPU, else the device's worker, started on first use and never stopped.
ReadyQueue& queue_for(GraphTask& task, Device device) {
  if (device.type == DeviceType::CPU) return task.cpu_queue;
  static std::mutex mutex;
  static auto* workers = new std::map<std::pair<int, int>, ReadyQueue*>;  // kept for the process's life
  std::lock_guard<std::mutex> lock(mutex);
  ReadyQueue*& q = (*workers)[{int(device.type), device.index}];
  if (!q) {
    q = new ReadyQueue;
    std::thread(device_thread_main, q).detach();
  }
  return *q;
}

void count_dependencies(Node* root, GraphTask& task) {
  std::vector<Node*> stack{root};
  std::unordered_set<Node*> seen{root};
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (const Edge& e : n->next_edges) {
      if (!e.valid()) continue;
      ++task.dependencies[e.fn.get()];
      if (seen.insert(e.fn.get()).second) stack.push_back(e.fn.get());
    }
  }
}

// A node must run for grad() when one of its edges leads to a capture or to a node that must run.
bool mark_needed(Node* n, GraphTask& task, std::unordered_map<Node*, bool>& memo) {
  if (auto it = memo.find(n); it != memo.end()) return it->second;
  memo[n] = false;
  bool need = false;
  for (const Edge& e : n->next_edges) {
    if (!e.valid()) continue;
    bool capture = false;
    for (const Capture& c : task.captures) capture |= c.fn == e.fn.get();
    if (mark_needed(e.fn.get(), task, memo) || capture) need = true;
  }
  memo[n] = need;
  if (need) task.needed.insert(n);
  return need;
}

void retain(TensorImpl* impl, const Tensor& g) {
  auto* m = static_cast<AutogradMeta*>(impl->autograd.get());
  if (!m || !g.defined()) return;
  m->grad = m->grad.defined() ? call(Op::add, m->grad, g) : call(Op::clone, g);
}

// Whether a buffered gradient may be summed into in place: nothing else holds
// it or its memory, and it is laid out plainly (InputBuffer's can_accumulate_inplace).
bool can_accumulate_inplace(const Tensor& t) {
  return t.impl()->use_count() == 1 && t.storage()->use_count() == 1 && !t.is_view() && t.is_contiguous() &&
         t.offset() == 0;
}

// Adds gradient `g` into `slot` (Note [How backward walks the graph], 2).
void accumulate(Tensor& slot, Tensor&& g) {
  if (!slot.defined())
    slot = std::move(g);
  else if (grad_mode_enabled())
    slot = call(Op::add, slot, g);
  else if (can_accumulate_inplace(slot) && slot.dtype() == g.dtype())
    call(Op::add_, slot, g);
  else if (can_accumulate_inplace(g) && slot.dtype() == g.dtype())
    slot = call(Op::add_, g, slot);
  else
    slot = call(Op::add, slot, g);
}

// Hands a node's outputs to the input buffers of the nodes its edges lead to,
// and queues each node that has all its gradients now on its device's thread.
// `sent`, when given, gets the shapes sent along the edges, as validated:
// "[2, 2], None" (None: no gradient goes along that edge).
void pass_on(Node& n, TensorList& out, GraphTask& task, std::string* sent = nullptr) {
  DESCENT_CHECK(out.size() == n.next_edges.size() || n.next_edges.empty(), Error, "Function ", n.name,
                " returned an incorrect number of gradients (expected ", n.next_edges.size(), ", got ", out.size(),
                ")");
  std::lock_guard<std::mutex> lock(task.mutex);
  for (size_t i = 0; i < n.next_edges.size(); ++i) {
    const Edge& e = n.next_edges[i];
    if (sent && i) *sent += ", ";
    if (!e.valid() || !out[i].defined()) {
      if (sent) *sent += "None";
      continue;
    }
    Tensor g = validate(n, i, std::move(out[i]), e);
    if (sent) *sent += g.shape_str();
    TensorList& buf = task.buffers[e.fn.get()];
    buf.resize(std::max(buf.size(), e.fn->inputs.size()));
    accumulate(buf[e.input_nr], std::move(g));
  }
  for (const Edge& e : n.next_edges) {
    if (!e.valid() || --task.dependencies[e.fn.get()] != 0) continue;
    ++task.outstanding;
    auto it = task.buffers.find(e.fn.get());
    queue_for(task, it == task.buffers.end() ? Device{} : device_of(it->second))
        .push({e.fn->sequence_nr, e.fn.get(), &task});
  }
}

// The shapes of a list of gradients, for the node's span: "[2, 2], None"
// (None: no gradient, an undefined tensor).
std::string grad_shapes(const TensorList& grads) {
  std::string s;
  for (const Tensor& g : grads) s += (s.empty() ? "" : ", ") + (g.defined() ? g.shape_str() : std::string("None"));
  return s;
}

void run_node(Node& n, TensorList&& in, GraphTask& task) {
  const char* span_name =
      trace::enabled() ? trace::intern(str("autograd::engine::evaluate_function: ", n.full_name())) : "";
  trace::ScopedSpan span(trace::Floor::Autograd, span_name);
  if (span.active()) {
    // On a device's thread: an arrow from the caller's span that waits for it (the app follows it down).
    if (task.caller.valid() && task.caller.buffer != trace::current_span().buffer)
      trace::add_flow(task.caller, trace::span_ref(span.handle()), "backward");
    span.arg("node", n.name);
    span.arg("node_id", int64_t(n.id));
    const std::string saved = n.saved_names();
    if (!saved.empty()) span.arg("saved", trace::intern(saved));
    // The gradients arriving (one per forward output; PyTorch's hooks call
    // them grad_outputs) and, below, those sent on (one per edge, as
    // validated, Note [Validating a node's outputs]: grad_inputs).
    span.arg("grads_in", trace::intern(grad_shapes(in)));
  }
  for (auto& [nr, impl] : n.retained) retain(impl, in[size_t(nr)]);
  for (auto& [id, hook] : n.pre_hooks) {
    (void)id;
    hook(in);
  }
  TensorList copy_of_in;
  if (!n.post_hooks.empty()) copy_of_in = in;
  TensorList out = n.apply(std::move(in));
  if (!task.opts.retain_graph) n.release_saved_variables();
  for (auto& [id, hook] : n.post_hooks) {
    (void)id;
    hook(out, copy_of_in);
  }
  std::string sent;  // an AccumulateGrad has no edges: it sends nothing on, and its span says nothing of it
  pass_on(n, out, task, span.active() && !n.next_edges.empty() ? &sent : nullptr);
  if (span.active() && !n.next_edges.empty()) span.arg("grads_out", trace::intern(sent));
}

// Runs one ready node of `task` on this thread; the last node to finish wakes the caller.
void evaluate(GraphTask& task, Node* n) {
  bool failed;
  TensorList in;
  {
    std::lock_guard<std::mutex> lock(task.mutex);
    failed = bool(task.error);
    if (auto it = task.buffers.find(n); it != task.buffers.end()) {
      in = std::move(it->second);
      task.buffers.erase(it);
    }
  }
  if (!failed) {
    try {
      TaskStateGuard state(task);
      in.resize(n->inputs.size());
      for (auto& h : n->tensor_pre_hooks)  // register_hook on this node's results
        if (Tensor r = h.fn(in[size_t(h.output_nr)]); r.defined()) in[size_t(h.output_nr)] = std::move(r);
      bool run = task.accumulate;
      {
        std::lock_guard<std::mutex> lock(task.mutex);
        for (size_t c = 0; c < task.captures.size(); ++c)
          if (task.captures[c].fn == n) task.captured[c] = in[task.captures[c].input_nr];
        run = run || task.needed.count(n) > 0;
      }
      if (run) run_node(*n, std::move(in), task);
    } catch (...) {
      std::lock_guard<std::mutex> lock(task.mutex);
      if (!task.error) task.error = std::current_exception();
    }
  }
  bool ended;
  {
    std::lock_guard<std::mutex> lock(task.mutex);
    ended = --task.outstanding == 0;
  }
  if (ended) task.cpu_queue.push({0, nullptr, &task});
}

void device_thread_main(ReadyQueue* queue) {
  for (;;) {
    ReadyItem item = queue->pop();
    evaluate(*item.task, item.fn);
  }
}

// Runs the graph from `root`, whose input buffer is `root_input`, and
// returns when every node has run (Note [Which thread runs a node]).
void execute(const Ref<Node>& root, TensorList root_input, GraphTask& task) {
  count_dependencies(root.get(), task);
  if (!task.accumulate) {
    std::unordered_map<Node*, bool> memo;
    mark_needed(root.get(), task, memo);
  }
  task.autograd = autograd_state();
  task.keys = local_keys();
  task.variant = kernels::requested_variant();
  task.caller = trace::current_span();
  const Device device = device_of(root_input);
  task.buffers[root.get()] = std::move(root_input);
  task.outstanding = 1;
  queue_for(task, device).push({root->sequence_nr, root.get(), &task});
  for (;;) {  // the caller works its own queue until the task ends
    ReadyItem item = task.cpu_queue.pop();
    if (!item.fn) break;
    evaluate(task, item.fn);
  }
  if (task.error) std::rethrow_exception(task.error);
}

// [SECTION] backward and grad ------------------------------------------------------------

// The node backward starts at and its input buffer: the one root's grad_fn
// (or AccumulateGrad) with its gradient, or a GraphRoot over several roots.
std::pair<Ref<Node>, TensorList> make_root(const TensorList& roots, const TensorList& grads) {
  DESCENT_CHECK(grads.size() == roots.size(), Error, "grad can be implicitly created only for scalar outputs: got ",
                grads.size(), " gradients for ", roots.size(), " tensors");
  TensorList g(roots.size());
  std::vector<Edge> edges;
  for (size_t i = 0; i < roots.size(); ++i) {
    const Tensor& r = roots[i];
    DESCENT_CHECK(r.requires_grad(), Error, "element ", i,
                  " of tensors does not require grad and does not have a grad_fn");
    if (!grads[i].defined()) {
      DESCENT_CHECK(r.numel() == 1, Error, "grad can be implicitly created only for scalar outputs");
      g[i] = call(Op::ones, r.sizes(), r.dtype(), r.device());
    } else {
      DESCENT_CHECK(grads[i].sizes() == r.sizes(), Error, "Mismatch in shape: grad_output[", i,
                    "] has a shape of descent.Size(", grads[i].sizes().str(), ") and output[", i,
                    "] has a shape of descent.Size(", r.sizes().str(), ").");
      g[i] = grads[i];
    }
    edges.push_back(gradient_edge(r));
  }
  if (edges.size() == 1) {  // PyTorch's skip_dummy_node
    TensorList input(edges[0].fn->inputs.size());
    input[edges[0].input_nr] = validate(*edges[0].fn, 0, std::move(g[0]), edges[0]);
    return {edges[0].fn, std::move(input)};
  }
  return {Ref<Node>(new GraphRoot(std::move(g), std::move(edges))), TensorList{}};
}

}  // namespace

// No span of its own: PyTorch's profiler records none for the engine's
// entry, only a span per node (evaluate_function).
void backward(const TensorList& roots, const TensorList& grads, const BackwardOptions& opts) {
  AutoGradMode mode(opts.create_graph);
  auto [root, input] = make_root(roots, grads);
  GraphTask task;
  task.opts = opts;
  execute(root, std::move(input), task);
}

TensorList grad(const TensorList& roots, const TensorList& grads, const TensorList& inputs,
                const BackwardOptions& opts) {
  AutoGradMode mode(opts.create_graph);
  auto [root, input] = make_root(roots, grads);
  GraphTask task;
  task.opts = opts;
  task.accumulate = false;
  std::vector<Ref<Node>> keep;  // a leaf's AccumulateGrad made here lives until the walk ends
  for (const Tensor& t : inputs) {
    DESCENT_CHECK(t.requires_grad(), Error, "One of the differentiated Tensors does not require grad");
    Edge e = gradient_edge(t);
    task.captures.push_back({e.fn.get(), e.input_nr});
    keep.push_back(e.fn);
  }
  task.captured.resize(inputs.size());
  execute(root, std::move(input), task);
  for (size_t i = 0; i < inputs.size(); ++i)
    DESCENT_CHECK(task.captured[i].defined() || opts.allow_unused, Error,
                  "One of the differentiated Tensors appears to not have been used in the graph. Set allow_unused=True "
                  "if this is the desired behavior.");
  return std::move(task.captured);
}

}  // namespace descent::autograd
