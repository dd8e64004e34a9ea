// Factory kernels: empty, zeros, ones, full, arange, linspace, rand, randn.
//
// They reach the CPU, Sim or CUDA kernel through BackendSelect
// (floors/dispatch/backend_select.cpp), which read their `device` argument:
// one kernel for every device, whose loop alone depends on it. rand and
// randn draw from two generators: the CPU's is PyTorch's (Note [PyTorch's
// CPU random stream], cpu_generator.h), a device's is counter-based (Note
// [Counter-based random numbers], random.h).
#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>
#include <vector>

#include "floors/kernels/boxed.h"
#include "floors/kernels/cpu/cpu_generator.h"
#include "floors/kernels/elementwise.h"
#include "floors/kernels/kernels.h"
#include "floors/kernels/device/random.h"
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
  if (op.id == Op::zeros)  // aten's zeros_symint checks first, in its own words; the others reach empty's
    for (int64_t d : s[0].to_int_list()) DESCENT_CHECK(d >= 0, Error, "zeros: Dimension size must be non-negative.");
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
  DESCENT_CHECK(ds != 0, Error, "step must be nonzero");
  DESCENT_CHECK(std::isfinite(d0) && std::isfinite(d1), Error, "unsupported range: ", start.str(), " -> ", end.str());
  constexpr uint64_t kMaxLength = uint64_t(1) << 40;  // elements
  uint64_t n;
  if (!any_float) {  // integer bounds: compared and counted exactly
    int64_t i0 = start.to_int(), i1 = end.to_int(), is = step.to_int();
    DESCENT_CHECK((is > 0 && i1 >= i0) || (is < 0 && i1 <= i0), Error,
                  "upper bound and lower bound inconsistent with step sign");
    n = arange_length(i0, i1, is);
  } else {
    DESCENT_CHECK((ds > 0 && d1 >= d0) || (ds < 0 && d1 <= d0), Error,
                  "upper bound and lower bound inconsistent with step sign");
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
  // PyTorch has no check of its own: the dispatch over the floating types in
  // the draw's kernel refuses the dtype, naming itself (AT_DISPATCH's
  // NotImplementedError): uniform_'s check_uniform_bounds for rand,
  // normal_kernel_cpu for randn (on every device here: the same words).
  DESCENT_CHECK(is_floating(dt), NotImplementedError, "\"",
                op.id == Op::randn ? "normal_kernel_cpu" : "check_uniform_bounds", "\" not implemented for '",
                type_word(dt), "'");
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

// aten::uniform_(self, from, to) and aten::normal_(self, mean, std): self's
// elements drawn from torch's CPU stream, as aten's CPU kernels draw them
// (Note [PyTorch's CPU random stream]): uniform_ one uniform_real(from, to)
// an element, normal_ normal_fill (Box-Muller blocks from 16 contiguous
// elements on). rand_like and randn_like are empty_like and these (Note
// [Factories like a tensor], composites.cpp). A self that is not
// contiguous is drawn in row-major order, into a contiguous copy first
// (aten draws in its iterator's order, which for a permuted self is its
// memory's; normal_ of one uses one normal_double an element). The checks
// are aten's, in its words. A device draws from its own counters, as its
// rand and randn do (Note [Counter-based random numbers]), scaled by mul_
// and add_ where from/to or mean/std are not 0 and 1.
void random_inplace_kernel(const OpEntry& op, DispatchKeySet, Stack& s) {
  trace::ScopedSpan span(trace::Floor::Kernels, op.profiler_name);
  const Tensor& self = s[0].to_tensor();
  const double a = s[1].to_double(), b = s[2].to_double();
  const bool normal = op.id == Op::normal_;
  DESCENT_CHECK(is_floating(self.dtype()), NotImplementedError, "\"",
                normal ? "normal_kernel_cpu" : "check_uniform_bounds", "\" not implemented for '",
                type_word(self.dtype()), "'");
  DESCENT_CHECK(normal || a <= b, Error, "uniform_ expects to return a [from, to) range, but found from=", a,
                " > to=", b);
  DESCENT_CHECK(!normal || b >= 0.0, Error, "normal expects std >= 0.0, but found std ", b);
  const bool direct = self.is_contiguous();
  Tensor out = direct ? self : empty_tensor(self.sizes(), self.dtype(), self.device());
  if (on_device(self)) {  // the device's counters, as its rand and randn, then scaled by the device's own ops
    GeneratorState g = reserve_counters(uint64_t(out.numel()));
    device::random(out, normal, g.seed, g.offset);
    const double scale = normal ? b : b - a;
    if (scale != 1) call(Op::mul_, out, scalar_tensor(Scalar(scale)));
    if (a != 0) call(Op::add_, out, scalar_tensor(Scalar(a)), Scalar(int64_t{1}));
    if (!direct) call(Op::copy_, self, out, false);
    last_variant() = device::variant(self.device());
    return s.set_result(Tensor(self));
  }
  visit_dtype(self.dtype(), [&]<typename T>() {
    if constexpr (is_float_v<T>) {
      auto to_t = [](double v) {  // through float for the 16-bit types, as c10's Half(double)
        if constexpr (is_reduced_float_v<T>)
          return T(float(v));
        else
          return T(v);
      };
      LockedCpuGenerator g = lock_cpu_generator();
      T* p = out.data<T>();
      if (normal && direct) {
        normal_fill(g.gen, p, out.numel(), a, b);
      } else if (normal) {
        for (int64_t i = 0; i < out.numel(); ++i) p[i] = to_t(normal_double(g.gen, a, b));
      } else {
        for (int64_t i = 0; i < out.numel(); ++i) p[i] = T(uniform_real<T>(g.gen, to_t(a), to_t(b)));
      }
    }
  });
  if (!direct) call(Op::copy_, self, out, false);
  last_variant() = "reference";
  s.set_result(Tensor(self));
}

// aten::random_.from(self, from, to): integers in [from, to) drawn as aten's
// random_from_to does (one word, or two for a range of 2**32 or more); to
// None is the dtype's largest value, inclusive (2**digits for a float, as
// aten's random_). randint and randint_like are empty then this (Note
// [Factories like a tensor]). from and to - 1 must fit the dtype, in
// aten's words.
void random_from_kernel(const OpEntry& op, DispatchKeySet, Stack& s) {
  trace::ScopedSpan span(trace::Floor::Kernels, op.profiler_name);
  const Tensor& self = s[0].to_tensor();
  const int64_t from = s[1].to_int();
  int64_t lo = 0, hi = 0;  // the dtype's range, as exact integers
  visit_dtype(self.dtype(), [&]<typename T>() {
    if constexpr (std::is_same_v<T, bool>) {
      hi = 1;
    } else if constexpr (std::is_integral_v<T>) {
      lo = int64_t(std::numeric_limits<T>::lowest()), hi = int64_t(std::numeric_limits<T>::max());
    } else {
      hi = int64_t(1) << kUniformDigits<T>, lo = -hi;
    }
  });
  DESCENT_CHECK(from >= lo && from <= hi, Error, "from is out of bounds for ", type_meta_name(self.dtype()));
  uint64_t range;
  if (s[2].is_none()) {
    DESCENT_CHECK(from <= hi, Error,
                  "random_ expects 'from' casted to dtype to be less than or equal to 'to_inc' "
                  "casted to dtype, but got from=",
                  from, " > to_inc=", hi);
    range = uint64_t(hi) - uint64_t(from) + 1;
  } else {
    const int64_t to = s[2].to_int();
    DESCENT_CHECK(from < to, Error, "random_ expects 'from' to be less than 'to', but got from=", from, " >= to=", to);
    DESCENT_CHECK(to - 1 <= hi && to - 1 >= lo, Error, "to - 1 is out of bounds for ", type_meta_name(self.dtype()));
    range = uint64_t(to) - uint64_t(from);
  }
  // A device tensor's integers are drawn on the host from the CPU's stream and copied over (no device loop yet).
  const bool direct = self.is_contiguous() && !on_device(self);
  Tensor out = direct ? self : empty_tensor(self.sizes(), self.dtype(), Device{});
  visit_dtype(self.dtype(), [&]<typename T>() {
    LockedCpuGenerator g = lock_cpu_generator();
    random_from_to_fill(g.gen, out.data<T>(), out.numel(), range, from);
  });
  if (!direct) call(Op::copy_, self, out, false);
  last_variant() = "reference";
  s.set_result(Tensor(self));
}

// aten::randperm(n): a random order of 0 .. n - 1, int64 by default, drawn
// as aten's randperm_cpu (randperm_fill, cpu_generator.h).
void randperm_kernel(const OpEntry& op, DispatchKeySet, Stack& s) {
  trace::ScopedSpan span(trace::Floor::Kernels, op.profiler_name);
  const int64_t n = s[0].to_int();
  DESCENT_CHECK(n >= 0, Error, "n must be non-negative, got", n);
  const ScalarType dt = dtype_arg(s, ScalarType::Int64);
  DESCENT_CHECK(dt != ScalarType::Bool, NotImplementedError, "\"randperm\" not implemented for 'Bool'");
  Tensor out = make_output(span, s, {n}, dt);
  Tensor host = on_device(out) ? empty_tensor({n}, dt, Device{}) : out;  // a device's: drawn here, copied over
  visit_dtype(dt, [&]<typename T>() {
    if constexpr (!std::is_same_v<T, bool>) {
      LockedCpuGenerator g = lock_cpu_generator();
      randperm_fill(g.gen, host.data<T>(), n);
    }
  });
  if (on_device(out)) call(Op::copy_, out, host, false);
  s.set_result(std::move(out));
}

// Note [multinomial's two paths]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// aten::multinomial(self, num_samples, replacement) samples category
// indices from each row of weights (1-D or 2-D), with aten's checks and
// messages, by aten's two paths:
//   - with replacement and more than one sample: each row's cumulative
//     sum, normalized by its total, and for each sample one float64 uniform
//     from torch's CPU stream and a binary search for the first cumulative
//     value not below it (multinomial_with_replacement_kernel): the same
//     indices as torch for the same seed;
//   - without replacement, or a single sample: q = self / e, e exponential
//     draws, then the num_samples largest q (topk; argmax for one). aten's
//     exponential_ on x86 is MKL's own stream, which descent does not have:
//     its draws are -log1p(-u) of the same float64 uniforms, so these
//     indices follow the right distribution but are not torch's.
void multinomial_kernel(const OpEntry& op, DispatchKeySet, Stack& s) {
  trace::ScopedSpan span(trace::Floor::Kernels, op.profiler_name);
  const Tensor& given = s[0].to_tensor();
  const Device device = given.device();  // a device's weights are sampled on the host, the indices copied back
  const Tensor self = on_device(given) ? call(Op::_to_copy, given, IValue(), Device{}) : given;
  const int64_t n_sample = s[1].to_int();
  const bool replacement = s[2].to_bool();
  DESCENT_CHECK(is_floating(self.dtype()), Error,
                "multinomial only supports floating-point dtypes for input, got: ", type_word(self.dtype()));
  DESCENT_CHECK(self.dim() == 1 || self.dim() == 2, Error, "prob_dist must be 1 or 2 dim");
  const int64_t n_cat = self.sizes()[self.dim() - 1], rows = self.dim() == 2 ? self.sizes()[0] : 1;
  DESCENT_CHECK(replacement || n_sample <= n_cat, Error,
                "cannot sample n_sample > prob_dist.size(-1) samples without replacement");
  DESCENT_CHECK(n_sample > 0, Error, "cannot sample n_sample <= 0 samples");
  std::vector<double> p(static_cast<size_t>(rows * n_cat));
  visit_dtype(self.dtype(), [&]<typename T>() {
    const T* x = self.data<T>();
    for (int64_t i = 0; i < rows * n_cat; ++i)
      p[size_t(i)] = double(x[strided_offset(i, self.sizes(), self.strides())]);
  });
  DimVector out_sizes = self.sizes();
  out_sizes[self.dim() - 1] = n_sample;
  Tensor out = empty_tensor(out_sizes, ScalarType::Int64, self.device());
  int64_t* y = out.data<int64_t>();
  LockedCpuGenerator g = lock_cpu_generator();
  if (!replacement || n_sample == 1) {
    bool valid = true;
    for (double v : p) valid &= v < INFINITY && v >= 0;  // a NaN fails both
    DESCENT_CHECK(valid, Error, "probability tensor contains either `inf`, `nan` or element < 0");
    for (int64_t r = 0; r < rows; ++r) {
      double sum = 0;
      for (int64_t j = 0; j < n_cat; ++j) sum += p[size_t(r * n_cat + j)];
      DESCENT_CHECK(sum != 0, Error, "invalid multinomial distribution (sum of probabilities <= 0)");
    }
    for (int64_t r = 0; r < rows; ++r) {
      std::vector<std::pair<double, int64_t>> q(static_cast<size_t>(n_cat));
      for (int64_t j = 0; j < n_cat; ++j)
        q[size_t(j)] = {p[size_t(r * n_cat + j)] / -std::log1p(-uniform_real<double>(g.gen, 0.0, 1.0)), j};
      std::stable_sort(q.begin(), q.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
      for (int64_t j = 0; j < n_sample; ++j) y[r * n_sample + j] = q[size_t(j)].second;
    }
  } else {
    std::vector<double> cum(static_cast<size_t>(n_cat));
    for (int64_t r = 0; r < rows; ++r) {
      double sum = 0;
      for (int64_t j = 0; j < n_cat; ++j) {
        const double v = p[size_t(r * n_cat + j)];
        DESCENT_CHECK(v >= 0, Error, "invalid multinomial distribution (encountering probability entry < 0)");
        DESCENT_CHECK(std::isfinite(v), Error,
                      "invalid multinomial distribution (encountering probability entry = infinity or NaN)");
        sum += v;
        cum[size_t(j)] = sum;
      }
      DESCENT_CHECK(sum > 0, Error, "invalid multinomial distribution (sum of probabilities <= 0)");
      for (double& c : cum) c /= sum;
      for (int64_t j = 0; j < n_sample; ++j) {
        const double u = uniform_real<double>(g.gen, 0.0, 1.0);
        int64_t left = 0, right = n_cat;
        while (right - left > 0) {
          const int64_t mid = left + (right - left) / 2;
          if (cum[size_t(mid)] < u)
            left = mid + 1;
          else
            right = mid;
        }
        y[r * n_sample + j] = left;
      }
    }
  }
  last_variant() = "reference";
  s.set_result(device.type == DeviceType::CPU ? std::move(out) : call(Op::_to_copy, out, IValue(), device));
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
  m.impl(Op::uniform_, random_inplace_kernel);
  m.impl(Op::normal_, random_inplace_kernel);
  m.impl(Op::random_from_, random_from_kernel);
  m.impl(Op::randperm, randperm_kernel);
  m.impl(Op::multinomial, multinomial_kernel);
}

}  // namespace descent::kernels
