// Floor 3, the dispatcher: the op table, key sets, fallthrough and redispatch.
#include "floors/dispatch/dispatcher.h"

#include <mutex>

#include "floors/dispatch/library.h"
#include "floors/dispatch/registrations.h"
#include "tracer/tracer.h"

namespace descent {

// [SECTION] The table ---------------------------------------------------------

namespace {

struct OpRow {
  Op id;
  const char* schema;
  const char* dispatch;
  OpKind kind;
  Exactness exactness;
  Domain domain;
  PythonModule module;
  const char* sample;
};
constexpr OpRow kRows[] = {
#define DESCENT_OP_ROW(id, schema, dispatch, kind, exact, domain, module, sample) \
  {Op::id, schema, dispatch, OpKind::kind, Exactness::exact, Domain::domain, PythonModule::module, sample},
    DESCENT_FORALL_OPS(DESCENT_OP_ROW)
#undef DESCENT_OP_ROW
};
static_assert(sizeof(kRows) / sizeof(kRows[0]) == kNumOps);

// The table: each row's schema and names, with no kernel until the floors
// register theirs (Note [Registering the floors], floors/registration.cpp).
std::array<OpEntry, kNumOps>& table() {
  static std::array<OpEntry, kNumOps>* t = [] {
    auto* tab = new std::array<OpEntry, kNumOps>();
    for (const OpRow& row : kRows) {
      OpEntry& e = (*tab)[int(row.id)];
      e.id = row.id;
      e.kind = row.kind;
      e.exactness = row.exactness;
      e.domain = row.domain;
      e.python_module = row.module;
      e.sample = row.sample;
      e.dispatch = row.dispatch;
      e.schema = parse_schema(row.schema);
      e.name = trace::intern(e.schema.full_name());  // Note [Schema names and alias annotations]
      e.profiler_name = trace::intern(e.schema.qualified_name());
      e.python_name = trace::intern(e.schema.name);
    }
    return tab;
  }();
  return *t;
}

}  // namespace

const OpEntry& op_entry(Op op) { return table()[int(op)]; }
const std::array<OpEntry, kNumOps>& all_ops() { return table(); }

const OpEntry* find_op(std::string_view full_name) {
  for (const OpEntry& e : table())
    if (full_name == e.name) return &e;
  return nullptr;
}

namespace {

// Calls fn(runtime key) for every runtime key an alias (or runtime) key stands for.
template <typename Fn>
void for_each_runtime_key(DispatchKey key, Fn fn) {
  if (!is_alias(key)) {
    DESCENT_CHECK(is_runtime(key), ValueError, "cannot register for the ", dispatch_key_name(key), " key");
    fn(key);
    return;
  }
  const DispatchKeySet keys = alias_runtime_keys(key);
  for (int k = 1; k <= kNumRuntimeKeys; ++k) {
    if (keys.has(DispatchKey(k))) fn(DispatchKey(k));
  }
}

}  // namespace

// The fallback of each runtime key: what an op with nothing of its own there gets.
std::array<Kernel, kNumRuntimeKeys>& fallbacks() {
  static std::array<Kernel, kNumRuntimeKeys> f{};
  return f;
}
std::mutex& registration_mutex() {
  static std::mutex m;
  return m;
}
// Where each op's own kernels and each key's fallback were registered (registrations.h).
std::array<std::array<Registration, kNumRuntimeKeys>, kNumOps>& op_sites() {
  static auto* s = new std::array<std::array<Registration, kNumRuntimeKeys>, kNumOps>();
  return *s;
}
std::array<Registration, kNumRuntimeKeys>& fallback_sites() {
  static std::array<Registration, kNumRuntimeKeys> s{};
  return s;
}

Registration op_registration(const OpEntry& op, DispatchKey key) {
  if (!is_runtime(key) || int(op.id) >= kNumOps) return {};
  std::lock_guard<std::mutex> lock(registration_mutex());
  return op_sites()[int(op.id)][runtime_slot(key)];
}
Registration fallback_registration(DispatchKey key) {
  if (!is_runtime(key)) return {};
  std::lock_guard<std::mutex> lock(registration_mutex());
  return fallback_sites()[runtime_slot(key)];
}
Kernel fallback_kernel(DispatchKey key) {
  if (!is_runtime(key)) return {};
  std::lock_guard<std::mutex> lock(registration_mutex());
  return fallbacks()[runtime_slot(key)];
}

void OpEntry::refresh() {
  for (int slot = 0; slot < kNumRuntimeKeys; ++slot) {
    const Kernel& fb = fallbacks()[slot];
    // The op's own marks first, then its own kernel, then the key's fallback.
    kernels[slot] = own_kernels[slot] ? own_kernels[slot] : fb.fn;
    fallthrough[slot] = own_fallthrough[slot] != 0 ? own_fallthrough[slot] > 0 : !own_kernels[slot] && fb.fallthrough;
    const bool own_runs = own_kernels[slot] && !fallthrough[slot];
    unboxed[slot] = own_runs ? own_unboxed[slot] : nullptr;
    unboxed_signature[slot] = own_runs ? own_unboxed_signature[slot] : nullptr;
  }
  for (int b = 0; b <= kNumBackends; ++b) {
    DispatchKeySet keep = DispatchKeySet::from_repr((1u << kNumBackends) - 1);  // every backend bit
    for (int k = 1; k <= kNumRuntimeKeys; ++k) {
      const DispatchKey key = DispatchKey(k);
      const BackendComponent kb = backend_of(key);
      if (kb != BackendComponent::Invalid && int(kb) != b) continue;  // another backend's slot
      if (!fallthrough[runtime_slot(key)]) keep = keep | DispatchKeySet::functionality(functionality_of(key));
    }
    non_fallthrough[b] = keep;
  }
}

std::array<OpEntry, kNumOps>& ops_for_registration() { return table(); }
OpEntry& mutable_op_entry(Op op) { return ops_for_registration()[int(op)]; }

void register_op_kernel(OpEntry& e, DispatchKey key, Kernel k, const std::string& where) {
  std::lock_guard<std::mutex> lock(registration_mutex());
  for_each_runtime_key(key, [&](DispatchKey rk) {
    const int slot = runtime_slot(rk);
    DESCENT_CHECK(k.fallthrough || !e.own_kernels[slot] || !k.fn, ValueError, where, ": '", e.name,
                  "' already has a kernel for ", dispatch_key_name(rk));
    e.own_kernels[slot] = k.fallthrough ? nullptr : k.fn;
    e.own_fallthrough[slot] = k.fallthrough ? 1 : 0;
    e.own_unboxed[slot] = k.fallthrough ? nullptr : k.unboxed;
    e.own_unboxed_signature[slot] = k.fallthrough ? nullptr : k.signature;
    if (int(e.id) < kNumOps) op_sites()[int(e.id)][slot] = Registration{where, key};  // Library::def's: not kept
  });
  e.refresh();
}

void register_fallback(DispatchKey key, Kernel k, const std::string& where) {
  std::lock_guard<std::mutex> lock(registration_mutex());
  for_each_runtime_key(key, [&](DispatchKey rk) {
    fallbacks()[runtime_slot(rk)] = k;
    fallback_sites()[runtime_slot(rk)] = Registration{where, key};
  });
  for (OpEntry& e : ops_for_registration()) e.refresh();
  refresh_defined_ops();
}

KernelSlot swap_op_kernel(OpEntry& e, DispatchKey key, KernelSlot k) {
  DESCENT_CHECK(is_runtime(key), ValueError, "swap_op_kernel: ", dispatch_key_name(key), " is not a runtime key");
  std::lock_guard<std::mutex> lock(registration_mutex());
  const int slot = runtime_slot(key);
  KernelSlot old{e.own_kernels[slot], e.own_fallthrough[slot], e.own_unboxed[slot], e.own_unboxed_signature[slot]};
  e.own_kernels[slot] = k.boxed;
  e.own_fallthrough[slot] = k.fallthrough;
  e.own_unboxed[slot] = k.unboxed;
  e.own_unboxed_signature[slot] = k.signature;
  e.refresh();
  return old;
}

Kernel swap_fallback(DispatchKey key, Kernel k) {
  DESCENT_CHECK(is_runtime(key), ValueError, "swap_fallback: ", dispatch_key_name(key), " is not a runtime key");
  std::lock_guard<std::mutex> lock(registration_mutex());
  Kernel old = fallbacks()[runtime_slot(key)];
  fallbacks()[runtime_slot(key)] = k;
  for (OpEntry& e : ops_for_registration()) e.refresh();
  refresh_defined_ops();
  return old;
}

BoxedKernel register_kernel(Op op, DispatchKey key, BoxedKernel k) {
  DESCENT_CHECK(is_runtime(key), ValueError, "register_kernel: ", dispatch_key_name(key), " is not a runtime key");
  OpEntry& e = table()[int(op)];
  std::lock_guard<std::mutex> lock(registration_mutex());
  BoxedKernel old = e.own_kernels[runtime_slot(key)];
  e.own_kernels[runtime_slot(key)] = k;
  e.own_unboxed[runtime_slot(key)] = nullptr;  // a test's boxed kernel replaces both conventions
  e.refresh();
  return old;
}

namespace {
void mark_fallthrough(Op op, DispatchKey key, int8_t mark) {
  OpEntry& e = table()[int(op)];
  std::lock_guard<std::mutex> lock(registration_mutex());
  for_each_runtime_key(key, [&](DispatchKey rk) { e.own_fallthrough[runtime_slot(rk)] = mark; });
  e.refresh();
}
}  // namespace

void set_fallthrough(Op op, DispatchKey key, bool on) { mark_fallthrough(op, key, on ? 1 : -1); }
void clear_fallthrough(Op op, DispatchKey key) { mark_fallthrough(op, key, 0); }

// Note [Dispatch key priority]: the Autograd keys fall through for the ops
// that have no Autograd kernel of their own (the factories, the comparisons:
// Note [One derivative per op], floors/autograd/derivatives.cpp), and every
// op but the in-place and view ops falls through ADInplaceOrView (Note
// [ADInplaceOrView]); c10 registers the same fallthrough fallback for
// ADInplaceOrView, and for the Autograd keys of ops with no derivative. The Autocast keys fall through (descent has no autocast);
// BackendSelect falls through for every op but those with a device argument
// (the factories, empty_strided, _to_copy), which register their own kernel
// there (backend_select.cpp). Python falls through until the binding puts
// its fallback there (Note [The Python key], floors/binding/python_dispatch.cpp).
void register_fallbacks() {
  for (DispatchKey k :
       {DispatchKey::Autograd, DispatchKey::ADInplaceOrView, DispatchKey::AutocastCPU, DispatchKey::AutocastCUDA,
        DispatchKey::AutocastSim, DispatchKey::BackendSelect, DispatchKey::Python}) {
    Library(Library::IMPL, "_", k).fallback(Kernel::Fallthrough());  // c10: TORCH_LIBRARY_IMPL(_, key, m)
  }
}

// Floor 3's own: the fallbacks, then the kernels of its two keys.
void register_dispatch_kernels() {
  register_fallbacks();
  Library backend_select(Library::IMPL, "aten", DispatchKey::BackendSelect);
  register_backend_select_kernels(backend_select);
  Library inplace_or_view(Library::IMPL, "aten", DispatchKey::ADInplaceOrView);
  register_inplace_or_view_kernels(inplace_or_view);
}

// [SECTION] The thread's include and exclude sets ----------------------------

LocalKeys& local_keys() {
  thread_local LocalKeys keys;
  return keys;
}
DispatchKeySet apply_local_keys(DispatchKeySet keys) {
  const LocalKeys& local = local_keys();
  return (keys | local.included) - local.excluded;
}
ExcludeKeyGuard::ExcludeKeyGuard(DispatchKeySet keys) : saved_(local_keys().excluded) {
  local_keys().excluded = saved_ | keys;
}
ExcludeKeyGuard::~ExcludeKeyGuard() { local_keys().excluded = saved_; }
IncludeKeyGuard::IncludeKeyGuard(DispatchKeySet keys) : saved_(local_keys().included) {
  local_keys().included = saved_ | keys;
}
IncludeKeyGuard::~IncludeKeyGuard() { local_keys().included = saved_; }

void set_inference_mode(bool enabled) {
  autograd_state() = AutogradState{!enabled, enabled};
  LocalKeys& local = local_keys();
  local.included =
      enabled ? local.included.remove(DispatchKey::ADInplaceOrView) : local.included.add(DispatchKey::ADInplaceOrView);
  // c10's autograd_dispatch_keyset: the Autograd functionality bit with no backend bit, which removes
  // every backend's Autograd key from a call (Note [The thread's key sets as descent prints them]).
  const DispatchKeySet autograd = DispatchKeySet::functionality(Functionality::AutogradFunctionality);
  local.excluded = enabled ? local.excluded | autograd : local.excluded - autograd;
}
InferenceMode::InferenceMode(bool enabled) : saved_state_(autograd_state()), saved_keys_(local_keys()) {
  set_inference_mode(enabled);
}
InferenceMode::~InferenceMode() {
  autograd_state() = saved_state_;
  local_keys() = saved_keys_;
}

// [SECTION] Calling an op -------------------------------------------------------

// Note [Computing the key set]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A call's key set is computed fresh every time, as c10 computes it:
//   1. the union of the key sets of its tensor arguments, those in a
//      Tensor[] or Tensor?[] list too (a CPU tensor contributes CPU,
//      ADInplaceOrView, AutogradCPU and AutocastCPU, whether or not it
//      requires grad: tensor.cpp); a call whose only list is empty gets a
//      CPU tensor's keys;
//   2. plus the keys this thread includes (BackendSelect and ADInplaceOrView
//      by default, so a factory, with no tensor, still has a key to run);
//   3. minus the keys this thread excludes (every Autocast key by default;
//      the Autograd keys below autograd and in inference mode).
// The op's fallthrough keys are then masked out (for the call's backend) and
// the highest key left picks the kernel: for `x + 1` on CPU tensors,
// CPU|BackendSelect|ADInplaceOrView|AutogradCPU falls through the last three
// and runs CPU. A kernel passes the call down with redispatch_boxed(),
// giving the set below its own key.
DispatchKeySet compute_key_set(const OpEntry&, const Stack& stack) {
  DispatchKeySet ks;
  bool empty_list = false;
  for (int i = 0; i < stack.size(); ++i) {
    if (stack[i].is_tensor()) ks = ks | stack[i].to_tensor().impl()->keys;
    if (stack[i].is_tensor_list()) {  // index's indices and cat's tensors too, as c10's multi_dispatch_key_set
      empty_list |= stack[i].to_tensor_list().size() == 0;
      for (const Tensor& t : stack[i].to_tensor_list())
        if (t.defined()) ks = ks | t.impl()->keys;
    }
  }
  // A call whose tensors would all be in an empty list (cat([])) names no
  // backend: it goes to the CPU's, whose kernel raises the op's own error
  // ("torch.cat(): expected a non-empty list of Tensors"), as in PyTorch.
  if (empty_list && ks.highest_backend() == BackendComponent::Invalid) ks = tensor_keys(BackendComponent::CPU, false);
  return apply_local_keys(ks);
}

namespace {

void fill_defaults(const OpEntry& e, Stack& stack) {
  const auto& args = e.schema.args;
  DESCENT_CHECK(stack.size() <= int(args.size()), TypeError, e.python_name, "() takes ", args.size(), " arguments but ",
                stack.size(), " were given");
  for (int i = stack.size(); i < int(args.size()); ++i) {
    DESCENT_CHECK(args[i].has_default, TypeError, e.python_name, "() missing required argument '", args[i].name,
                  "' (pos ", i + 1, ")");
    stack.push(args[i].default_value);
  }
}

void run_kernel(const OpEntry& e, DispatchKeySet ks, Stack& stack, trace::ScopedSpan& span) {
  const DispatchKeySet live = ks & e.non_fallthrough[int(ks.highest_backend())];
  const DispatchKey key = DESCENT_DECIDES(span, live.highest());  // Note [Where a span decided]
  if (span.active()) {
    span.arg("keyset", ks.name());
    span.arg("kernel", dispatch_key_name(key));
    const DispatchKeySet skipped = ks - live;  // the fallthrough keys this call passed, backends kept for naming
    if (skipped.highest_functionality() != Functionality::None) span.arg("fallthrough", skipped.name());
  }
  run_boxed_kernel(e, ks, live, key, stack);
}

}  // namespace

void run_boxed_kernel(const OpEntry& e, DispatchKeySet ks, DispatchKeySet live, DispatchKey key, Stack& stack) {
  const BoxedKernel k = e.kernel(key);
  // The message's last part: no fallback at BackendSelect means nothing was
  // ever registered, so the program never called register_floors
  // (floors/registration.h).
  DESCENT_CHECK(k != nullptr, NotImplementedError, "Could not run '", e.name, "' with arguments from the '",
                dispatch_key_name(key), "' backend: no kernel is registered for that key (key set ", ks.str(), ")",
                fallbacks()[runtime_slot(DispatchKey::BackendSelect)].fallthrough
                    ? ""
                    : "; no floor has registered its kernels: call descent::register_floors() first");
  if (stack.size() != int(e.schema.args.size())) fill_defaults(e, stack);
  k(e, live, stack);
}

void call_boxed(Op op, Stack& stack) { call_boxed(op_entry(op), stack); }

void call_boxed(const OpEntry& e, Stack& stack) {
  trace::ScopedSpan span(trace::Floor::Dispatch, e.profiler_name);
  if (stack.size() != int(e.schema.args.size())) fill_defaults(e, stack);
  run_kernel(e, compute_key_set(e, stack), stack, span);
}

// Note [A span per redispatch]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Here descent differs from PyTorch on purpose. PyTorch records an op once:
// Dispatcher::call opens the op's RecordFunction (what torch.profiler shows
// as `aten::add`), and Dispatcher::redispatch opens none, so the Autograd
// kernel passing the call down to the CPU kernel adds no event. descent opens
// a floor-3 span for every redispatch as well (`aten::add redispatch=true
// keyset=CPU`), because that walk down the key set is what this floor
// teaches: one `x + y` with an input that requires grad shows `aten::add`
// two or three times here, once per kernel that ran. To compare with
// torch.profiler, count only the span without redispatch=true. (A kernel
// that calls another op through call() — rsub's sub, mse_loss's mean — opens
// a first span, as PyTorch opens a RecordFunction for it.)
void redispatch_boxed(const OpEntry& e, DispatchKeySet keys, Stack& stack) {
  trace::ScopedSpan span(trace::Floor::Dispatch, e.profiler_name);
  span.arg("redispatch", true);
  run_kernel(e, keys, stack, span);
}

}  // namespace descent
