// The verifier: reference against optimized, on the op table's sample calls.
#include "floors/kernels/verify/verifier.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <optional>

#include "floors/kernels/device/device_reduce.h"
#include "floors/kernels/kernels.h"
#include "floors/kernels/ladder/matmul_ladder.h"
#include "floors/kernels/cpu/matmul_rungs.h"
#include "floors/kernels/device/random.h"
#include "floors/streams/streams.h"

namespace descent::kernels {

// Note [Summation bound]
// ~~~~~~~~~~~~~~~~~~~~~~
// Adding n floating-point numbers in an order where each goes through at most
// d rounded additions gives a result within gamma_d * sum(|x_i|) of the exact
// sum, gamma_d = d * eps / (1 - d * eps) (Higham, "Accuracy and Stability of
// Numerical Algorithms", 4.2), eps being the unit roundoff of the dtype. In
// plain order d is n - 1; both of descent's sums cascade (Note [Cascade
// summation], reference.cpp), where d is cascade_depth(n): 29 rather than
// 9999999 for ten million elements. Each variant obeys its bound, so they
// differ by at most twice it. For each output element the verifier computes
// 2 * gamma_d * sum(|x_i|) over the elements that went into it, and requires
// |reference - optimized| to be at most that (divided by n for mean).
// Exact ops must agree bit for bit, NaNs included.
//
// Note [Device claims]
// ~~~~~~~~~~~~~~~~~~~~
// verify(op, dtype, seed, device) runs the sample call on sim:0 or cuda:N,
// on copies of the CPU sample (same values, sizes, strides and offsets),
// and holds the result to the CPU's reference loop:
//   - sum and mean of floats: the device adds in blocks (Note [A reduction
//     over blocks], device_reduce.h), where an element goes through at most
//     d' = device_sum_depth(n, outputs) rounded additions, the reference
//     through d = cascade_depth(n); each is within its gamma of the exact
//     sum, so |reference - device| <= (gamma_d + gamma_d') * sum|x_i| (over
//     n for mean);
//   - mm, bmm, dot, mv and matmul of floats, and conv2d (a composite whose
//     products are mm's: K is a window's C / groups * KH * KW, and its bias
//     rounds once more after them, as addmm's self): each output is a chain of K
//     multiply-adds in ascending k on both, fused on the device (Note
//     [Device matmul]), so each is within gamma_K * sum_k |a_ik||b_kj| of
//     the exact product (Higham 3.1; a fused step rounds once, never more)
//     and |reference - device| <= 2 gamma_K (|A| |B|)_ij, |A| |B| computed
//     in float64 on the CPU; this is the "bound" of Note [Device matmul bound];
//   - rand and randn: a device draws from its own generator, the counters
//     of Note [Counter-based random numbers], not the CPU's mt19937 (Note
//     [PyTorch's CPU random stream]), so the reference is those counters'
//     values computed on the host, from the seed run_with sets: bit for bit
//     on sim:0, and randn within the bound below on CUDA;
//   - the rows the op table marks Exactness::DeviceMath, floats on CUDA: exp,
//     log, log2, log10, tanh, sigmoid, sin, cos, pow, gelu, silu and their
//     backwards, and randn (the same counter's bits, through Box-Muller's
//     log, sqrt and cos): CUDA's
//     math library is not glibc's, and its documented error is up to 2 ulps
//     for expf, tanhf, sinf and cosf, 4 for powf, 1-2 in double precision
//     (CUDA C++ Programming Guide, "Mathematical Functions"), where glibc's is under 1: the two
//     agree within kCudaMathUlps = 8 units in the last place of the
//     reference's value (sim:0 runs glibc's functions: bit for bit there),
//     or of its terms' magnitude where they cancel (Note [Element functions
//     that cancel]);
//   - everything else of the reductions, products and indexing (max and
//     max.dim with their indices, integer sums and products, index and
//     index_put_), and the other elementwise ops: bit for bit, where any NaN
//     equals any NaN (a NaN's sign and payload are the hardware's: x86's 0/0
//     is 0xffc00000, a GPU's 0x7fffffff).
//   - float16 and bfloat16: a sum or product adds in float32 (the bounds
//     above with float32's roundoff; twice it for CUDA's tensor cores, which
//     may truncate inside an instruction, Note [Tensor-core matmul]) and
//     rounds once to the dtype, which may then go one unit of the dtype
//     either way; the DeviceMath rows on CUDA:
//     8 ulps of float32, then that one rounding. Everything else: bit for bit, as above.
// Ops without a device loop of their own answer "unsupported" on a device.
//
// Note [Device matmul bound]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// The CPU's product rounds a[i][k] * b[k][j], then the sum: two roundings a
// step; a device fuses them into one. The orders match, the roundings do
// not, so the last bits differ, by at most the bound above: for K = 23 in
// float32, 2 * 23 * 2**-24 * (|A||B|)_ij, about 3e-6 relative.

namespace {

// [SECTION] Sample calls -----------------------------------------------------

Tensor random_tensor(const DimVector& sizes, ScalarType dt, Domain domain, uint64_t seed, uint64_t salt) {
  Tensor t = empty_tensor(sizes, dt, Device{});
  visit_dtype(dt, [&]<typename T>() {
    T* p = t.data<T>();
    for (int64_t i = 0; i < t.numel(); ++i) {
      double u = uniform_double(uint64_t(i) + (salt << 32), seed);  // [0, 1)
      if constexpr (std::is_same_v<T, bool>)
        p[i] = u < 0.5;
      else if constexpr (std::is_unsigned_v<T>)
        p[i] = domain == Domain::Positive ? T(u * 4) : T(u * 20);  // uint8
      else if constexpr (std::is_integral_v<T>)
        p[i] = domain == Domain::Positive ? T(u * 4) : T(T(u * 20) - 10);
      else
        p[i] = domain == Domain::Positive ? T(0.1 + 2 * u) : T(8 * u - 4);
    }
  });
  return t;
}

std::string trim(std::string s) {
  while (!s.empty() && s.front() == ' ') s.erase(s.begin());
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

DimVector parse_ints(const std::string& list) {  // "[4, 6]"
  DimVector v;
  std::string inner = list.substr(list.find('[') + 1, list.find(']') - list.find('[') - 1);
  size_t pos = 0;
  while (pos < inner.size()) {
    size_t comma = inner.find(',', pos);
    std::string item = trim(inner.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos));
    if (!item.empty()) v.push_back(std::stoll(item));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return v;
}

// A sample's random tensor "T[4, 6]" (or its transpose, "T[6, 4]^T") of the dtype under test.
Tensor sample_tensor(const std::string& arg, ScalarType dtype, Domain domain, uint64_t seed, uint64_t salt) {
  const bool transposed = arg.size() > 2 && arg.substr(arg.size() - 2) == "^T";
  Tensor t = random_tensor(parse_ints(arg), dtype, domain, seed, salt);
  return transposed ? call(Op::transpose, t, 0, 1) : t;
}

// "(None, I[5, -1])": a Tensor?[] of None and int64 tensors holding the
// values written; "(T[3, 6], T[6, 5]^T)": a Tensor[] of random tensors.
OptionalTensorList parse_tensor_list(const std::string& text, ScalarType dtype, Domain domain, uint64_t seed,
                                     uint64_t& salt) {
  OptionalTensorList list;
  size_t pos = 1;
  while (pos < text.size()) {
    const size_t none = text.find("None", pos), ints = text.find("I[", pos), rand = text.find("T[", pos);
    const size_t next = std::min({none, ints, rand});
    if (next == std::string::npos) break;
    if (next == none) {
      list.push_back(Tensor());
      pos = none + 4;
      continue;
    }
    size_t close = text.find(']', next);
    if (next == rand) {
      if (text.compare(close + 1, 2, "^T") == 0) close += 2;
      list.push_back(sample_tensor(text.substr(next, close + 1 - next), dtype, domain, seed, ++salt));
      pos = close + 1;
      continue;
    }
    const DimVector v = parse_ints(text.substr(ints + 1, close - ints));
    Tensor t = empty_tensor({v.size()}, ScalarType::Int64, Device{});
    for (int i = 0; i < v.size(); ++i) t.data<int64_t>()[i] = v[i];
    list.push_back(t);
    pos = close + 1;
  }
  return list;
}

}  // namespace

bool is_verified(const OpEntry& op) { return op.kind != OpKind::Collective; }

Stack sample_call(const OpEntry& op, ScalarType dtype, uint64_t seed) {
  DESCENT_CHECK(is_verified(op), ValueError, op.name,
                " has no sample call: a collective needs a process group (tests/python/test_distributed.py)");
  Stack s;
  std::string text = op.sample;
  uint64_t salt = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t semi = text.find(';', pos);
    std::string arg = trim(text.substr(pos, semi == std::string::npos ? std::string::npos : semi - pos));
    pos = semi == std::string::npos ? text.size() + 1 : semi + 1;
    ScalarType st;
    if (arg.rfind("T[", 0) == 0) {
      s.push(sample_tensor(arg, dtype, op.domain, seed, ++salt));
    } else if (arg.rfind("B[", 0) == 0) {  // a random bool tensor whatever the dtype under test (where's condition)
      s.push(sample_tensor(arg, ScalarType::Bool, op.domain, seed, ++salt));
    } else if (arg.rfind("[", 0) == 0) {
      s.push(parse_ints(arg));
    } else if (arg.rfind("(", 0) == 0) {
      s.push(parse_tensor_list(arg, dtype, op.domain, seed, salt));
    } else if (arg == "None") {
      s.push(IValue());
    } else if (arg == "True" || arg == "False") {
      s.push(arg == "True");
    } else if (parse_dtype(arg, &st)) {
      s.push(st);
    } else if (arg.find('.') != std::string::npos) {
      s.push(std::stod(arg));
    } else {
      s.push(int64_t(std::stoll(arg)));
    }
  }
  // Factories take the dtype under test as their dtype argument.
  if (op.kind == OpKind::Factory) {
    while (s.size() < int(op.schema.args.size()) - 2) s.push(op.schema.args[s.size()].default_value);
    s.push(dtype);
  }
  return s;
}

// [SECTION] Comparing ----------------------------------------------------------

namespace {

// The unit roundoff of a dtype: 2**-24 for float32, 2**-53 float64, 2**-11
// float16, 2**-8 bfloat16.
double eps_of(ScalarType t) {
  switch (t) {
    case ScalarType::Float32:
      return 0x1p-24;
    case ScalarType::Float64:
      return 0x1p-53;
    case ScalarType::Float16:
      return 0x1p-11;
    case ScalarType::BFloat16:
      return 0x1p-8;
    default:
      return 0;
  }
}
// The unit roundoff of the additions inside a sum or a product of dtype t:
// float32's for float16 and bfloat16, which accumulate in float32.
double acc_eps_of(ScalarType t) { return is_reduced_floating(t) ? eps_of(ScalarType::Float32) : eps_of(t); }

// A float16 or bfloat16 sum or product rounds its float32 total once at the
// end on both sides: totals within a bound may round up to one unit of the
// dtype further apart (Note [Reduced-precision floats]). What that adds to
// the bound for results a and b; 0 for the other dtypes.
double final_rounding(ScalarType t, double a, double b) {
  return is_reduced_floating(t) ? 2.0 * eps_of(t) * std::max(std::fabs(a), std::fabs(b)) : 0.0;
}

// The distance from |x| to the next larger value of its type.
template <class T>
double ulp_above(T x) {
  if constexpr (is_reduced_float_v<T>) {
    T a = x, next;
    a.bits &= 0x7fff;
    next.bits = uint16_t(a.bits + 1);
    return double(float(next)) - double(float(a));
  } else {
    const T a = std::fabs(x);
    return double(std::nextafter(a, std::numeric_limits<T>::infinity()) - a);
  }
}

// The sample's tensors on `d` (a device), everything else as it is.
Stack args_on(const Stack& args, Device d) {
  Stack s;
  for (int i = 0; i < args.size(); ++i) {
    if (args[i].is_tensor()) {
      s.push(same_layout_on(args[i].to_tensor(), d));
    } else if (args[i].is_tensor_list()) {
      OptionalTensorList l;
      for (const Tensor& t : args[i].to_tensor_list()) l.push_back(t.defined() ? same_layout_on(t, d) : t);
      s.push(l);
    } else {
      s.push(args[i]);
    }
  }
  return s;
}

// Note [Draws apart on a device]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// uniform_, normal_ and the like-factories that call them draw a device's
// numbers from its counters (rand's and randn's, scaled), and random_,
// randint, randperm and multinomial draw a device tensor's on the host from
// the CPU's stream, whose position the CPU's reference run has already
// moved: a device run of these is held to its shape and dtype only
// (test_learner_ops.py checks their values on each side).
bool draws_apart(Op op) {
  switch (op) {
    case Op::uniform_:
    case Op::normal_:
    case Op::rand_like:
    case Op::randn_like:
    case Op::random_from_:
    case Op::randint:
    case Op::randint_low:
    case Op::randint_like:
    case Op::randint_like_low:
    case Op::randperm:
    case Op::multinomial:
      return true;
    default:
      return false;
  }
}

// The ops whose results are uninitialised memory: only their shape and dtype compare.
bool is_uninitialised(Op op) {
  return op == Op::empty || op == Op::empty_strided || op == Op::empty_like || op == Op::new_empty;
}

// The seed of every run: factories that draw random numbers draw the same ones.
constexpr uint64_t kRunSeed = 0x7e57;

// Runs the call with one variant; returns its results (on the CPU) and which loop ran.
std::vector<Tensor> run_with(const OpEntry& op, const Stack& args, Variant v, const char** ran) {
  VariantGuard guard(v);
  manual_seed(kRunSeed);
  Stack s = args;
  call_boxed(op.id, s);
  *ran = last_variant();
  std::vector<Tensor> out;
  for (int i = 0; i < s.size(); ++i) {
    if (s[i].is_scalar()) {  // item, _local_scalar_dense: the Scalar as a 0-d CPU tensor of its type
      out.push_back(scalar_tensor(s[i].to_scalar(), false));
      continue;
    }
    if (is_uninitialised(op.id)) {  // unset elements: never read (a bool's may be 190)
      out.push_back(s[i].to_tensor());
      continue;
    }
    Tensor r = call(Op::contiguous, s[i].to_tensor());
    out.push_back(r.device().type == DeviceType::CPU ? r : same_layout_on(r, Device{}));
  }
  return out;
}

// What a device may claim for an op's float result beside the CPU's
// reference (Note [Device claims]): a summation bound, a product bound, or exact.
enum class DeviceBound { Exact, Sum, Product, Ulps };
constexpr double kCudaMathUlps = 8;
DeviceBound device_bound(const OpEntry& op, ScalarType result, Device device) {
  if (!is_floating(result)) return DeviceBound::Exact;
  // The row says it: an element function of the math library (randn: Box-Muller's log, sqrt and cos).
  if (op.exactness == Exactness::DeviceMath && device.type == DeviceType::CUDA) return DeviceBound::Ulps;
  if (op.kind == OpKind::Matmul || op.id == Op::conv2d) return DeviceBound::Product;
  if (op.kind == OpKind::Reduction && op.exactness == Exactness::Reordered) return DeviceBound::Sum;
  return DeviceBound::Exact;
}

// Note [Element functions that cancel]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// gelu is x / 2 * (1 + erf(x / sqrt 2)): for x below about -2 the sum
// nearly cancels, and erf's own error (ulps of 1) becomes hundreds of ulps
// of the small result; the tanh form and gelu_backward (cdf + x pdf) do the
// same, and silu_backward's 1 + x (1 - s) cancels near x = -1.28, where
// silu turns. The bound for them is kCudaMathUlps ulps of the larger of the
// result and its terms' magnitude: |x| / 2 for gelu, |grad| (1 + |x|) for
// the two backward ops. Float math on the device cannot do better than its
// terms; the CPU and sim:0 still agree bit for bit.
Tensor cancelling_magnitude(const OpEntry& op, const Stack& args) {
  const auto f64 = [&](int i) { return call(Op::abs, call(Op::to, args[i].to_tensor(), ScalarType::Float64)); };
  if (op.id == Op::gelu) return call(Op::contiguous, call(Op::mul, f64(0), scalar_tensor(Scalar(0.5))));
  if (op.id != Op::gelu_backward && op.id != Op::silu_backward) return Tensor();
  return call(Op::contiguous, call(Op::mul, f64(0), call(Op::add, f64(1), scalar_tensor(Scalar(1.0)))));
}

// Whether the op adds to its product and rounds once more (addmm's self,
// linear's bias): one more rounding of the result's dtype either way.
bool adds_after_product(const OpEntry& op) { return op.id == Op::addmm || op.id == Op::linear || op.id == Op::conv2d; }

// Note [Device matmul bound]: (gamma_K + gamma_K') (|A| |B|) per output
// element, |A| |B| in float64; gamma_K' with twice float32's roundoff for
// the tensor cores of a float16 or bfloat16 product on CUDA, and for a
// float32 one in TF32 also the operands' rounding (Note [TF32 matmul]). The operands are
// the first two tensors, addmm's mat1 and mat2 (linear's |A||B| is linear of
// them without the bias).
Tensor product_bound(const OpEntry& op, const Stack& args, ScalarType dt, Device device) {
  const int first = op.id == Op::addmm ? 1 : 0;
  const Tensor& a = args[first].to_tensor();
  const Tensor abs_a = call(Op::abs, call(Op::to, a, ScalarType::Float64));
  const Tensor abs_b = call(Op::abs, call(Op::to, args[first + 1].to_tensor(), ScalarType::Float64));
  Tensor prod;
  double k = double(a.sizes()[a.dim() - 1]);
  if (op.id == Op::conv2d) {
    // One mm a group of the windows by the weight (Note [conv2d and max_pool2d
    // gather windows], nn_kernels.cpp): |x| conv |w| without the bias, and K
    // a window's C / groups * KH * KW products.
    Stack s;
    s.push(abs_a);
    s.push(abs_b);
    s.push(IValue());
    for (int i = 3; i < args.size(); ++i) s.push(args[i]);
    call_boxed(Op::conv2d, s);
    prod = call(Op::contiguous, s[0].to_tensor());
    const Tensor& w = args[1].to_tensor();
    k = double(w.sizes()[1] * w.sizes()[2] * w.sizes()[3]);
  } else {
    prod = call(Op::contiguous, op.id == Op::addmm ? call(Op::mm, abs_a, abs_b) : call(op.id, abs_a, abs_b));
  }
  const double k_eps = k * acc_eps_of(dt);
  // A float32 product in TF32 (Note [TF32 matmul]) rounds each operand to a 10-bit mantissa first: each
  // product is off by up to 2 * 2**-11 (+ 2**-22) of itself, then summed as the tensor cores sum.
  const bool tf32 = dt == ScalarType::Float32 && device.type == DeviceType::CUDA && device::allow_tf32();
  const double k_dev = k_eps * ((is_reduced_floating(dt) || tf32) && device.type == DeviceType::CUDA ? 2.0 : 1.0);
  const double operands = tf32 ? std::ldexp(1.0, -10) + std::ldexp(1.0, -22) : 0.0;
  const double scale =
      (k_eps / (1.0 - k_eps) + k_dev / (1.0 - k_dev) + operands) * (1.0 + 4.0 * k_eps);  // and float64's own rounding
  double* p = prod.data<double>();
  for (int64_t i = 0; i < prod.numel(); ++i) p[i] *= scale;
  return prod;
}

// What a summing reduction adds, in float64, which dims it reduces and
// whether it divides by their count: the input of sum and mean; for
// mse_loss, the squared differences, over every element (its sample takes
// the mean), each a little larger than computed (it was rounded to the dtype).
struct Summands {
  Tensor x;
  IValue dims;
  bool mean;
};
Summands summands_of(const OpEntry& op, const Stack& args, ScalarType dt) {
  const Tensor x = call(Op::to, args[0].to_tensor(), ScalarType::Float64);
  if (op.id == Op::mse_loss) {
    const Tensor d = call(Op::sub, x, call(Op::to, args[1].to_tensor(), ScalarType::Float64));
    const Tensor sq = call(Op::mul, call(Op::mul, d, d), scalar_tensor(Scalar(1.0 + 4.0 * eps_of(dt))));
    const IValue& reduction = args.size() > 2 ? args[2] : op.schema.args[2].default_value;
    return {sq, IValue(), reduction.to_int() == 1};
  }
  const bool by_dim = op.id == Op::sum_dim || op.id == Op::mean_dim;
  return {x, by_dim ? args[1] : IValue(), op.id == Op::mean || op.id == Op::mean_dim};
}

// Bit for bit, except that any NaN equals any NaN: a NaN's sign and payload
// are the hardware's (x86 makes 0xffc00000 of 0/0, a GPU 0x7fffffff), and
// PyTorch's CPU and CUDA differ the same way (Note [Device claims]).
bool same_bits_but_nan_payloads(const Tensor& a, const Tensor& b) {
  const size_t bytes = size_t(a.numel()) * element_size(a.dtype());
  if (bytes == 0 || std::memcmp(a.data_ptr(), b.data_ptr(), bytes) == 0) return true;
  bool same = true;
  visit_dtype(a.dtype(), [&]<typename T>() {
    if constexpr (is_float_v<T>) {
      const T *x = a.data<T>(), *y = b.data<T>();
      for (int64_t i = 0; i < a.numel() && same; ++i)
        same = (x[i] != x[i] && y[i] != y[i]) || std::memcmp(&x[i], &y[i], sizeof(T)) == 0;
    } else {
      same = false;
    }
  });
  return same;
}

// What a device's rand or randn wrote after manual_seed(kRunSeed), computed
// on the host: element i is counter i of the device generator (Note
// [Counter-based random numbers], random.h). `like` gives the shape and dtype.
Tensor device_random_on_host(const Tensor& like, bool normal) {
  Tensor t = empty_tensor(like.sizes(), like.dtype(), Device{});
  visit_dtype(like.dtype(), [&]<typename T>() {
    if constexpr (is_float_v<T>) {
      T* p = t.data<T>();
      for (int64_t i = 0; i < t.numel(); ++i) p[i] = random_element<T>(uint64_t(i), kRunSeed, normal);
    }
  });
  return t;
}

// A device run against the CPU's reference (Note [Device claims]).
// `given`: these arguments instead of the op's sample (an op that is not in place).
Verdict verify_on_device(const OpEntry& op, ScalarType dtype, uint64_t seed, Device device,
                         const Stack* given = nullptr) {
  Verdict v;
  v.op = op.name;
  v.dtype = dtype;
  const bool declared = [&] {
    for (DispatchKey k : declared_keys(op.dispatch))
      if (k == (device.type == DeviceType::CUDA ? DispatchKey::CUDA : DispatchKey::Sim) ||
          k == DispatchKey::CompositeImplicitAutograd)
        return true;
    return false;
  }();
  const bool in_place = op.kind == OpKind::InPlace;
  Stack args = given ? *given : sample_call(op, dtype, seed);
  std::vector<Tensor> ref, dev;
  const char *ran_ref = "", *ran_dev = "";
  try {
    if (!declared) throw Error(str(op.name, " declares no kernel for ", device.str()));
    ref = run_with(op, in_place ? sample_call(op, dtype, seed) : args, Variant::Reference, &ran_ref);
    if (op.id == Op::rand || op.id == Op::randn)  // the CPU's numbers are torch's, a device's its own
      ref = {device_random_on_host(ref[0], op.id == Op::randn)};
  } catch (const Error& e) {
    v.claim = "unsupported";
    v.passed = true;
    v.detail = e.what();
    return v;
  }
  // A factory has no tensor to move: its `device` argument (the last, by
  // schema) names the device, as x = descent.zeros(4, device="sim:0") does.
  Stack dev_args = args_on(in_place ? sample_call(op, dtype, seed) : args, device);
  if (op.kind == OpKind::Factory) {
    while (dev_args.size() < int(op.schema.args.size()) - 1)
      dev_args.push(op.schema.args[dev_args.size()].default_value);
    dev_args.push(IValue(device));
  }
  try {
    dev = run_with(op, dev_args, Variant::Auto, &ran_dev);
  } catch (const NotImplementedError& e) {  // a composite one of whose parts has no kernel there (rand_like's uniform_)
    v.claim = "unsupported";
    v.passed = true;
    v.detail = e.what();
    return v;
  } catch (const Error& e) {
    v.claim = "device";
    v.passed = false;
    v.detail = str(device.str(), " raised: ", e.what());
    return v;
  }
  v.variants = std::string(ran_ref) + " vs " + ran_dev;
  if (draws_apart(op.id)) {  // Note [Draws apart on a device]
    v.claim = "single kernel";
    v.passed = ref[0].sizes() == dev[0].sizes() && ref[0].dtype() == dev[0].dtype();
    v.detail = "random draws of another stream: shape and dtype compared";
    return v;
  }
  if (is_uninitialised(op.id)) {  // uninitialised by definition: shape and dtype compared
    v.claim = "single kernel";
    v.passed = ref[0].sizes() == dev[0].sizes() && ref[0].dtype() == dev[0].dtype();
    v.detail = "elements uninitialised: shape and dtype compared";
    return v;
  }
  const DeviceBound kind = device_bound(op, ref[0].dtype(), device);
  v.claim = kind == DeviceBound::Exact ? "bit-for-bit" : "bound";
  v.passed = true;
  for (size_t r = 0; r < ref.size(); ++r) {
    const Tensor &a = ref[r], &b = dev[r];
    if (!(a.sizes() == b.sizes()) || a.dtype() != b.dtype()) {
      v.passed = false;
      v.detail = "results differ in shape or dtype";
      return v;
    }
    if (kind == DeviceBound::Exact || r > 0) {
      if (!same_bits_but_nan_payloads(a, b)) {
        v.passed = false;
        v.detail = "results differ bit-wise";
      }
      continue;
    }
    Tensor bound;
    if (kind == DeviceBound::Ulps) {  // kCudaMathUlps units in the last place of each reference element
      bound =
          empty_tensor(a.sizes(), ScalarType::Float64, Device{});  // fresh: to() of a float64 `a` would be `a` itself
      const Tensor ac = call(Op::contiguous, a);
      const Tensor terms = cancelling_magnitude(op, args);  // Note [Element functions that cancel]
      const bool cancels = terms.defined() && terms.sizes() == ac.sizes();
      visit_dtype(a.dtype(), [&]<typename T>() {
        if constexpr (is_float_v<T>) {
          const T* ra = ac.data<T>();
          const double* m = cancels ? terms.data<double>() : nullptr;
          double* p = bound.data<double>();
          for (int64_t i = 0; i < ac.numel(); ++i) {
            // float16 and bfloat16 are computed in float32 and rounded: 8 ulps
            // of float32 before the rounding, and the rounding may then go
            // the other way, one ulp of the dtype.
            // the terms' magnitude, within what the computing type holds (a larger double would not convert)
            constexpr double kMax = std::is_same_v<T, double> ? std::numeric_limits<double>::max()
                                                              : double(std::numeric_limits<float>::max());
            const double at = m ? std::max(std::fabs(double(ra[i])), std::min(m[i], kMax)) : std::fabs(double(ra[i]));
            if constexpr (is_reduced_float_v<T>)
              p[i] = kCudaMathUlps * ulp_above(float(at)) + ulp_above(ra[i]);
            else
              p[i] = kCudaMathUlps * ulp_above(T(at));
          }
        }
      });
    } else if (kind == DeviceBound::Product) {
      bound = product_bound(op, args, a.dtype(), device);
    } else if (std::string_view(op.dispatch).find("Composite") != std::string_view::npos) {
      // Note [A composite reduction's bound]: relative, 8 n u |ref|, n the input's elements.
      bound = call(Op::to, call(Op::abs, a), ScalarType::Float64);
      bound = call(Op::contiguous, bound);
      const double scale = 8.0 * double(args[0].to_tensor().numel()) * acc_eps_of(a.dtype());
      double* p = bound.data<double>();
      for (int64_t i = 0; i < bound.numel(); ++i) p[i] *= scale;
    } else {  // (gamma_d + gamma_d') sum|x| per output, over n for mean
      const Summands x = summands_of(op, args, a.dtype());
      bound = call(Op::contiguous, call(Op::sum_dim, call(Op::abs, x.x), x.dims, true));
      const int64_t outputs = bound.numel(), n = outputs ? x.x.numel() / outputs : 0;
      const double e = acc_eps_of(a.dtype());
      const double d = double(cascade_depth(n)) * e, dd = double(device::device_sum_depth(n, outputs)) * e;
      double scale = d / (1.0 - d) + dd / (1.0 - dd);
      if (x.mean && n > 0) scale /= double(n);
      double* p = bound.data<double>();
      for (int64_t i = 0; i < bound.numel(); ++i) p[i] *= scale;
    }
    const Tensor a64 = call(Op::to, a, ScalarType::Float64), b64 = call(Op::to, b, ScalarType::Float64);
    for (int64_t i = 0; i < a.numel(); ++i) {
      const double diff = std::fabs(a64.data<double>()[i] - b64.data<double>()[i]);
      const double x = a64.data<double>()[i], y = b64.data<double>()[i];
      // The Ulps bound already holds the rounding to the dtype; addmm and
      // linear round once more after their product.
      const double after =
          adds_after_product(op) ? 2.0 * eps_of(a.dtype()) * std::max(std::fabs(x), std::fabs(y)) : 0.0;
      const double allowed =
          bound.data<double>()[i] + after + (kind == DeviceBound::Ulps ? 0.0 : final_rounding(a.dtype(), x, y));
      v.max_abs_diff = std::max(v.max_abs_diff, diff);
      v.bound = std::max(v.bound, allowed);
      const bool both_nan = std::isnan(a64.data<double>()[i]) && std::isnan(b64.data<double>()[i]);
      if (!(diff <= allowed) && !both_nan && a64.data<double>()[i] != b64.data<double>()[i]) {
        v.passed = false;
        v.detail = str("element ", i, " differs by ", diff, " > bound ", allowed);
      }
    }
  }
  return v;
}

}  // namespace

Tensor same_layout_on(const Tensor& t, Device d) {
  if (t.device() == d) return t;
  int64_t span = t.numel() == 0 ? 0 : 1;
  for (int i = 0; i < t.dim(); ++i)
    if (t.numel()) span += (t.sizes()[i] - 1) * t.strides()[i];
  Tensor block = empty_tensor({span}, t.dtype(), d);
  const size_t bytes = size_t(span) * element_size(t.dtype());
  if (bytes) streams::copy_bytes(block.data_ptr(), d, t.data_ptr(), t.device(), bytes);
  Tensor v = block.as_strided(t.sizes(), t.strides(), 0);
  v.impl()->wrapped_number = t.impl()->wrapped_number;
  return v;
}

namespace {

// The optimized results `opt` against the reference's `ref` on the CPU,
// bit for bit, or within Note [Summation bound] for a reordered sum, or
// within Note [Device matmul bound] for a product of fused multiply-adds
// (the packed rung, Note [Packed matmul]); folds the outcome into `v`.
// Note [A composite reduction's bound]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// var, std and linalg_vector_norm are composites (Note [var and std
// decompose], Note [vector_norm decomposes], composites.cpp): a sum, or a
// mean, beneath arithmetic before and after it (a difference squared, a
// division, a square root). Both variants run the same arithmetic around
// sums that are ordered differently, so they agree within a relative bound
// that grows with the elements summed: |ref - opt| <= 8 n u max(|ref|, |opt|),
// n the input's elements and u the unit roundoff of the sums' dtype, a
// generous form of Higham's bound for a sum feeding a few well-conditioned
// operations (the squares of var are nonnegative: no cancellation in its sum).
enum class CpuClaim { Exact, Sum, Product, Composite };
void compare_on_cpu(Verdict& v, const OpEntry& op, const Stack& args, const std::vector<Tensor>& ref,
                    const std::vector<Tensor>& opt, CpuClaim claim) {
  for (size_t r = 0; r < ref.size(); ++r) {
    const Tensor &a = ref[r], &b = opt[r];
    if (!(a.sizes() == b.sizes()) || a.dtype() != b.dtype()) {
      v.passed = false;
      v.detail = "results differ in shape or dtype";
      return;
    }
    if (claim == CpuClaim::Exact || r > 0) {
      size_t bytes = size_t(a.numel()) * element_size(a.dtype());
      if (bytes && std::memcmp(a.data_ptr(), b.data_ptr(), bytes) != 0) {
        v.passed = false;
        v.detail = "results differ bit-wise";
      }
      continue;
    }
    Tensor bound;
    int64_t n = 0;
    bool mean = false;
    if (claim == CpuClaim::Composite) {  // Note [A composite reduction's bound]
      const double u = acc_eps_of(a.dtype()), n_in = double(args[0].to_tensor().numel());
      const Tensor a64 = call(Op::to, a, ScalarType::Float64), b64 = call(Op::to, b, ScalarType::Float64);
      for (int64_t i = 0; i < a.numel(); ++i) {
        const double x = a64.data<double>()[i], y = b64.data<double>()[i];
        const double allowed = 8.0 * n_in * u * std::max(std::fabs(x), std::fabs(y)) + final_rounding(a.dtype(), x, y);
        const double diff = std::fabs(x - y);
        v.max_abs_diff = std::max(v.max_abs_diff, diff);
        v.bound = std::max(v.bound, allowed);
        if (!(diff <= allowed) && !(x == y || (std::isnan(x) && std::isnan(y)))) {
          v.passed = false;
          v.detail = str("element ", i, " differs by ", diff, " > bound ", allowed);
        }
      }
      continue;
    }
    if (claim == CpuClaim::Product) {
      bound = product_bound(op, args, a.dtype(), Device{});
    } else {  // Note [Summation bound]: per element, 2 gamma_d sum|x| with d = cascade_depth(n) (over n for mean).
      const Summands x = summands_of(op, args, a.dtype());
      bound = call(Op::contiguous, call(Op::sum_dim, call(Op::abs, x.x), x.dims, true));
      n = bound.numel() ? x.x.numel() / bound.numel() : 0;
      mean = x.mean;
    }
    const Tensor a64 = call(Op::to, a, ScalarType::Float64), b64 = call(Op::to, b, ScalarType::Float64);
    for (int64_t i = 0; i < a.numel(); ++i) {
      const double x = a64.data<double>()[i], y = b64.data<double>()[i];
      double allowed = bound.data<double>()[i];
      if (claim == CpuClaim::Sum) {
        const double d_eps = double(cascade_depth(n)) * acc_eps_of(a.dtype());
        allowed *= 2.0 * d_eps / (1.0 - d_eps);
        if (mean && n > 0) allowed /= double(n);
      } else if (adds_after_product(op)) {  // addmm and linear round once more after their product
        allowed += 2.0 * eps_of(a.dtype()) * std::max(std::fabs(x), std::fabs(y));
      }
      allowed += final_rounding(a.dtype(), x, y);
      const double diff = std::fabs(x - y);
      v.max_abs_diff = std::max(v.max_abs_diff, diff);
      v.bound = std::max(v.bound, allowed);
      const bool same = x == y || (std::isnan(x) && std::isnan(y));
      if (!(diff <= allowed) && !same) {
        v.passed = false;
        v.detail = str("element ", i, " differs by ", diff, " > bound ", allowed);
      }
    }
  }
}

// The CPU's side of verify(), on `args` (`remake` gives a fresh copy of them
// for each variant of an in-place op). A product runs on every optimized rung
// of the CPU's ladder in turn (Note [Matmul rungs]): the register rung bit
// for bit, the packed one within Note [Device matmul bound].
Verdict verify_on_cpu(const OpEntry& op, ScalarType dtype, const Stack& args, const std::function<Stack()>& remake) {
  Verdict v;
  v.op = op.name;
  v.dtype = dtype;
  const bool in_place = op.kind == OpKind::InPlace;
  std::vector<Tensor> ref, opt;
  const char *ran_ref = "", *ran_opt = "";
  try {
    ref = run_with(op, in_place ? remake() : args, Variant::Reference, &ran_ref);
  } catch (const Error& e) {  // the op does not take this dtype (mean of int64, ...)
    v.claim = "unsupported";
    v.passed = true;
    v.detail = e.what();
    return v;
  }
  std::vector<std::string> rungs = {""};  // "": as the op runs by default
  if (op.kind == OpKind::Matmul) {
    rungs.clear();
    for (const std::string& r : matmul_rungs(DeviceType::CPU))
      if (r != "auto" && r != "reference") rungs.push_back(r);
  }
  const bool reordered = op.exactness == Exactness::Reordered && is_floating(ref[0].dtype());
  bool bounded = false;
  std::string ran_rungs;
  v.passed = true;
  for (const std::string& rung : rungs) {
    std::optional<MatmulRungGuard> guard;
    if (!rung.empty()) guard.emplace(DeviceType::CPU, rung);
    opt = run_with(op, in_place ? remake() : args, Variant::Optimized, &ran_opt);
    if (is_uninitialised(op.id)) {  // uninitialised by definition: shape and dtype compared
      v.variants = std::string(ran_ref) + " vs " + ran_opt;
      v.claim = "single kernel";
      v.passed = ref[0].sizes() == opt[0].sizes() && ref[0].dtype() == opt[0].dtype();
      v.detail = "elements uninitialised: shape and dtype compared";
      return v;
    }
    const bool fused = !rung.empty() && std::strcmp(last_matmul_rung(), "packed") == 0 && is_floating(ref[0].dtype());
    bounded = bounded || fused || reordered;
    const std::string ran = rung.empty() ? "" : last_matmul_rung();  // packed hands int64 to register
    if (!ran.empty() && ("+" + ran_rungs + "+").find("+" + ran + "+") == std::string::npos)
      ran_rungs += (ran_rungs.empty() ? "" : "+") + ran;
    const bool composite = std::string_view(op.dispatch).find("Composite") != std::string_view::npos;
    compare_on_cpu(v, op, args, ref, opt,
                   fused       ? CpuClaim::Product
                   : reordered ? (composite ? CpuClaim::Composite : CpuClaim::Sum)
                               : CpuClaim::Exact);
  }
  v.variants = std::string(ran_ref) + " vs " + (ran_rungs.empty() ? std::string(ran_opt) : ran_rungs);
  v.claim = std::string(ran_opt) != "optimized" ? "single kernel" : bounded ? "bound" : "bit-for-bit";
  return v;
}

}  // namespace

Verdict verify(const OpEntry& op, ScalarType dtype, uint64_t seed, Device device) {
  if (device.type != DeviceType::CPU) return verify_on_device(op, dtype, seed, device);
  return verify_on_cpu(op, dtype, sample_call(op, dtype, seed), [&] { return sample_call(op, dtype, seed); });
}

Verdict verify_call(const OpEntry& op, const Stack& args, ScalarType dtype, Device device) {
  DESCENT_CHECK(op.kind != OpKind::InPlace, ValueError, "verify_call(): ", op.name, " writes into its argument");
  if (device.type != DeviceType::CPU) return verify_on_device(op, dtype, 0, device, &args);
  return verify_on_cpu(op, dtype, args, [&] { return args; });
}

std::vector<Verdict> verify_all(uint64_t seed, Device device) {
  std::vector<Verdict> out;
  for (const OpEntry& op : all_ops())
    if (is_verified(op))
      for (int t = 0; t < kNumScalarTypes; ++t) out.push_back(verify(op, ScalarType(t), seed, device));
  for (Verdict& v : verify_matmul_rungs(seed, device)) out.push_back(std::move(v));  // none on the CPU
  return out;
}

std::string format_verdicts(const std::vector<Verdict>& vs) {
  std::string s;
  char line[256];
  for (const Verdict& v : vs) {
    std::snprintf(line, sizeof line, "%-6s %-24s %-8s %-13s %-26s max|diff|=%-10.3g bound=%-10.3g %s\n",
                  v.passed ? "ok" : "FAIL", v.op.c_str(), dtype_name(v.dtype), v.claim.c_str(), v.variants.c_str(),
                  v.max_abs_diff, v.bound, v.claim == "unsupported" ? "" : v.detail.c_str());
    s += line;
  }
  return s;
}

}  // namespace descent::kernels
