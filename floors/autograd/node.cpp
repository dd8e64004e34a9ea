// Floor 4: nodes, saved variables, a tensor's autograd state, AccumulateGrad.
#include "floors/autograd/node.h"

#include <algorithm>
#include <atomic>
#include <limits>

#include "floors/autograd/copy_slices.h"
#include "floors/dispatch/dispatcher.h"

namespace descent::autograd {

// [SECTION] Edges and nodes ----------------------------------------------------------

namespace {
// PyTorch numbers nodes per thread; backward runs the highest ready number
// first, so within one thread's forward the graph is walked in reverse.
uint64_t next_sequence_nr() {
  thread_local uint64_t n = 0;
  return n++;
}
}  // namespace

Node::Node(const char* n) : name(n), sequence_nr(next_sequence_nr()) {
  static std::atomic<uint64_t> ids{0};
  id = ++ids;
}
Node::~Node() = default;

// Note [Freeing a graph without recursion]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A graph is owned from its root down: a node holds the next node through
// its edges, and through the tensors it saved (a saved input keeps its
// grad_fn). So when the last reference to the root goes, deleting it drops
// the last reference to the next node, whose destructor drops the next...
// `total = total + loss` over 150k steps, then `total = 0`, would recurse
// 150k destructors deep and overflow the stack. PyTorch's deleteNode
// (torch/csrc/autograd/function.cpp) moves a dying node's edges onto a
// stack instead; here every node whose count reaches 0 while another is
// being deleted on this thread is put on the thread's work list and deleted
// by the outermost delete, one after another. That covers every path a
// node is reached by (edges, saved tensors, hooks), and the stack stays one
// destructor deep whatever the graph's length or width.
void Node::delete_self() {
  thread_local std::vector<Node*>* dying = nullptr;  // non-null while this thread deletes nodes
  if (dying) {
    dying->push_back(this);
    return;
  }
  std::vector<Node*> work{this};
  dying = &work;
  while (!work.empty()) {
    Node* n = work.back();
    work.pop_back();
    delete n;  // may push the nodes it held the last reference to
  }
  dying = nullptr;
}

int next_hook_id() {
  static std::atomic<int> id{0};
  return ++id;
}

bool Node::remove_hook(int id) {
  auto gone = [&](auto& v, auto key) {
    auto it = std::remove_if(v.begin(), v.end(), [&](const auto& h) { return key(h) == id; });
    bool found = it != v.end();
    v.erase(it, v.end());
    return found;
  };
  return gone(tensor_pre_hooks, [](const TensorHook& h) { return h.id; }) ||
         gone(pre_hooks, [](const auto& h) { return h.first; }) ||
         gone(post_hooks, [](const auto& h) { return h.first; });
}

// [SECTION] Saved variables ----------------------------------------------------------

SavedVariable::SavedVariable(const Tensor& t, bool is_output) : saved_(true), is_output_(is_output) {
  if (!t.defined()) return;
  DESCENT_CHECK(!t.impl()->inference, Error,  // Note [Inference tensors outside inference mode]
                "Inference tensors cannot be saved for backward. Please do not use Tensors created in inference mode "
                "in computation tracked by autograd. To work around this, you can make a clone to get a normal tensor "
                "and use it in autograd, or use `torch.no_grad()` instead of `torch.inference_mode()`.");
  version_ = t.version();
  if (AutogradMeta* m = meta(t)) {
    output_nr_ = m->output_nr;
    if (m->grad_fn) producer_ = m->grad_fn->name;
  }
  data_ = is_output ? detach(t) : t;
}

void SavedVariable::reset() {
  data_ = Tensor();
  freed_ = true;
}

// Note [No anomaly mode]
// ~~~~~~~~~~~~~~~~~~~~~~~
// A saved tensor written in place since raises PyTorch's error, hint and
// all: "enable anomaly detection ... with torch.autograd.set_detect_anomaly(True)".
// descent has no anomaly mode (PyTorch's records each node's forward
// traceback and prints it when that node's backward fails, and checks
// every gradient for NaN): descent.autograd.set_detect_anomaly and
// detect_anomaly raise NotImplementedError saying so, and where to look
// instead: `descent trace "<code>"` shows every in-place op's
// ADInplaceOrView kernel, the one that bumps the version.
Tensor SavedVariable::unpack(Node* owner) const {
  if (!saved_) return Tensor();
  DESCENT_CHECK(!freed_, Error,
                "Trying to backward through the graph a second time (or directly access saved tensors after they have "
                "already been freed). Saved intermediate values of the graph are freed when you call .backward() or "
                "autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or "
                "if you need to access saved tensors after calling backward.");
  if (!data_.defined()) return Tensor();
  const uint32_t now = data_.version();
  // Note [Version counter and view base] (tensor.h): the counter is shared
  // with every view, so a write through any of them is caught here.
  DESCENT_CHECK(now == version_, Error,
                "one of the variables needed for gradient computation has been modified by an inplace operation: [",
                type_and_shape(data_), "]",
                producer_ ? str(", which is output ", output_nr_, " of ", producer_, ",") : std::string(),
                " is at version ", now, "; expected version ", version_,
                " instead. Hint: enable anomaly detection to find the operation that failed to compute its gradient, "
                "with torch.autograd.set_detect_anomaly(True).");  // PyTorch's words (Note [No anomaly mode])
  if (!is_output_ || !owner || !grad_mode_enabled()) return data_;
  // create_graph: the result is given its grad_fn back, so that a formula
  // reading it is differentiated through this node (ExpBackward0's result).
  Tensor t = detach(data_);
  AutogradMeta& m = ensure_meta(t);
  m.grad_fn = Ref<Node>(owner);
  m.output_nr = output_nr_;
  t.impl()->requires_grad = true;
  return t;
}

// [SECTION] A tensor's autograd state ------------------------------------------------

AutogradMeta::~AutogradMeta() {
  if (retains_grad && grad_fn) {
    auto& r = grad_fn->retained;
    r.erase(std::remove_if(r.begin(), r.end(), [&](const auto& e) { return e.second == owner; }), r.end());
  }
}

AutogradMeta* meta(const Tensor& t) { return static_cast<AutogradMeta*>(t.impl()->autograd.get()); }

AutogradMeta& ensure_meta(const Tensor& t) {
  if (!t.impl()->autograd) {
    auto m = Ref<AutogradMeta>::make();
    m->owner = t.impl();
    t.impl()->autograd = Ref<AutogradMetaInterface>(m.get());
  }
  return *meta(t);
}

const Ref<Node>& grad_fn(const Tensor& t) {
  static const Ref<Node> none;
  // Note [A view's grad_fn after an in-place write] (copy_slices.cpp): a view
  // whose memory was written since its grad_fn was made gets a new one first.
  if (t.is_view() && t.impl()->view_version != t.version()) regenerate_view_grad_fn(t);
  const AutogradMeta* m = meta(t);
  return m ? m->grad_fn : none;
}

CreationMeta creation_meta(const Tensor& t) {
  const AutogradMeta* m = t.is_view() ? meta(t) : nullptr;
  return m ? m->creation : CreationMeta::Default;
}

bool view_requires_grad(const Tensor& t) {
  if (creation_meta(t) != CreationMeta::Default) return t.requires_grad() || t.impl()->base->requires_grad;
  if (t.impl()->view_version != t.version()) grad_fn(t);
  return t.requires_grad();
}

Ref<Node> grad_accumulator(const Tensor& leaf) {
  AutogradMeta& m = ensure_meta(leaf);
  if (m.grad_accumulator) return Ref<Node>(m.grad_accumulator);
  auto* acc = new AccumulateGrad(leaf.ref());
  m.grad_accumulator = acc;
  return Ref<Node>(acc);
}

Edge gradient_edge(const Tensor& t) {
  if (const Ref<Node>& fn = grad_fn(t)) return Edge{fn, meta(t)->output_nr};
  if (t.requires_grad()) return Edge{grad_accumulator(t), 0};
  return Edge{};
}

void set_history(const Tensor& t, const Ref<Node>& fn, uint32_t output_nr) {
  AutogradMeta& m = ensure_meta(t);
  if (m.retains_grad && m.grad_fn && m.grad_fn != fn) {  // an in-place op moved its history: retain_grad moves too
    auto& r = m.grad_fn->retained;
    r.erase(std::remove_if(r.begin(), r.end(), [&](const auto& e) { return e.second == t.impl(); }), r.end());
    fn->retained.emplace_back(int(output_nr), t.impl());
  }
  m.grad_fn = fn;
  m.output_nr = output_nr;
  t.impl()->requires_grad = true;
  if (t.is_view()) t.impl()->view_version = t.version();  // Note [A view's grad_fn after an in-place write]
  if (fn->inputs.size() <= output_nr) fn->inputs.resize(output_nr + 1);
  fn->inputs[output_nr] = GradMeta{t.sizes(), t.dtype(), t.device()};
}

void set_requires_grad(const Tensor& t, bool r) {
  DESCENT_CHECK(!r || !t.impl()->inference || autograd_state().inference_mode, Error,
                "Setting requires_grad=True on inference tensor outside InferenceMode is not allowed.");
  DESCENT_CHECK(is_leaf(t), Error, "you can only change requires_grad flags of leaf variables.",
                r ? ""
                  : " If you want to use a computed variable in a subgraph that doesn't require differentiation "
                    "use var_no_grad = var.detach().");
  Tensor(t).set_requires_grad(r);
}

Tensor detach(const Tensor& t) {
  Tensor d = t.as_strided(t.sizes(), t.strides(), t.offset());  // the same counter as t, and t's inference-ness
  return d;
}

Tensor variable_data(const Tensor& t) {
  Tensor d = t.as_strided(t.sizes(), t.strides(), t.offset());
  d.impl()->own_version = Ref<VersionCounter>::make();
  return d;
}

void retain_grad(const Tensor& t) {
  DESCENT_CHECK(t.requires_grad(), Error, "can't retain_grad on Tensor that has requires_grad=False");
  if (is_leaf(t)) return;  // a leaf keeps its gradient anyway
  AutogradMeta& m = ensure_meta(t);
  if (m.retains_grad) return;
  m.retains_grad = true;
  m.grad_fn->retained.emplace_back(int(m.output_nr), t.impl());
}

int register_hook(const Tensor& t, GradHook fn) {
  DESCENT_CHECK(t.requires_grad(), Error, "cannot register a hook on a tensor that doesn't require gradient");
  const int id = next_hook_id();
  AutogradMeta& m = ensure_meta(t);
  if (m.grad_fn)
    m.grad_fn->tensor_pre_hooks.push_back({id, int(m.output_nr), std::move(fn)});
  else
    m.hooks.emplace_back(id, std::move(fn));
  return id;
}

int register_post_accumulate_grad_hook(const Tensor& t, PostAccumulateGradHook fn) {
  DESCENT_CHECK(requires_grad(t), Error, "cannot register a hook on a tensor that doesn't require gradient");
  DESCENT_CHECK(is_leaf(t), Error, "post accumulate grad hooks cannot be registered on non-leaf tensors");
  const int id = next_hook_id();
  ensure_meta(t).post_accumulate_hooks.emplace_back(id, std::move(fn));
  return id;
}

void remove_tensor_hook(const Tensor& t, int id) {
  AutogradMeta* m = meta(t);
  if (!m) return;
  if (m->grad_fn) m->grad_fn->remove_hook(id);
  auto gone = [id](const auto& e) { return e.first == id; };
  auto& h = m->hooks;
  h.erase(std::remove_if(h.begin(), h.end(), gone), h.end());
  auto& p = m->post_accumulate_hooks;
  p.erase(std::remove_if(p.begin(), p.end(), gone), p.end());
}

std::string type_and_shape(const Tensor& t) {
  return str("descent.", t.device().type == DeviceType::CPU ? "" : str(device_type_name(t.device().type), "."),
             type_word(t.dtype()), "Tensor ", t.shape_str());
}

// [SECTION] AccumulateGrad -----------------------------------------------------------

AccumulateGrad::AccumulateGrad(Ref<TensorImpl> leaf) : Node("AccumulateGrad"), variable(std::move(leaf)) {
  qualified = "torch::autograd::AccumulateGrad";
  sequence_nr = std::numeric_limits<uint64_t>::max();  // as in PyTorch: runs as soon as it is ready
  inputs.push_back(GradMeta{variable->sizes, variable->dtype, variable->device});
}

AccumulateGrad::~AccumulateGrad() {
  if (auto* m = static_cast<AutogradMeta*>(variable->autograd.get()); m && m->grad_accumulator == this)
    m->grad_accumulator = nullptr;
}

// Note [AccumulateGrad steals a gradient]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A leaf's first gradient becomes its .grad without a copy when nothing
// else can see it, as PyTorch's AccumulateGrad::accumulateGrad decides:
// grad mode is off (no create_graph), the gradient's TensorImpl has no other
// owner (a view of a buffer the engine is about to drop counts: PyTorch
// counts the TensorImpl's references, not its storage's), and its layout
// obeys the gradient layout contract (obeys_layout_contract: where the leaf
// is dense, the gradient's strides are the leaf's, size-1 dimensions aside;
// otherwise it is contiguous). What is stolen is detached (new_grad.detach()
// there): .grad shares the gradient's memory and is no view of anything.
// Otherwise .grad is a copy laid out as the leaf is (clone_obey_contract:
// empty_strided with the leaf's strides, then copy_, which create_graph
// records as CopyBackwards), or contiguous when the leaf is not dense.
// This is why mm's backward gives a weight's gradient already laid out as
// the weight (mm_mat2_backward, derivatives.cpp): .grad then takes it as it is.
namespace {

// PyTorch's is_non_overlapping_and_dense: sorted by stride, ignoring dims of
// size 0 or 1, each stride is the product of the sizes below it.
bool dense(const TensorImpl& t) {
  int perm[kMaxDims];
  int n = 0;
  for (int d = 0; d < t.sizes.size(); ++d) {
    if (t.sizes[d] == 0) return true;
    if (t.sizes[d] == 1) continue;
    int j = n++;
    for (; j > 0 && t.strides[d] < t.strides[perm[j - 1]]; --j) perm[j] = perm[j - 1];
    perm[j] = d;
  }
  int64_t want = 1;
  for (int i = 0; i < n; ++i) {
    if (t.strides[perm[i]] != want) return false;
    want *= t.sizes[perm[i]];
  }
  return true;
}

// utils::obeys_layout_contract.
bool obeys_layout_contract(const Tensor& g, const TensorImpl& leaf) {
  if (!dense(leaf)) return g.is_contiguous();
  for (int d = 0; d < g.dim(); ++d) {
    if (g.sizes()[d] != 1 ? g.strides()[d] != leaf.strides[d] : g.strides()[d] == 0) return false;
  }
  return true;
}

bool can_steal(const Tensor& g, const TensorImpl& leaf) {
  return !grad_mode_enabled() && g.impl()->use_count() == 1 && obeys_layout_contract(g, leaf);
}

// utils::clone_obey_contract.
Tensor clone_obey_contract(const Tensor& g, const TensorImpl& leaf) {
  if (!dense(leaf)) {
    Tensor c = call(Op::contiguous, g);
    return c.is_same(g) ? call(Op::clone, g) : c;
  }
  Tensor out = call(Op::empty_strided, leaf.sizes, leaf.strides, g.dtype(), g.device());
  call(Op::copy_, out, g, false);
  return out;
}

}  // namespace

TensorList AccumulateGrad::apply(TensorList&& grads) {
  Tensor leaf(variable);
  AutogradMeta& m = ensure_meta(leaf);
  Tensor g = std::move(grads[0]);
  for (auto& [id, hook] : m.hooks) {  // the leaf's register_hook hooks see the gradient first
    (void)id;
    if (Tensor r = hook(g); r.defined()) g = std::move(r);
  }
  if (!g.defined()) return {};
  if (!m.grad.defined()) {  // Note [AccumulateGrad steals a gradient]
    m.grad = can_steal(g, *variable) ? (g.is_view() || g.impl()->autograd ? detach(g) : std::move(g))
                                     : clone_obey_contract(g, *variable);
  } else if (!grad_mode_enabled()) {
    call(Op::add_, m.grad, g);  // in place: .grad keeps its identity across backwards
  } else {
    m.grad = call(Op::add, m.grad, g);
  }
  // Tensor.register_post_accumulate_grad_hook's hooks, on the leaf, in order (PyTorch's
  // tensor_post_acc_grad_hooks). A copy: a hook may remove itself.
  if (!m.post_accumulate_hooks.empty()) {
    const auto hooks = m.post_accumulate_hooks;
    for (const auto& [id, hook] : hooks) {
      (void)id;
      hook(leaf);
    }
  }
  return {};
}

}  // namespace descent::autograd
