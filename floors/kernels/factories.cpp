// Factory kernels: empty, zeros, ones, full, arange, linspace, rand, randn.
//
// They reach the CPU, Sim or CUDA kernel through BackendSelect
// (floors/dispatch/backend_select.cpp), which read their `device` argument:
// one kernel for every device, whose loop alone depends on it. rand and
// randn draw from two generators: the CPU's is PyTorch's (Note [PyTorch's
// CPU random stream], cpu_generator.h), a device's is counter-based (Note
// [Counter-based random numbers], random.h).
#include <cmath>
#include <mutex>

#include "floors/kernels/cpu_generator.h"
#include "floors/kernels/elementwise.h"
#include "floors/kernels/kernels.h"
#include "floors/kernels/random.h"
#include "floors/kernels/roofline.h"
#include "tracer/tracer.h"

namespace descent::kernels {

// [SECTION] Generator state -------------------------------------------------------

// Two generators, as in PyTorch (one per device type): the CPU's mt19937
// (cpu_generator.h) and the devices' Philox counters (random.h, whose draws
// the device loops read). Before any manual_seed both start from 0x5eed, so
// an unseeded run repeats itself (PyTorch's default seed is random).

namespace {
constexpr uint64_t kDefaultSeed = 0x5eed;
std::mutex g_gen_mu;  // the device generator's
GeneratorState g_gen{kDefaultSeed, 0};
std::mutex g_cpu_gen_mu;  // the CPU generator's
CpuGenerator g_cpu_gen{Mt19937(kDefaultSeed)};
}  // namespace

void manual_seed(uint64_t seed) {
  {
    std::lock_guard<std::mutex> lock(g_cpu_gen_mu);
    g_cpu_gen.seed(seed);
  }
  std::lock_guard<std::mutex> lock(g_gen_mu);
  g_gen = {seed, 0};
}

LockedCpuGenerator lock_cpu_generator() { return {std::unique_lock<std::mutex>(g_cpu_gen_mu), g_cpu_gen}; }

GeneratorState reserve_counters(uint64_t n) {
  std::lock_guard<std::mutex> lock(g_gen_mu);
  GeneratorState s = g_gen;
  g_gen.offset += n;
  return s;
}

// [SECTION] Kernels ---------------------------------------------------------------

namespace {

// Every factory's schema ends with `ScalarType? dtype, Device? device`.
ScalarType dtype_arg(const Stack& s, ScalarType fallback) {
  const IValue& v = s[s.size() - 2];
  return v.is_none() ? fallback : v.to_scalar_type();
}

// The output on the `device` argument's device (BackendSelect brought the
// call here from it). A device's factories fill it with a kernel of the
// device loops (Note [One kernel body, two devices], device_loops.h).
// Laid out by `strides` when given (empty_strided), else row-major.
Tensor make_output(trace::ScopedSpan& span, const Stack& s, const DimVector& sizes, ScalarType dt,
                   const DimVector* strides = nullptr, bool writes = true) {
  const IValue& dev = s[s.size() - 1];
  const Device device = dev.is_none() ? Device{} : dev.to_device();
  Tensor out = strides ? empty_strided_tensor(sizes, *strides, dt, device) : empty_tensor(sizes, dt, device);
  const char* v =
      DESCENT_DECIDES(span, out.device().type == DeviceType::CPU ? "reference" : device::variant(out.device()));
  span.arg("dtype", dtype_name(dt));
  span.arg("numel", out.numel());
  span.arg("variant", v);
  if (writes) record_work(span, nbytes(out), 0);  // a factory writes its output once (empty: not at all)
  last_variant() = v;
  return out;
}
bool on_device(const Tensor& out) { return out.device().type != DeviceType::CPU; }

void fill(const OpEntry& op, const Tensor& out, Scalar v) {
  visit_dtype(out.dtype(), [&]<typename T>() {
    T x = v.to<T>(op.python_name, "fill_value");  // Note [Checked scalar conversion]
    if (on_device(out)) return device::fill(out, v);
    T* p = out.data<T>();
    for (int64_t i = 0; i < out.numel(); ++i) p[i] = x;
  });
}

void fill_kernel(const OpEntry& op, DispatchKeySet, Stack& s) {
  trace::ScopedSpan span(trace::Floor::Kernels, op.profiler_name);
  Scalar value = op.id == Op::ones ? Scalar(int64_t{1}) : Scalar(int64_t{0});
  ScalarType fallback = kDefaultFloat;
  if (op.id == Op::full) {  // full infers its dtype from the fill value, like PyTorch
    value = s[1].to_scalar();
    fallback = value.is_floating() ? kDefaultFloat : value.type();
  }
  Tensor out = make_output(span, s, s[0].to_int_list(), dtype_arg(s, fallback), nullptr, op.id != Op::empty);
  if (op.id != Op::empty) fill(op, out, value);
  s.set_result(std::move(out));
}

// aten::empty_strided(size, stride, *, dtype, device): new memory laid out
// by the given strides, its elements unset. _to_copy makes its result with
// it (a dense source's strides on the same device, row-major between
// devices: copy_kernels.cpp), as aten's does.
void empty_strided_kernel(const OpEntry& op, DispatchKeySet, Stack& s) {
  trace::ScopedSpan span(trace::Floor::Kernels, op.profiler_name);
  const DimVector strides = s[1].to_int_list();
  s.set_result(make_output(span, s, s[0].to_int_list(), dtype_arg(s, kDefaultFloat), &strides, false));
}

// The length of arange(start, end, step) for int64 bounds, exact: end - start
// and |step| are taken as unsigned 64-bit numbers, which hold them whole even
// at the ends of int64 (arange(-2**63, 2**63 - 1, 2**62)), where a double
// would round and int64 arithmetic would overflow.
uint64_t arange_length(int64_t start, int64_t end, int64_t step) {
  uint64_t span = step > 0 ? uint64_t(end) - uint64_t(start) : uint64_t(start) - uint64_t(end);
  uint64_t stride = step > 0 ? uint64_t(step) : uint64_t(0) - uint64_t(step);
  return span / stride + (span % stride != 0);
}

void arange_kernel(const OpEntry& op, DispatchKeySet, Stack& s) {
  trace::ScopedSpan span(trace::Floor::Kernels, op.profiler_name);
  bool has_start = op.id == Op::arange_start_step;
  Scalar start = has_start ? s[0].to_scalar() : Scalar(int64_t{0});
  Scalar end = s[has_start ? 1 : 0].to_scalar();
  Scalar step = has_start ? s[2].to_scalar() : Scalar(int64_t{1});
  bool any_float = start.is_floating() || end.is_floating() || step.is_floating();
  ScalarType dt = dtype_arg(s, any_float ? kDefaultFloat : ScalarType::Int64);
  double d0 = start.to_double(), d1 = end.to_double(), ds = step.to_double();
  DESCENT_CHECK(ds != 0, Error, "arange(): step must be nonzero");
  DESCENT_CHECK(std::isfinite(d0) && std::isfinite(d1), Error, "arange(): unsupported range: ", start.str(), " -> ",
                end.str());
  constexpr uint64_t kMaxLength = uint64_t(1) << 40;  // elements
  uint64_t n;
  if (!any_float) {  // integer bounds: compared and counted exactly
    int64_t i0 = start.to_int(), i1 = end.to_int(), is = step.to_int();
    DESCENT_CHECK((is > 0 && i1 >= i0) || (is < 0 && i1 <= i0), Error,
                  "arange(): upper bound and larger bound inconsistent with step sign");
    n = arange_length(i0, i1, is);
  } else {
    DESCENT_CHECK((ds > 0 && d1 >= d0) || (ds < 0 && d1 <= d0), Error,
                  "arange(): upper bound and larger bound inconsistent with step sign");
    double dn = std::ceil((d1 - d0) / ds);
    DESCENT_CHECK(dn < double(kMaxLength), Error, "arange(): too many elements (", dn, ")");
    n = uint64_t(dn);
  }
  DESCENT_CHECK(n < kMaxLength, Error, "arange(): too many elements (", n, ")");
  Tensor out = make_output(span, s, {int64_t(n)}, dt);
  visit_dtype(dt, [&]<typename T>() {
    if (on_device(out)) {
      const bool fp = is_float_v<T>;  // float16 and bfloat16 too (not std::is_floating_point)
      const int64_t i0 = fp ? 0 : start.to<int64_t>("arange", "start"),
                    is = fp ? 0 : step.to<int64_t>("arange", "step");
      return device::arange(out, d0, ds, i0, is);
    }
    T* p = out.data<T>();
    if constexpr (is_float_v<T>) {  // float16 and bfloat16 too: their start and step are not integers
      for (int64_t i = 0; i < out.numel(); ++i) p[i] = T(d0 + double(i) * ds);
    } else {
      // start + i * step in int64, wrapping: every element lies between start
      // and end, so for int64 bounds the wrapped sum is the exact value.
      int64_t i0 = start.to<int64_t>("arange", "start"), is = step.to<int64_t>("arange", "step");
      for (int64_t i = 0; i < out.numel(); ++i) p[i] = T(wrap_add(i0, wrap_mul(i, is)));
    }
  });
  s.set_result(std::move(out));
}

// Note [linspace fills from both ends]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// linspace(start, end, steps) is float32 unless a dtype is given (as
// PyTorch's default dtype, whatever the bounds). PyTorch's CPU kernel
// computes step = (end - start) / (steps - 1) once, then element i as
// start + step * i for the first half (i < steps / 2) and end - step *
// (steps - 1 - i) for the second, so both ends come out exact and the error
// of the steps is spread from both sides. In which type, and how rounded, is
// what makes its values what they are, so descent repeats it (LinspaceF,
// elementwise.h), on every device:
//   - float32 and float64: step in the type itself; the compiler contracts
//     start + step * i into one fused multiply-add, so descent calls
//     std::fma. Measured on the H200 host (PyTorch 2.11): linspace(-pi, pi,
//     2000) equals a fused computation in all 2000 float32 elements and an
//     unfused one in only 1350; std::fma rounds once on every compiler,
//     flag and device (CUDA's fma is IEEE too), so sim:0 and cuda:N give
//     the CPU's bits;
//   - int64: step in double, the element truncated to int64;
//   - float16 and bfloat16: every operation rounds to 16 bits, i converted
//     to the type too, as c10::Half's and c10::BFloat16's operators do
//     (so linspace(0, 1, 3000) in float16 repeats values near its end,
//     as PyTorch's does).
// start and end are converted to the dtype with Scalar's check first (an
// infinite end of an int64 linspace raises, as in PyTorch). steps == 1
// gives [start] and steps == 0 an empty tensor, for every dtype; longer
// linspaces of bool have no kernel ("linspace_cpu" not implemented for 'Bool').
// PyTorch's CUDA kernel has its own formula; on the H200 host it gave the
// CPU's float32 values for linspace(-pi, pi, 2000).
void linspace_kernel(const OpEntry& op, DispatchKeySet, Stack& s) {
  trace::ScopedSpan span(trace::Floor::Kernels, op.profiler_name);
  const Scalar start = s[0].to_scalar(), end = s[1].to_scalar();
  const int64_t steps = s[2].to_int();
  DESCENT_CHECK(steps >= 0, Error, "number of steps must be non-negative");
  const ScalarType dt = dtype_arg(s, kDefaultFloat);
  DESCENT_CHECK(steps < 2 || dt != ScalarType::Bool, NotImplementedError,
                "\"linspace_cpu\" not implemented for 'Bool'");
  Tensor out = make_output(span, s, {steps}, dt);
  if (steps == 1) {
    visit_dtype(dt, [&]<typename T>() {
      T x = start.to<T>(op.python_name, "start");
      if (on_device(out)) return device::fill(out, start);
      *out.data<T>() = x;
    });
  } else if (steps > 1) {
    visit_dtype(dt, [&]<typename T>() {
      if constexpr (!std::is_same_v<T, bool>) {
        const LinspaceF<T> f = linspace_fn<T>(start, end, steps);  // the checks, before any launch
        if (on_device(out)) return device::linspace(out, start, end);
        T* p = out.data<T>();
        for (int64_t i = 0; i < steps; ++i) p[i] = f(i);
      }
    });
  }
  s.set_result(std::move(out));
}

void random_kernel(const OpEntry& op, DispatchKeySet, Stack& s) {
  trace::ScopedSpan span(trace::Floor::Kernels, op.profiler_name);
  ScalarType dt = dtype_arg(s, kDefaultFloat);
  DESCENT_CHECK(is_floating(dt), Error, op.python_name, "(): expected a floating point dtype, got ", dtype_name(dt));
  Tensor out = make_output(span, s, s[0].to_int_list(), dt);
  const bool normal = op.id == Op::randn;
  // A device draws from its counters (random.h): the same numbers on sim:0
  // and on CUDA but for randn's last bits, and not the CPU's.
  if (on_device(out)) {
    GeneratorState g = reserve_counters(uint64_t(out.numel()));
    device::random(out, normal, g.seed, g.offset);
    s.set_result(std::move(out));
    return;
  }
  // The CPU draws torch's stream (cpu_generator.h): rand is uniform_(0, 1),
  // randn normal_(0, 1) into the fresh, contiguous output.
  visit_dtype(dt, [&]<typename T>() {
    if constexpr (is_float_v<T>) {
      LockedCpuGenerator g = lock_cpu_generator();
      if (normal)
        normal_fill(g.gen, out.data<T>(), out.numel());
      else
        uniform_fill(g.gen, out.data<T>(), out.numel());
    }
  });
  s.set_result(std::move(out));
}

}  // namespace

void register_factory_kernels(Library& m) {
  for (Op op : {Op::empty, Op::zeros, Op::ones, Op::full}) m.impl(op, fill_kernel);
  m.impl(Op::empty_strided, empty_strided_kernel);
  m.impl(Op::arange, arange_kernel);
  m.impl(Op::arange_start_step, arange_kernel);
  m.impl(Op::linspace, linspace_kernel);
  m.impl(Op::rand, random_kernel);
  m.impl(Op::randn, random_kernel);
}

}  // namespace descent::kernels
