// Floor 3, the dispatcher: the op table, key sets, fallthrough and redispatch.
#include "floors/dispatch/dispatcher.h"

#include "tracer/tracer.h"

namespace descent {

// [SECTION] The table ---------------------------------------------------------

namespace {

struct OpRow {
  Op id;
  const char* schema;
  OpKind kind;
  Exactness exactness;
  Domain domain;
  const char* sample;
};
constexpr OpRow kRows[] = {
#define DESCENT_OP_ROW(id, schema, kind, exact, domain, sample) \
  {Op::id, schema, OpKind::kind, Exactness::exact, Domain::domain, sample},
    DESCENT_FORALL_OPS(DESCENT_OP_ROW)
#undef DESCENT_OP_ROW
};
static_assert(sizeof(kRows) / sizeof(kRows[0]) == kNumOps);

std::array<OpEntry, kNumOps>& table() {
  static std::array<OpEntry, kNumOps>* t = [] {
    auto* tab = new std::array<OpEntry, kNumOps>();
    for (const OpRow& row : kRows) {
      OpEntry& e = (*tab)[int(row.id)];
      e.id = row.id;
      e.kind = row.kind;
      e.exactness = row.exactness;
      e.domain = row.domain;
      e.sample = row.sample;
      e.schema = parse_schema(row.schema);
      e.name = trace::intern(e.schema.full_name());  // Note [Schema names and alias annotations]
      e.profiler_name = trace::intern(e.schema.qualified_name());
      e.python_name = trace::intern(e.schema.name);
      // Until floor 4 exists every op falls through Autograd; only factories
      // stop at BackendSelect (Note [Dispatch key priority]).
      e.fallthrough = DispatchKeySet(DispatchKey::Autograd);
      if (row.kind != OpKind::Factory) e.fallthrough = e.fallthrough.add(DispatchKey::BackendSelect);
    }
    Registrar r(*tab);
    register_backend_select_kernels(r);
    register_cpu_kernels(r);
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

void Registrar::fallthrough(Op op, DispatchKey key, bool on) {
  OpEntry& e = table_[int(op)];
  e.fallthrough = on ? e.fallthrough.add(key) : e.fallthrough.remove(key);
}

BoxedKernel register_kernel(Op op, DispatchKey key, BoxedKernel k) {
  OpEntry& e = table()[int(op)];
  BoxedKernel old = e.kernels[int(key)];
  e.kernels[int(key)] = k;
  return old;
}

void set_fallthrough(Op op, DispatchKey key, bool on) { Registrar(table()).fallthrough(op, key, on); }

// [SECTION] The thread's include and exclude sets ----------------------------

LocalKeys& local_keys() {
  thread_local LocalKeys keys;
  return keys;
}
DispatchKeySet apply_local_keys(DispatchKeySet keys) {
  const LocalKeys& local = local_keys();
  return (keys | local.included) - local.excluded;
}
ExcludeKeyGuard::ExcludeKeyGuard(DispatchKey k) : saved_(local_keys().excluded) {
  local_keys().excluded = saved_.add(k);
}
ExcludeKeyGuard::~ExcludeKeyGuard() { local_keys().excluded = saved_; }
IncludeKeyGuard::IncludeKeyGuard(DispatchKey k) : saved_(local_keys().included) {
  local_keys().included = saved_.add(k);
}
IncludeKeyGuard::~IncludeKeyGuard() { local_keys().included = saved_; }

// [SECTION] Calling an op -------------------------------------------------------

// Note [Computing the key set]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A call's key set is computed fresh every time, from three sources:
//   1. the union of the key sets of its tensor arguments (each tensor
//      contributes its backend key, plus Autograd when it requires grad);
//   2. BackendSelect, which every call carries (ops that are not factories
//      fall through it), plus the keys this thread includes;
//   3. minus the keys this thread excludes (NoGradGuard excludes Autograd).
// The op's fallthrough keys are then removed and the highest key left picks
// the kernel. A kernel passes the call down with redispatch_boxed(), giving
// the set below its own key.
DispatchKeySet compute_key_set(const OpEntry&, const Stack& stack) {
  DispatchKeySet ks(DispatchKey::BackendSelect);
  for (int i = 0; i < stack.size(); ++i)
    if (stack[i].is_tensor()) ks = ks | stack[i].to_tensor().impl()->keys;
  return apply_local_keys(ks);
}

namespace {

void fill_defaults(const OpEntry& e, Stack& stack) {
  const auto& args = e.schema.args;
  DESCENT_CHECK(stack.size() <= int(args.size()), TypeError, e.python_name, "() takes ", args.size(),
                " arguments but ", stack.size(), " were given");
  for (int i = stack.size(); i < int(args.size()); ++i) {
    DESCENT_CHECK(args[i].has_default, TypeError, e.python_name, "() missing required argument '", args[i].name, "' (pos ",
                  i + 1, ")");
    stack.push(args[i].default_value);
  }
}

void run_kernel(const OpEntry& e, DispatchKeySet ks, Stack& stack, trace::ScopedSpan& span) {
  DispatchKeySet live = ks - e.fallthrough;
  DispatchKey key = live.highest();
  BoxedKernel k = e.kernels[int(key)];
  if (span.active()) {
    span.arg("keyset", ks.name());
    span.arg("kernel", dispatch_key_name(key));
    if (!(ks & e.fallthrough).empty()) span.arg("fallthrough", (ks & e.fallthrough).name());
  }
  DESCENT_CHECK(k != nullptr, NotImplementedError, "Could not run '", e.name, "' with arguments from the '",
                dispatch_key_name(key), "' backend: no kernel is registered for that key (key set ", ks.str(), ")");
  k(e, live, stack);
}

}  // namespace

void call_boxed(Op op, Stack& stack) {
  const OpEntry& e = op_entry(op);
  trace::ScopedSpan span(trace::Floor::Dispatch, e.profiler_name);
  if (stack.size() != int(e.schema.args.size())) fill_defaults(e, stack);
  run_kernel(e, compute_key_set(e, stack), stack, span);
}

void redispatch_boxed(const OpEntry& e, DispatchKeySet keys, Stack& stack) {
  trace::ScopedSpan span(trace::Floor::Dispatch, e.profiler_name);
  span.arg("redispatch", true);
  run_kernel(e, keys, stack, span);
}

}  // namespace descent
