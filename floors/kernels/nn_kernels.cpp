// The kernels of torch.nn's ops: softmax and log_softmax (and their
// backward ops), nll_loss, layer_norm, embedding, binary cross-entropy, and
// the composites over them (cross_entropy_loss, nll_loss, dropout, one_hot).
//
// [SECTION] What the kernels share
// [SECTION] softmax and log_softmax
// [SECTION] nll_loss
// [SECTION] layer_norm
// [SECTION] embedding
// [SECTION] Binary cross-entropy
// [SECTION] Composites
// [SECTION] conv2d and max_pool2d
// [SECTION] Registration
//
// Note [nn kernels run on the host]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// These kernels are one loop each, written for reading: a row (softmax's
// dim, layer_norm's normalized dims, a sample of nll_loss) at a time, in
// the dtype's opmath (float for float16 and bfloat16, as PyTorch's CPU
// kernels accumulate), with no optimized variant: the verifier reports a
// "single kernel". They are declared for CPU, Sim and CUDA, but a device
// tensor's call copies its inputs to the host, runs the same loop there and
// copies the result back (the copies are spans of their own): the devices
// have no kernels of their own for these ops yet, so a model that uses them
// runs on sim:0 and cuda, correctly and slowly, and the device agrees with
// the CPU bit for bit because it is the CPU's loop. PyTorch's CUDA has a
// kernel for each (softmax_warp_forward, nll_loss_forward_reduce_cuda_kernel_2d,
// vectorized_layer_norm_kernel, ...).
#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#include "floors/kernels/boxed.h"

namespace descent::kernels {

namespace {

// [SECTION] What the kernels share -----------------------------------------------

// A device tensor's elements on the host, contiguous (Note [nn kernels run on the host]).
Tensor on_host(const Tensor& t) {
  if (t.device().type == DeviceType::CPU) return t.is_contiguous() ? t : call(Op::contiguous, t);
  return move_to(t, Device{}, t.dtype());
}
// A result computed on the host, moved to the device its inputs are on.
Tensor to_device(const Tensor& t, Device d) { return d.type == DeviceType::CPU ? t : move_to(t, d, t.dtype()); }

template <class T>
using acc_t = opmath_t<T>;

// Runs f<T>() for a floating dtype; PyTorch's NotImplementedError otherwise:
// "softmax_lastdim_kernel_impl" not implemented for 'Long'.
template <class F>
void floating_only(const char* name, ScalarType dt, F&& f) {
  DESCENT_CHECK(is_floating(dt), NotImplementedError, "\"", name, "\" not implemented for '", type_word(dt), "'");
  visit_dtype(dt, [&]<typename T>() {
    if constexpr (is_float_v<T>) f.template operator()<T>();
  });
}

// A tensor's sizes around dim: the elements before it (outer), its size, and those after it (inner).
struct Around {
  int64_t outer = 1, size = 1, inner = 1;
};
Around around(const Tensor& x, int dim) {
  Around a;
  for (int d = 0; d < x.dim(); ++d) {
    if (d < dim) a.outer *= x.sizes()[d];
    if (d == dim) a.size = x.sizes()[d];
    if (d > dim) a.inner *= x.sizes()[d];
  }
  return a;
}

std::string sizes_str(const DimVector& v) {
  std::string s = "[";
  for (int i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// The result of a kernel with no optimized variant (the verifier's "single kernel").
void single_loop() { last_variant() = "reference"; }

// [SECTION] softmax and log_softmax -------------------------------------------------

// aten::_softmax(self, dim, half_to_float) and aten::_log_softmax: along
// dim, exp(x - max) / sum, or (x - max) - log(sum), the max subtracted first
// so that exp cannot overflow (PyTorch's vec_log_softmax_lastdim and
// _vec_softmax). A 0-d tensor is one row of one element.
void softmax_kernel(const OpEntry& op, DispatchKeySet, Stack& s) {
  ScopedSpan span(Floor::Kernels, op.profiler_name);
  const Tensor& self = s[0].to_tensor();
  const bool log = op.id == Op::_log_softmax;
  const int dim = wrap_dim(s[1].to_int(), self.dim() == 0 ? 1 : self.dim(), op.python_name);
  DESCENT_CHECK(!s[2].to_bool(), Error, "softmax with half to float conversion is not supported on CPU");
  const bool last = self.dim() == 0 || dim == self.dim() - 1;
  const char* name = log ? (last ? "log_softmax_lastdim_kernel_impl" : "log_softmax_kernel_impl")
                         : (last ? "softmax_lastdim_kernel_impl" : "softmax_kernel_impl");
  Tensor out;
  floating_only(name, self.dtype(), [&]<typename T>() {
    const Tensor x = on_host(self);
    out = empty_tensor(self.sizes(), self.dtype(), Device{});
    begin(span, out);
    const Around a = self.dim() == 0 ? Around{} : around(self, dim);
    const T* in = x.data<T>();
    T* y = out.data<T>();
    for (int64_t o = 0; o < a.outer; ++o)
      for (int64_t i = 0; i < a.inner; ++i) {
        const int64_t base = o * a.size * a.inner + i;
        acc_t<T> mx = -INFINITY, sum = 0;
        for (int64_t k = 0; k < a.size; ++k) mx = std::max(mx, acc_t<T>(in[base + k * a.inner]));
        if (std::isinf(mx) && mx < 0) mx = 0;  // a row of -inf: exp(-inf - 0) = 0 throughout
        for (int64_t k = 0; k < a.size; ++k) sum += std::exp(acc_t<T>(in[base + k * a.inner]) - mx);
        const acc_t<T> log_sum = std::log(sum);
        for (int64_t k = 0; k < a.size; ++k) {
          const acc_t<T> v = acc_t<T>(in[base + k * a.inner]) - mx;
          y[base + k * a.inner] = T(log ? v - log_sum : std::exp(v) / sum);
        }
      }
  });
  single_loop();
  s.set_result(to_device(out, self.device()));
}

// aten::_softmax_backward_data(grad_output, output, dim, input_dtype): the
// gradient of softmax from its output y, y * (g - sum(g * y)) along dim;
// _log_softmax_backward_data's, g - exp(y) * sum(g) (PyTorch's
// _vec_softmax_backward and _vec_log_softmax_backward).
void softmax_backward_kernel(const OpEntry& op, DispatchKeySet, Stack& s) {
  ScopedSpan span(Floor::Kernels, op.profiler_name);
  const Tensor& g = s[0].to_tensor();
  const Tensor& y = s[1].to_tensor();
  const bool log = op.id == Op::_log_softmax_backward_data;
  DESCENT_CHECK(g.sizes() == y.sizes(), Error, op.python_name, "(): grad_output of shape ", g.shape_str(),
                " and output of shape ", y.shape_str(), " differ");
  DESCENT_CHECK(g.dtype() == y.dtype(), Error, op.python_name, "(): expected grad_output and output of one dtype");
  const int dim = wrap_dim(s[2].to_int(), y.dim() == 0 ? 1 : y.dim(), op.python_name);
  Tensor out;
  floating_only(log ? "log_softmax_backward_lastdim_kernel_impl" : "softmax_backward_lastdim_kernel_impl", y.dtype(),
                [&]<typename T>() {
                  const Tensor gh = on_host(g), yh = on_host(y);
                  out = empty_tensor(y.sizes(), y.dtype(), Device{});
                  begin(span, out);
                  const Around a = y.dim() == 0 ? Around{} : around(y, dim);
                  const T *gp = gh.data<T>(), *yp = yh.data<T>();
                  T* r = out.data<T>();
                  for (int64_t o = 0; o < a.outer; ++o)
                    for (int64_t i = 0; i < a.inner; ++i) {
                      const int64_t base = o * a.size * a.inner + i;
                      acc_t<T> sum = 0;
                      for (int64_t k = 0; k < a.size; ++k) {
                        const int64_t at = base + k * a.inner;
                        sum += log ? acc_t<T>(gp[at]) : acc_t<T>(gp[at]) * acc_t<T>(yp[at]);
                      }
                      for (int64_t k = 0; k < a.size; ++k) {
                        const int64_t at = base + k * a.inner;
                        const acc_t<T> gv = gp[at], yv = yp[at];
                        r[at] = T(log ? gv - std::exp(yv) * sum : yv * (gv - sum));
                      }
                    }
                });
  single_loop();
  s.set_result(to_device(out, y.device()));
}

// [SECTION] nll_loss ---------------------------------------------------------------

// aten::nll_loss_forward(self, target, weight, reduction, ignore_index) ->
// (output, total_weight): self is [N, C] (or [C], one sample, target 0-d)
// of log-probabilities, target the class of each sample; the loss of a
// sample is -weight[t] * self[n, t], 0 where t == ignore_index; the mean
// divides the sum by the total weight of the samples counted (PyTorch's
// nll_loss_out_frame, with its checks and messages).
void nll_loss_forward_kernel(const OpEntry& op, DispatchKeySet, Stack& s) {
  ScopedSpan span(Floor::Kernels, op.profiler_name);
  const Tensor& self = s[0].to_tensor();
  const Tensor& target = s[1].to_tensor();
  const bool has_weight = s[2].is_tensor();
  const int64_t reduction = s[3].to_int(), ignore = s[4].to_int();
  DESCENT_CHECK(self.dim() > 0 && self.dim() <= 2, Error, "input tensor should be 1D or 2D");
  DESCENT_CHECK(target.dim() <= 1, Error, "0D or 1D target tensor expected, multi-target not supported");
  const bool no_batch = self.dim() == 1 && target.dim() == 0;
  DESCENT_CHECK(no_batch || self.sizes()[0] == target.sizes()[0], Error, "size mismatch (got input: ", self.shape_str(),
                ", target: ", target.shape_str(), ")");
  DESCENT_CHECK(reduction >= 0 && reduction <= 2, Error, "nll_loss(): reduction must be 0 (none), 1 (mean) or 2 (sum)");
  const int64_t classes = self.sizes()[self.dim() - 1];
  const int64_t n = self.dim() == 1 ? 1 : self.sizes()[0];
  if (has_weight) {
    const Tensor& w = s[2].to_tensor();
    DESCENT_CHECK(w.dim() <= 1 && w.numel() == classes, Error, "weight tensor should be defined either for all ",
                  classes, " classes or no classes but got weight tensor of shape: ", w.shape_str());
  }
  Tensor out, total;
  floating_only("nll_loss_out_frame", self.dtype(), [&]<typename T>() {
    DESCENT_CHECK(target.dtype() == ScalarType::Int64, Error, "expected scalar type Long but found ",
                  type_word(target.dtype()));
    if (has_weight)
      DESCENT_CHECK(s[2].to_tensor().dtype() == self.dtype(), Error, "expected scalar type ", type_word(self.dtype()),
                    " but found ", type_word(s[2].to_tensor().dtype()));
    const Tensor x = on_host(self), t = on_host(target);
    const Tensor w = has_weight ? on_host(s[2].to_tensor()) : Tensor();
    const T* xp = x.data<T>();
    const int64_t* tp = t.data<int64_t>();
    const T* wp = has_weight ? w.data<T>() : nullptr;
    out = empty_tensor(reduction == 0 && !no_batch && self.dim() == 2 ? DimVector{n} : DimVector{}, self.dtype(),
                       Device{});
    total = empty_tensor({}, self.dtype(), Device{});
    begin(span, out);
    acc_t<T> sum = 0, weights = 0;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t c = tp[i];
      acc_t<T> loss = 0;
      if (c != ignore) {
        DESCENT_CHECK(c >= 0 && c < classes, IndexError, "Target ", c, " is out of bounds.");
        const acc_t<T> wc = wp ? acc_t<T>(wp[c]) : acc_t<T>(1);
        loss = -acc_t<T>(xp[i * classes + c]) * wc;
        weights += wc;
      }
      if (reduction == 0) out.data<T>()[i] = T(loss);
      sum += loss;
    }
    total.data<T>()[0] = T(reduction == 0 ? acc_t<T>(0) : weights);
    if (reduction != 0) out.data<T>()[0] = T(reduction == 1 ? sum / weights : sum);  // 0 / 0: nan, as PyTorch's
  });
  single_loop();
  const Device device = self.device();  // `self` is a reference into s: read it before s.clear()
  s.clear();
  s.push(to_device(out, device));
  s.push(to_device(total, device));
}

// [SECTION] layer_norm -----------------------------------------------------------------

// aten::native_layer_norm(input, normalized_shape, weight, bias, eps) ->
// (output, mean, rstd): over the last len(normalized_shape) dims, (x - mean)
// * rstd * weight + bias, rstd = 1 / sqrt(var + eps), var biased (divided by
// the count); mean and rstd have input's shape with those dims 1, as
// PyTorch's LayerNormKernelImpl returns them.
void native_layer_norm_kernel(const OpEntry& op, DispatchKeySet, Stack& s) {
  ScopedSpan span(Floor::Kernels, op.profiler_name);
  const Tensor& input = s[0].to_tensor();
  const DimVector& shape = s[1].to_int_list();
  const bool has_w = s[2].is_tensor(), has_b = s[3].is_tensor();
  const double eps = s[4].to_double();
  const int nd = shape.size();
  bool fits = nd >= 1 && nd <= input.dim();
  for (int i = 0; fits && i < nd; ++i) fits = input.sizes()[input.dim() - nd + i] == shape[i];
  if (!fits) {
    std::string star = "[*";
    for (int i = 0; i < nd; ++i) star += ", " + std::to_string(shape[i]);
    DESCENT_CHECK(nd >= 1, Error,
                  "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one element, but "
                  "got normalized_shape = ",
                  sizes_str(shape));
    throw Error(str("Given normalized_shape=", sizes_str(shape), ", expected input with shape ", star,
                    "], but got input of size", input.shape_str()));
  }
  for (int k = 2; k <= 3; ++k)
    if (s[k].is_tensor())
      DESCENT_CHECK(s[k].to_tensor().sizes() == shape, Error, "Expected ", k == 2 ? "weight" : "bias",
                    " to be of same shape as normalized_shape, but got ", k == 2 ? "weight" : "bias", " of shape ",
                    s[k].to_tensor().shape_str(), " and normalized_shape = ", sizes_str(shape));
  DimVector stat_shape = input.sizes();
  for (int i = 0; i < nd; ++i) stat_shape[input.dim() - nd + i] = 1;
  Tensor out, mean, rstd;
  floating_only("LayerNormKernelImpl", input.dtype(), [&]<typename T>() {
    const Tensor x = on_host(input);
    const Tensor w = has_w ? on_host(s[2].to_tensor()) : Tensor(), b = has_b ? on_host(s[3].to_tensor()) : Tensor();
    out = empty_tensor(input.sizes(), input.dtype(), Device{});
    mean = empty_tensor(stat_shape, input.dtype(), Device{});
    rstd = empty_tensor(stat_shape, input.dtype(), Device{});
    begin(span, out);
    const int64_t m = numel_of(shape), rows = m ? input.numel() / m : 0;
    const T* xp = x.data<T>();
    T* y = out.data<T>();
    for (int64_t r = 0; r < rows; ++r) {
      const T* row = xp + r * m;
      acc_t<T> sum = 0, sq = 0;
      for (int64_t i = 0; i < m; ++i) sum += acc_t<T>(row[i]);
      const acc_t<T> mu = sum / acc_t<T>(m);
      for (int64_t i = 0; i < m; ++i) sq += (acc_t<T>(row[i]) - mu) * (acc_t<T>(row[i]) - mu);
      const acc_t<T> inv = acc_t<T>(1) / std::sqrt(sq / acc_t<T>(m) + acc_t<T>(eps));
      for (int64_t i = 0; i < m; ++i) {
        acc_t<T> v = (acc_t<T>(row[i]) - mu) * inv;
        if (has_w) v *= acc_t<T>(w.data<T>()[i]);
        if (has_b) v += acc_t<T>(b.data<T>()[i]);
        y[r * m + i] = T(v);
      }
      mean.data<T>()[r] = T(mu);
      rstd.data<T>()[r] = T(inv);
    }
  });
  single_loop();
  const Device device = input.device();  // `input` is a reference into s: read it before s.clear()
  s.clear();
  s.push(to_device(out, device));
  s.push(to_device(mean, device));
  s.push(to_device(rstd, device));
}

// [SECTION] embedding ------------------------------------------------------------------

// aten::embedding(weight, indices, padding_idx, scale_grad_by_freq, sparse):
// the rows of weight that indices name, in indices' shape + [embedding_dim]
// (PyTorch's weight.index_select(0, indices.reshape(-1)).view(...), one
// copy loop here). padding_idx and scale_grad_by_freq change only the
// gradient (EmbeddingBackward0, derivatives.cpp).
void embedding_kernel(const OpEntry& op, DispatchKeySet, Stack& s) {
  ScopedSpan span(Floor::Kernels, op.profiler_name);
  const Tensor& weight = s[0].to_tensor();
  const Tensor& indices = s[1].to_tensor();
  DESCENT_CHECK(weight.dim() == 2, Error, "'weight' must be 2-D");
  DESCENT_CHECK(indices.dtype() == ScalarType::Int64 || indices.dtype() == ScalarType::Int32, Error,
                "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but "
                "got ",
                "torch.", type_word(indices.dtype()), "Tensor", " instead (while checking arguments for embedding)");
  DESCENT_CHECK(!s[4].to_bool(), NotImplementedError, "embedding(): sparse gradients are not supported in descent");
  const Tensor w = on_host(weight), idx = on_host(indices);
  const int64_t rows = weight.sizes()[0], d = weight.sizes()[1];
  DimVector shape = indices.sizes();
  shape.push_back(d);
  Tensor out = empty_tensor(shape, weight.dtype(), Device{});
  begin(span, out);
  const size_t row_bytes = size_t(d) * element_size(weight.dtype());
  for (int64_t i = 0; i < indices.numel(); ++i) {
    const int64_t r = idx.dtype() == ScalarType::Int64 ? idx.data<int64_t>()[i] : idx.data<int32_t>()[i];
    DESCENT_CHECK(r >= 0 && r < rows, IndexError, "index out of range in self");
    if (row_bytes)
      std::memcpy(static_cast<char*>(out.data_ptr()) + size_t(i) * row_bytes,
                  static_cast<const char*>(w.data_ptr()) + size_t(r) * row_bytes, row_bytes);
  }
  single_loop();
  s.set_result(to_device(out, weight.device()));
}

// [SECTION] Binary cross-entropy ---------------------------------------------------------

// The loss's reduction: 0 none (the elements), 1 mean, 2 sum, over `loss`'s elements.
template <class T>
Tensor reduce_loss(const std::vector<acc_t<T>>& loss, const DimVector& shape, ScalarType dt, int64_t reduction) {
  if (reduction == 0) {
    Tensor out = empty_tensor(shape, dt, Device{});
    for (size_t i = 0; i < loss.size(); ++i) out.data<T>()[i] = T(loss[i]);
    return out;
  }
  acc_t<T> sum = 0;
  for (acc_t<T> v : loss) sum += v;
  Tensor out = empty_tensor({}, dt, Device{});
  out.data<T>()[0] = T(reduction == 1 ? sum / acc_t<T>(loss.size()) : sum);
  return out;
}

// `t` (a tensor of the loss's inputs) broadcast to `shape` and laid out on the host.
Tensor broadcast_on_host(const Tensor& t, const DimVector& shape, const char* op) {
  broadcast_shapes(t.sizes(), shape, op);
  return on_host(call(Op::contiguous, expand_to(on_host(t), shape)));
}

// aten::binary_cross_entropy(self, target, weight, reduction): -w * (t *
// log(x) + (1 - t) * log(1 - x)), each log clamped at -100 so that a
// probability of 0 or 1 gives a finite loss (PyTorch's binary_cross_entropy_out_cpu).
void binary_cross_entropy_kernel(const OpEntry& op, DispatchKeySet, Stack& s) {
  ScopedSpan span(Floor::Kernels, op.profiler_name);
  const Tensor& self = s[0].to_tensor();
  const Tensor& target = s[1].to_tensor();
  const int64_t reduction = s[3].to_int();
  DESCENT_CHECK(self.sizes() == target.sizes(), Error, "binary_cross_entropy(): input of shape ", self.shape_str(),
                " and target of shape ", target.shape_str(), " differ");
  DESCENT_CHECK(target.dtype() == self.dtype(), Error, "Found dtype ", type_word(target.dtype()), " but expected ",
                type_word(self.dtype()));
  Tensor out;
  floating_only("binary_cross_entropy", self.dtype(), [&]<typename T>() {
    const Tensor x = on_host(self), t = on_host(target);
    const Tensor w = s[2].is_tensor() ? broadcast_on_host(s[2].to_tensor(), self.sizes(), op.python_name) : Tensor();
    std::vector<acc_t<T>> loss(size_t(self.numel()));
    for (int64_t i = 0; i < self.numel(); ++i) {
      const acc_t<T> xi = x.data<T>()[i], ti = t.data<T>()[i];
      DESCENT_CHECK(xi >= 0 && xi <= 1, Error, "all elements of input should be between 0 and 1");
      const acc_t<T> lx = std::max(std::log(xi), acc_t<T>(-100)), l1x = std::max(std::log(1 - xi), acc_t<T>(-100));
      loss[size_t(i)] = -((ti * lx) + (1 - ti) * l1x) * (w.defined() ? acc_t<T>(w.data<T>()[i]) : acc_t<T>(1));
    }
    out = reduce_loss<T>(loss, self.sizes(), self.dtype(), reduction);
    begin(span, out);
  });
  single_loop();
  s.set_result(to_device(out, self.device()));
}

// aten::binary_cross_entropy_with_logits(self, target, weight, pos_weight,
// reduction): binary cross-entropy of sigmoid(self), computed from the
// logit as (1 - t) * x + (1 + (pw - 1) * t) * (log(1 + exp(-|x|)) + max(-x, 0)),
// which never takes the log of 0 (PyTorch's formula); pos_weight broadcasts
// along the last dim (one weight a class), weight over the whole loss.
void bce_with_logits_kernel(const OpEntry& op, DispatchKeySet, Stack& s) {
  ScopedSpan span(Floor::Kernels, op.profiler_name);
  const Tensor& self = s[0].to_tensor();
  const Tensor& target = s[1].to_tensor();
  const int64_t reduction = s[4].to_int();
  DESCENT_CHECK(self.sizes() == target.sizes(), ValueError, "Target size (", target.shape_str(),
                ") must be the same as input size (", self.shape_str(), ")");
  Tensor out;
  floating_only("binary_cross_entropy_with_logits", self.dtype(), [&]<typename T>() {
    const Tensor x = on_host(self), t = on_host(call(Op::_to_copy, target, self.dtype(), IValue()));
    const Tensor w = s[2].is_tensor() ? broadcast_on_host(s[2].to_tensor(), self.sizes(), op.python_name) : Tensor();
    const Tensor pw = s[3].is_tensor() ? broadcast_on_host(s[3].to_tensor(), self.sizes(), op.python_name) : Tensor();
    std::vector<acc_t<T>> loss(size_t(self.numel()));
    for (int64_t i = 0; i < self.numel(); ++i) {
      const acc_t<T> xi = x.data<T>()[i], ti = t.data<T>()[i];
      const acc_t<T> soft = std::log1p(std::exp(-std::fabs(xi))) + std::max(-xi, acc_t<T>(0));
      const acc_t<T> pwi = pw.defined() ? acc_t<T>(pw.data<T>()[i]) : acc_t<T>(1);
      acc_t<T> l = (1 - ti) * xi + (1 + (pwi - 1) * ti) * soft;
      if (w.defined()) l *= acc_t<T>(w.data<T>()[i]);
      loss[size_t(i)] = l;
    }
    out = reduce_loss<T>(loss, self.sizes(), self.dtype(), reduction);
    begin(span, out);
  });
  single_loop();
  s.set_result(to_device(out, self.device()));
}

// [SECTION] Composites ------------------------------------------------------------------

// The first result of a call that returns several (nll_loss_forward's output,
// native_layer_norm's).
template <typename... Args>
Tensor first_of(Op op, Args&&... args) {
  Stack s;
  (s.push(argument(std::forward<Args>(args))), ...);
  call_boxed(op, s);
  return std::move(s[0].owned_tensor());
}

// aten::softmax.int(self, dim, dtype) and log_softmax.int: _softmax of self
// (cast to dtype first when one is given), as at::native::softmax.
void softmax_composite(const OpEntry& op, DispatchKeySet, Stack& s) {
  Tensor x = s[0].to_tensor();
  if (!s[2].is_none()) x = call(Op::to, x, s[2].to_scalar_type());
  s.set_result(call(op.id == Op::softmax ? Op::_softmax : Op::_log_softmax, x, s[1].to_int(), false));
}

// Note [nll_loss of more than two dims]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// PyTorch calls nll_loss2d for 4-D input (NllLoss2DBackward0) and views 3-D
// and >4-D input as 4-D; descent has no nll_loss2d and folds every case into
// a 2-D nll_loss_forward (the class dim moved last by permute, the rest
// folded into samples by reshape), so its node is NllLossBackward0 over the
// reshape's (UnsafeViewBackward0, CloneBackward0) and PermuteBackward0.

// aten::nll_loss_nd: nll_loss_forward for 1-D and 2-D input; for [N, C, d1,
// ...], Note [nll_loss of more than two dims].
Tensor nll_loss_nd(const Tensor& self, const Tensor& target, const IValue& weight, int64_t reduction, int64_t ignore) {
  DESCENT_CHECK(self.dim() >= 1, Error, "Expected 1 or more dimensions (got ", self.dim(), ")");
  DESCENT_CHECK(self.dim() == 1 || target.dim() == 0 || self.sizes()[0] == target.sizes()[0], ValueError,
                "Expected input batch_size (", self.sizes()[0], ") to match target batch_size (",
                target.dim() ? target.sizes()[0] : 0, ").");
  if (self.dim() <= 2) return first_of(Op::nll_loss_forward, self, target, weight, reduction, ignore);
  const int64_t classes = self.sizes()[1];
  DimVector rest{self.sizes()[0]}, perm{0};
  for (int d = 2; d < self.dim(); ++d) rest.push_back(self.sizes()[d]), perm.push_back(d);
  perm.push_back(1);
  DESCENT_CHECK(target.sizes() == rest, Error, "Expected target size ", sizes_str(rest), ", got ", target.shape_str());
  const Tensor flat = call(Op::reshape, call(Op::permute, self, perm), DimVector{-1, classes});
  const Tensor out =
      first_of(Op::nll_loss_forward, flat, call(Op::reshape, target, DimVector{-1}), weight, reduction, ignore);
  return reduction == 0 ? call(Op::reshape, out, rest) : out;
}

void nll_loss_composite(const OpEntry&, DispatchKeySet, Stack& s) {
  s.set_result(nll_loss_nd(s[0].to_tensor(), s[1].to_tensor(), s[2], s[3].to_int(), s[4].to_int()));
}

// aten::cross_entropy_loss(self, target, weight, reduction, ignore_index,
// label_smoothing): log_softmax over the class dim, then nll_loss_nd for
// class indices, or -(log p * target) summed over classes for class
// probabilities (a floating target of self's shape); label_smoothing mixes
// in the uniform distribution (PyTorch's cross_entropy_loss, _prob_target
// and _label_smoothing, with their checks).
void cross_entropy_composite(const OpEntry&, DispatchKeySet, Stack& s) {
  const Tensor& self = s[0].to_tensor();
  const Tensor& target = s[1].to_tensor();
  const IValue& weight = s[2];
  const int64_t reduction = s[3].to_int(), ignore = s[4].to_int();
  const double smoothing = s[5].to_double();
  DESCENT_CHECK(smoothing >= 0.0 && smoothing <= 1.0, Error,
                "label_smoothing must be between 0.0 and 1.0. Got: ", smoothing);
  const int64_t class_dim = self.dim() == 1 ? 0 : 1;
  const Tensor logp = call(Op::log_softmax, self, class_dim, self.dtype());
  const int64_t classes = self.dim() == 0 ? 1 : self.sizes()[int(class_dim)];
  // weight, viewed to broadcast along the class dim: [C] as [1, C, 1, ...].
  auto weight_along = [&]() {
    DimVector v(std::vector<int64_t>(size_t(self.dim()), 1));
    v[int(class_dim)] = classes;
    return call(Op::view, weight.to_tensor(), v);
  };
  // Class probabilities: a floating target of self's shape (any other target is class indices, whose
  // dtype nll_loss checks: "expected scalar type Long but found Float").
  if (is_floating(target.dtype()) && self.sizes() == target.sizes()) {
    DESCENT_CHECK(ignore == -100, Error, "ignore_index is not supported for floating point target");
    Tensor t = target;
    if (smoothing > 0)
      t = call(Op::add, call(Op::mul, t, scalar_tensor(Scalar(1 - smoothing))),
               scalar_tensor(Scalar(smoothing / double(classes))));
    Tensor prod = call(Op::mul, logp, t);
    if (weight.is_tensor()) prod = call(Op::mul, prod, weight_along());
    const int64_t per_sample = self.numel() / std::max<int64_t>(classes, 1);
    switch (reduction) {
      case 0:
        return s.set_result(call(Op::neg, call(Op::sum_dim, prod, DimVector{class_dim}, false)));
      case 2:
        return s.set_result(call(Op::neg, call(Op::sum, prod)));
      default:
        return s.set_result(
            call(Op::div, call(Op::neg, call(Op::sum, prod)), scalar_tensor(Scalar(double(per_sample)))));
    }
  }
  const Tensor nll = nll_loss_nd(logp, target, weight, reduction, ignore);
  if (smoothing <= 0) return s.set_result(nll);
  // Label smoothing with class indices: (1 - ls) * nll + ls / C * smooth,
  // smooth = -sum over classes of logp (times weight), 0 at ignored samples.
  Tensor per_class = weight.is_tensor() ? call(Op::mul, logp, weight_along()) : logp;
  const Tensor kept = call(Op::ne, target, scalar_tensor(Scalar(ignore)));  // not ignored
  Tensor smooth = call(Op::mul, call(Op::neg, call(Op::sum_dim, per_class, DimVector{class_dim}, false)), kept);
  Tensor ret;
  if (reduction == 0) {
    ret = smooth;
  } else if (reduction == 2) {
    ret = call(Op::sum, smooth);
  } else if (weight.is_tensor()) {  // normalized by the weights of the samples kept, as nll_loss's mean is
    const Tensor safe = call(Op::mul, target, kept);
    OptionalTensorList at;
    at.push_back(safe);
    const Tensor w = call(Op::mul, call(Op::index, weight.to_tensor(), at), kept);
    ret = call(Op::div, call(Op::sum, smooth), call(Op::sum, w));
  } else {
    ret = call(Op::div, call(Op::sum, smooth), call(Op::sum, kept));
  }
  s.set_result(call(Op::add, call(Op::mul, nll, scalar_tensor(Scalar(1 - smoothing))),
                    call(Op::mul, ret, scalar_tensor(Scalar(smoothing / double(classes))))));
}

// aten::layer_norm: native_layer_norm's output (at::native::layer_norm_symint).
void layer_norm_composite(const OpEntry&, DispatchKeySet, Stack& s) {
  s.set_result(first_of(Op::native_layer_norm, s[0].to_tensor(), s[1], s[2], s[3], s[4].to_double()));
}

// Note [dropout's draws]
// ~~~~~~~~~~~~~~~~~~~~~~~
// aten::dropout(input, p, train), as PyTorch's CPU _dropout: input itself
// when p is 0, not training or empty; else input * noise, noise a Bernoulli
// draw of 1 - p divided by 1 - p, so the gradient is MulBackward0 (PyTorch's
// fused native_dropout serves CUDA only). The noise is rand(...) < 1 - p,
// where PyTorch's is bernoulli_(1 - p): the same distribution, not the same
// numbers for a given seed.
void dropout_composite(const OpEntry&, DispatchKeySet, Stack& s) {
  const Tensor& input = s[0].to_tensor();
  const double p = s[1].to_double();
  DESCENT_CHECK(p >= 0 && p <= 1, Error, "dropout probability has to be between 0 and 1, but got ", p);
  if (p == 0 || !s[2].to_bool() || input.numel() == 0) {
    last_variant() = "none";
    return s.set_result(Tensor(input));
  }
  if (p == 1) return s.set_result(call(Op::mul, input, call(Op::zeros, input.sizes(), input.dtype(), input.device())));
  const Tensor u = call(Op::rand, input.sizes(), input.dtype(), input.device());
  const Tensor keep = call(Op::_to_copy, call(Op::lt, u, scalar_tensor(Scalar(1 - p))), input.dtype(), IValue());
  s.set_result(call(Op::mul, input, call(Op::div, keep, scalar_tensor(Scalar(1 - p)))));
}

// aten::one_hot(self, num_classes): int64 [*, num_classes], 1 at each
// element's class (num_classes -1: the largest class + 1). PyTorch writes the
// ones with zeros(...).scatter_; descent compares self with arange(num_classes).
void one_hot_composite(const OpEntry&, DispatchKeySet, Stack& s) {
  const Tensor& self = s[0].to_tensor();
  int64_t classes = s[1].to_int();
  DESCENT_CHECK(self.dtype() == ScalarType::Int64, Error,
                "one_hot is only applicable to index tensor of type LongTensor.");
  if (self.numel() == 0) {
    DESCENT_CHECK(classes > 0, Error, "Can not infer total number of classes from empty tensor.");
  } else {
    Stack lo, hi;
    lo.push(call(Op::neg, call(Op::max, call(Op::neg, self))));
    hi.push(call(Op::max, self));
    call_boxed(Op::item, lo);
    call_boxed(Op::item, hi);
    DESCENT_CHECK(lo[0].to_int() >= 0, Error, "Class values must be non-negative.");
    if (classes == -1) classes = hi[0].to_int() + 1;
    DESCENT_CHECK(hi[0].to_int() < classes, Error, "Class values must be smaller than num_classes.");
  }
  const Tensor range = call(Op::arange, Scalar(classes), ScalarType::Int64, self.device());
  const Tensor hit = call(Op::eq, call(Op::unsqueeze, self, int64_t{-1}), range);
  s.set_result(call(Op::_to_copy, hit, ScalarType::Int64, IValue()));
}

// [SECTION] conv2d and max_pool2d --------------------------------------------------------

// Note [conv2d and max_pool2d gather windows]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// aten::conv2d and aten::max_pool2d are composites here, of ops descent has:
// the input, padded (zeros for conv2d, -inf for max_pool2d, joined to it by
// cat), is read window by window with one advanced index
// (aten::index with two index tensors of shape [OH, 1, KH, 1] and
// [1, OW, 1, KW]: every output position's kernel window, im2col), then
// conv2d is one mm per group of the windows by the weight, and max_pool2d a
// max over each window. So every device runs them and their gradients come
// from their parts (IndexBackward0, MmBackward0, MaxBackward0, ...), where
// PyTorch's CPU calls one kernel each with its own node (ConvolutionBackward0,
// MaxPool2DWithIndicesBackward0) and its own optimized loops. The values,
// and which element of a window a max's gradient reaches (the first
// maximum), are PyTorch's. max_pool2d's stride is `int[2]? stride=None`
// where aten writes `int[2] stride=[]` (an empty list, the kernel size):
// descent's schema parser reads no list defaults; ceil_mode=True is refused.

// An int[2] argument as (h, w): one int stands for both, as in PyTorch.
std::pair<int64_t, int64_t> pair_of(const IValue& v, const char* op, const char* name) {
  if (v.is_scalar()) return {v.to_int(), v.to_int()};
  const DimVector& l = v.to_int_list();
  DESCENT_CHECK(l.size() == 1 || l.size() == 2, Error, op, "(): ", name, " must be one int or two, got ", sizes_str(l));
  return {l[0], l[l.size() - 1]};
}

// x ([N, C, H, W]) padded by (ph, pw) with `value` on every side: blocks of
// `value` joined to it by cat, whose gradient (CatBackward0) is sliced back
// out and can be differentiated again.
Tensor padded(const Tensor& x, int64_t ph, int64_t pw, double value) {
  Tensor t = x;
  for (int d : {3, 2}) {
    const int64_t p = d == 3 ? pw : ph;
    if (p == 0) continue;
    DimVector sizes = t.sizes();
    sizes[d] = p;
    const Tensor block = call(Op::full, sizes, Scalar(value), x.dtype(), x.device());
    OptionalTensorList parts;
    parts.push_back(block);
    parts.push_back(t);
    parts.push_back(block);
    t = call(Op::cat, parts, int64_t{d});
  }
  return t;
}

// Each output position's window of a [N, C, Hp, Wp] input: [N, C, OH, OW, KH, KW].
Tensor windows(const Tensor& xp, int64_t oh, int64_t ow, std::pair<int64_t, int64_t> k,
               std::pair<int64_t, int64_t> stride, std::pair<int64_t, int64_t> dil) {
  auto range = [&](int64_t n, int64_t step, DimVector shape) {
    const Tensor r =
        call(Op::arange_start_step, Scalar(int64_t{0}), Scalar(n * step), Scalar(step), ScalarType::Int64, xp.device());
    return call(Op::view, r, shape);
  };
  const Tensor ih =
      call(Op::add, range(oh, stride.first, {oh, 1, 1, 1}), range(k.first, dil.first, {1, 1, k.first, 1}));
  const Tensor iw =
      call(Op::add, range(ow, stride.second, {1, ow, 1, 1}), range(k.second, dil.second, {1, 1, 1, k.second}));
  OptionalTensorList at;
  at.push_back(Tensor());
  at.push_back(Tensor());
  at.push_back(ih);
  at.push_back(iw);
  return call(Op::index, xp, at);
}

// The output size along one dim, PyTorch's formula, and its check.
int64_t out_size(int64_t in, int64_t pad, int64_t k, int64_t stride, int64_t dil, const char* op) {
  const int64_t span = dil * (k - 1) + 1;
  DESCENT_CHECK(in + 2 * pad >= span, Error, op, "(): Calculated padded input size per channel: (", in + 2 * pad,
                "). Kernel size: (", span, "). Kernel size can't be greater than actual input size");
  return (in + 2 * pad - span) / stride + 1;
}

// aten::conv2d(input, weight, bias, stride, padding, dilation, groups):
// Note [conv2d and max_pool2d gather windows].
void conv2d_composite(const OpEntry& op, DispatchKeySet, Stack& s) {
  const Tensor& input = s[0].to_tensor();
  const Tensor& weight = s[1].to_tensor();
  const auto stride = pair_of(s[3], op.python_name, "stride"), pad = pair_of(s[4], op.python_name, "padding");
  const auto dil = pair_of(s[5], op.python_name, "dilation");
  const int64_t groups = s[6].to_int();
  DESCENT_CHECK(input.dim() == 3 || input.dim() == 4, Error,
                "Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: ", input.shape_str());
  DESCENT_CHECK(weight.dim() == 4, Error, "weight of conv2d should be 4-D, but got weight of size ",
                weight.shape_str());
  DESCENT_CHECK(groups > 0 && weight.sizes()[0] % groups == 0, Error, "Given groups=", groups,
                ", expected weight to be divisible by ", groups,
                " at dimension 0, but got "
                "weight of size ",
                weight.shape_str(), " instead");
  DESCENT_CHECK(stride.first > 0 && stride.second > 0, Error, "non-positive stride is not supported");
  const bool batched = input.dim() == 4;
  const Tensor x = batched ? input : call(Op::unsqueeze, input, int64_t{0});
  const int64_t n = x.sizes()[0], c = x.sizes()[1], oc = weight.sizes()[0], cg = weight.sizes()[1];
  if (c != cg * groups) {
    DimVector expect = x.sizes();
    throw Error(str("Given groups=", groups, ", weight of size ", weight.shape_str(), ", expected input", x.shape_str(),
                    " to have ", cg * groups, " channels, but got ", c, " channels instead"));
  }
  const std::pair<int64_t, int64_t> k{weight.sizes()[2], weight.sizes()[3]};
  const int64_t oh = out_size(x.sizes()[2], pad.first, k.first, stride.first, dil.first, op.python_name);
  const int64_t ow = out_size(x.sizes()[3], pad.second, k.second, stride.second, dil.second, op.python_name);
  const Tensor cols = call(Op::permute, windows(padded(x, pad.first, pad.second, 0.0), oh, ow, k, stride, dil),
                           DimVector{0, 2, 3, 1, 4, 5});  // [N, OH, OW, C, KH, KW]
  const int64_t ocg = oc / groups;
  std::vector<Tensor> parts;
  for (int64_t g = 0; g < groups; ++g) {
    const Tensor cg_cols = groups == 1 ? cols : call(Op::slice, cols, int64_t{3}, g * cg, (g + 1) * cg, int64_t{1});
    const Tensor wg = groups == 1 ? weight : call(Op::slice, weight, int64_t{0}, g * ocg, (g + 1) * ocg, int64_t{1});
    parts.push_back(call(Op::mm, call(Op::reshape, cg_cols, DimVector{n * oh * ow, cg * k.first * k.second}),
                         call(Op::t, call(Op::reshape, wg, DimVector{ocg, cg * k.first * k.second}))));
  }
  Tensor out = parts[0];
  if (groups > 1) {
    OptionalTensorList l;
    for (const Tensor& p : parts) l.push_back(p);
    out = call(Op::cat, l, int64_t{1});
  }
  out = call(Op::permute, call(Op::view, out, DimVector{n, oh, ow, oc}), DimVector{0, 3, 1, 2});
  if (s[2].is_tensor()) out = call(Op::add, out, call(Op::view, s[2].to_tensor(), DimVector{1, oc, 1, 1}));
  out = call(Op::contiguous, out);
  s.set_result(batched ? out : call(Op::select, out, int64_t{0}, int64_t{0}));
}

// aten::max_pool2d(self, kernel_size, stride, padding, dilation, ceil_mode):
// the largest element of each window (Note [conv2d and max_pool2d gather windows]).
void max_pool2d_composite(const OpEntry& op, DispatchKeySet, Stack& s) {
  const Tensor& input = s[0].to_tensor();
  const auto k = pair_of(s[1], op.python_name, "kernel_size");
  const auto stride = s[2].is_none() || (!s[2].is_scalar() && s[2].to_int_list().size() == 0)
                          ? k
                          : pair_of(s[2], op.python_name, "stride");
  const auto pad = pair_of(s[3], op.python_name, "padding"), dil = pair_of(s[4], op.python_name, "dilation");
  DESCENT_CHECK(!s[5].to_bool(), NotImplementedError, "max_pool2d(): ceil_mode=True is not implemented in descent");
  DESCENT_CHECK(input.dim() == 3 || input.dim() == 4, Error,
                "non-empty 3D or 4D (batch mode) tensor expected for input");
  DESCENT_CHECK(stride.first > 0 && stride.second > 0, Error,
                "stride should be greater than zero, but got dH: ", stride.first, " dW: ", stride.second);
  DESCENT_CHECK(pad.first <= (dil.first * (k.first - 1) + 1) / 2 && pad.second <= (dil.second * (k.second - 1) + 1) / 2,
                Error, "pad should be at most half of effective kernel size, but got pad=", pad.first,
                ", kernel_size=", k.first, " and dilation=", dil.first);
  const bool batched = input.dim() == 4;
  const Tensor x = batched ? input : call(Op::unsqueeze, input, int64_t{0});
  const int64_t oh = out_size(x.sizes()[2], pad.first, k.first, stride.first, dil.first, op.python_name);
  const int64_t ow = out_size(x.sizes()[3], pad.second, k.second, stride.second, dil.second, op.python_name);
  const Tensor w = windows(padded(x, pad.first, pad.second, -INFINITY), oh, ow, k, stride, dil);
  const Tensor flat = call(Op::reshape, w, DimVector{x.sizes()[0], x.sizes()[1], oh, ow, k.first * k.second});
  const Tensor out = first_of(Op::max_dim, flat, int64_t{-1}, false);
  s.set_result(batched ? out : call(Op::select, out, int64_t{0}, int64_t{0}));
}
}  // namespace

// [SECTION] Registration -------------------------------------------------------------------

// The boxed kernel of an nn row (register_kernels.cpp asks first), or null.
BoxedKernel nn_kernel(Op op) {
  switch (op) {
    case Op::_softmax:
    case Op::_log_softmax:
      return softmax_kernel;
    case Op::_softmax_backward_data:
    case Op::_log_softmax_backward_data:
      return softmax_backward_kernel;
    case Op::nll_loss_forward:
      return nll_loss_forward_kernel;
    case Op::native_layer_norm:
      return native_layer_norm_kernel;
    case Op::embedding:
      return embedding_kernel;
    case Op::binary_cross_entropy:
      return binary_cross_entropy_kernel;
    case Op::binary_cross_entropy_with_logits:
      return bce_with_logits_kernel;
    default:
      return nullptr;
  }
}

// The nn composites, at CompositeImplicitAutograd (composites.cpp's library).
void register_nn_composites(Library& m) {
  m.impl(Op::softmax, softmax_composite);
  m.impl(Op::log_softmax, softmax_composite);
  m.impl(Op::nll_loss, nll_loss_composite);
  m.impl(Op::nll_loss_nd, nll_loss_composite);
  m.impl(Op::cross_entropy_loss, cross_entropy_composite);
  m.impl(Op::layer_norm, layer_norm_composite);
  m.impl(Op::dropout, dropout_composite);
  m.impl(Op::one_hot, one_hot_composite);
  m.impl(Op::conv2d, conv2d_composite);
  m.impl(Op::max_pool2d, max_pool2d_composite);
}

}  // namespace descent::kernels
