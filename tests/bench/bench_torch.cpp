// libtorch's side of the C++ benchmark (tests/bench/bench.py runs both):
// at::add of two 1-element CPU tensors as it is, and under c10::InferenceMode
// (the fair pair for a call that does no autograd work: the Autograd and
// ADInplaceOrView keys are excluded, as descent's calls skip them by
// fallthrough), with one input requiring grad (a node recorded), and at::empty({0}).
#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include "tests/bench/timing.h"

int main() {
  at::Tensor a = at::randn({1});
  at::Tensor b = at::randn({1});
  const long n = 200000;
  bench::report("torch_cpp_add_1elem", bench::median_ns_per_call([&] { at::Tensor c = at::add(a, b); }, n));
  {
    c10::InferenceMode guard;
    bench::report("torch_cpp_add_1elem_inference", bench::median_ns_per_call([&] { at::Tensor c = at::add(a, b); }, n));
  }
  at::Tensor w = at::randn({1}).requires_grad_();
  bench::report("torch_cpp_add_1elem_grad", bench::median_ns_per_call([&] { at::Tensor c = at::add(w, b); }, n));
  bench::report("torch_cpp_empty_0", bench::median_ns_per_call([&] { at::Tensor c = at::empty({0}); }, n));
  return 0;
}
