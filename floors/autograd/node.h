// Floor 4, autograd: the graph a forward pass records and backward walks.
//
// [SECTION] Edges and nodes
// [SECTION] Saved variables
// [SECTION] A tensor's autograd state
// [SECTION] AccumulateGrad
//
// See Note [The graph autograd records].
//
// Note [The graph autograd records]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Every op that runs with grad mode on and an input that requires grad
// leaves behind one Node (AddBackward0 for aten::add.Tensor: the names are
// PyTorch's), and its result's grad_fn points at it. A node knows, for each
// tensor input of its forward op, an Edge: the node the gradient flows to
// next and which of that node's inputs it fills (torch's next_functions).
// An input that does not require grad gets an empty edge (None); a leaf that
// does gets its AccumulateGrad node, which writes .grad. So the graph points
// backwards only, from results to leaves: nothing keeps a result alive but
// its own Python object, and the graph lives as long as the loss does.
// A node also keeps what its formula reads (SavedVariable: an input, or the
// result) and, per forward output, the shape and dtype a gradient arriving
// there must have. Backward (engine.h) runs the nodes from the loss down.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "floors/core/tensor.h"

namespace descent::autograd {

// [SECTION] Edges and nodes ----------------------------------------------------------

struct Node;

struct Edge {
  Ref<Node> fn;           // null: the input does not need a gradient (torch prints None)
  uint32_t input_nr = 0;  // which of fn's gradient inputs this one fills
  bool valid() const { return bool(fn); }
};

using TensorList = std::vector<Tensor>;
// A hook on a gradient (Tensor.register_hook): returns a replacement, or an
// undefined Tensor to keep the gradient as it is.
using GradHook = std::function<Tensor(const Tensor&)>;
// Tensor.register_post_accumulate_grad_hook: sees the leaf once its .grad is updated.
using PostAccumulateGradHook = std::function<void(const Tensor& leaf)>;
// Node.register_prehook: may replace the gradients arriving at the node.
using NodePreHook = std::function<void(TensorList& grad_outputs)>;
// Node.register_hook: sees what the node computed (grad_inputs) from what it got (grad_outputs).
using NodePostHook = std::function<void(TensorList& grad_inputs, const TensorList& grad_outputs)>;

// What a gradient flowing into a node's input must look like: the forward
// output's shape, dtype and device (PyTorch's InputMetadata).
struct GradMeta {
  DimVector sizes;
  ScalarType dtype = ScalarType::Float32;
  Device device;
};

struct Node : RefCounted {
  explicit Node(const char* name);
  ~Node() override;

  const char* name;              // "AddBackward0"; literal or interned
  uint64_t sequence_nr;          // creation order: of two ready nodes the engine runs the later first
  uint64_t id;                   // unique in the process: how the trace names this node (node_id, edge_ids)
  std::vector<Edge> next_edges;  // one per tensor input of the forward op
  std::vector<GradMeta> inputs;  // one per forward output: the gradients this node takes

  // Hooks, each with an id for RemovableHandle.remove().
  struct TensorHook {
    int id;
    int output_nr;
    GradHook fn;
  };
  std::vector<TensorHook> tensor_pre_hooks;  // register_hook on a result of this node
  std::vector<std::pair<int, NodePreHook>> pre_hooks;
  std::vector<std::pair<int, NodePostHook>> post_hooks;
  // retain_grad(): results of this node that keep their gradient in .grad,
  // by output_nr. Not owned: the tensor's AutogradMeta removes itself when it dies.
  std::vector<std::pair<int, TensorImpl*>> retained;
  // The Python object that stands for this node, where the binding gave it
  // one (a custom autograd.Function's ctx, owned by the node): PyTorch's
  // Node::pyobj_. Null for the nodes of the op table, whose Python objects
  // have their own (py_weak below).
  void* pyobj = nullptr;
  // The Python object the binding made for a node of the table, borrowed and
  // cleared when it dies, so that y.grad_fn is y.grad_fn (Note [A class per
  // node], autograd_object.cpp).
  void* py_weak = nullptr;
  // PyTorch's Node::name() where it is not the class's name: the nodes
  // written by hand in torch/csrc/autograd are named with their C++
  // namespace ("torch::autograd::AccumulateGrad"), and so are their
  // evaluate_function spans in the profiler. Null: `name`.
  const char* qualified = nullptr;
  const char* full_name() const { return qualified ? qualified : name; }
  bool remove_hook(int id);

  // The gradients of the forward op's inputs from those of its outputs.
  // `grads` has one entry per forward output (undefined: none arrived).
  virtual TensorList apply(TensorList&& grads) = 0;
  // Drops the saved tensors after a backward without retain_graph.
  virtual void release_saved_variables() {}
  // For the trace and repr: the names of the saved values ("self, other").
  virtual std::string saved_names() const { return ""; }
  // The saved value named `name` ("self", "result"), unpacked, as PyTorch's
  // grad_fn._saved_self reads it; false when the node saved none by that name.
  virtual bool saved_value(std::string_view name, Tensor& out) {
    (void)name;
    (void)out;
    return false;
  }
  virtual bool is_accumulate_grad() const { return false; }

 protected:
  // The last reference to a node goes: deleted through a work list, never
  // recursively (Note [Freeing a graph without recursion], node.cpp).
  void delete_self() override;
};

int next_hook_id();

// [SECTION] Saved variables ----------------------------------------------------------

// A tensor a node keeps for its formula, with the version it had when it was
// saved (Note [Version counter and view base], tensor.h). unpack() refuses a
// tensor written in place since, with PyTorch's message, and one freed by a
// backward without retain_graph.
class SavedVariable {
 public:
  SavedVariable() = default;
  // `is_output`: the node's own result. It is kept without its grad_fn (which
  // is the node itself: a cycle) and given it back at unpack.
  SavedVariable(const Tensor& t, bool is_output);
  bool defined() const { return saved_; }
  Tensor unpack(Node* owner) const;
  void reset();  // frees it (backward without retain_graph)

 private:
  Tensor data_;
  uint32_t version_ = 0;
  uint32_t output_nr_ = 0;
  const char* producer_ = nullptr;  // the grad_fn that made it, for the version error; null for a leaf
  bool saved_ = false;
  bool is_output_ = false;
  bool freed_ = false;
};

// [SECTION] A tensor's autograd state ------------------------------------------------

// How a view came to be (PyTorch's CreationMeta, the part descent keeps): a
// view made with grad mode off may not be written in place with it on
// (Note [A view made in no_grad mode], copy_slices.cpp).
enum class CreationMeta : uint8_t { Default, NoGradMode };

struct AutogradMeta : AutogradMetaInterface {
  ~AutogradMeta() override;
  Tensor grad;                                    // .grad
  Ref<Node> grad_fn;                              // null for a leaf
  uint32_t output_nr = 0;                         // which output of grad_fn this tensor is
  Node* grad_accumulator = nullptr;               // a leaf's AccumulateGrad; not owned (it clears this when it dies)
  bool retains_grad = false;                      // retain_grad() on a non-leaf
  TensorImpl* owner = nullptr;                    // the tensor this belongs to (for retain_grad's removal)
  std::vector<std::pair<int, GradHook>> hooks;    // a leaf's register_hook hooks, run by its AccumulateGrad
  CreationMeta creation = CreationMeta::Default;  // a view's: Note [A view made in no_grad mode]
  std::vector<std::pair<int, PostAccumulateGradHook>> post_accumulate_hooks;  // a leaf's, run after its .grad is set
};

AutogradMeta* meta(const Tensor& t);  // null when autograd keeps nothing on t
AutogradMeta& ensure_meta(const Tensor& t);
const Ref<Node>& grad_fn(const Tensor& t);  // null for a leaf
inline bool is_leaf(const Tensor& t) { return !grad_fn(t); }
// t.requires_grad, after bringing a view's grad_fn up to date (a view whose
// base gained a history since gains one too: Note [A view's grad_fn after an
// in-place write]).
// A view made in no_grad mode requires grad when its base does, as in
// PyTorch, and is still a leaf (Note [A view made in no_grad mode]).
bool view_requires_grad(const Tensor& t);
inline bool requires_grad(const Tensor& t) { return t.is_view() ? view_requires_grad(t) : t.requires_grad(); }
// The creation of a view; Default for a tensor that is not one.
CreationMeta creation_meta(const Tensor& t);
// Where a gradient for `t` goes: (grad_fn, output_nr), a leaf's
// AccumulateGrad, or an empty edge when t does not require grad.
Edge gradient_edge(const Tensor& t);
Ref<Node> grad_accumulator(const Tensor& leaf);
// Makes `t` the output `output_nr` of `fn` (it now requires grad) and
// records the gradient's shape and dtype on fn.
void set_history(const Tensor& t, const Ref<Node>& fn, uint32_t output_nr);
// t.requires_grad = r: only a leaf may change it, and only a float one require grad.
void set_requires_grad(const Tensor& t, bool r);
// t.detach(): the same memory and version counter, outside the graph.
Tensor detach(const Tensor& t);
// t.data: the same memory outside the graph, with a version counter of its
// own (Note [Version counter and view base]).
Tensor variable_data(const Tensor& t);
void retain_grad(const Tensor& t);
// t.register_hook(fn): returns the hook's id.
int register_hook(const Tensor& t, GradHook fn);
void remove_tensor_hook(const Tensor& t, int id);
// t.register_post_accumulate_grad_hook(fn): a leaf's only, as in PyTorch; returns the hook's id.
int register_post_accumulate_grad_hook(const Tensor& t, PostAccumulateGradHook fn);

// "descent.FloatTensor [3, 4]", "descent.cuda.HalfTensor [2]": how PyTorch's version error names a tensor (torch.FloatTensor there).
std::string type_and_shape(const Tensor& t);

// [SECTION] AccumulateGrad -----------------------------------------------------------

// The node at a leaf that requires grad: adds the gradient into .grad.
struct AccumulateGrad final : Node {
  explicit AccumulateGrad(Ref<TensorImpl> leaf);
  ~AccumulateGrad() override;
  TensorList apply(TensorList&& grads) override;
  bool is_accumulate_grad() const override { return true; }
  Ref<TensorImpl> variable;  // the leaf (torch: AccumulateGrad.variable)
};

}  // namespace descent::autograd
