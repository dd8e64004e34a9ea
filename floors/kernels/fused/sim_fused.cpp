// The simulated device's fused kernel: the fusion IR parsed into a program,
// and the program interpreted in one launch. See Note [An interpreted fused
// kernel on sim:0] (sim_fused.h).
//
// [SECTION] The program
// [SECTION] Parsing the IR
// [SECTION] The interpreter
// [SECTION] The launches
#include "floors/kernels/fused/sim_fused.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "floors/core/error.h"
#include "floors/kernels/device/device_reduce.h"
#include "floors/kernels/elementwise.h"
#include "floors/launch/launch.h"
#include "floors/streams/streams.h"
#include "tracer/tracer.h"

namespace descent::kernels::device {

// [SECTION] The program ------------------------------------------------------------------

namespace {

constexpr int kStrip = 256;  // the elements one block computes at a time

enum class Kind { Load, Const, Unary, Binary, Reduce };
enum class Red { None, Sum, Mean, Max };

// One instruction, one register: what `%name = ...` says.
struct Instr {
  Kind kind = Kind::Load;
  std::string name;
  std::string op;  // the IR's op name
  Op aten = Op::add;
  int input = -1;      // Load: which input
  int a = -1, b = -1;  // Unary, Binary, Reduce: the operand registers
  double value = 0;    // Const
};

// An input, seen broadcast to the program's shape: its stride on each of
// the program's dims (0 where it broadcasts), as cpp_kernel.py's
// _index_expr indexes it; `flat` where element i is at offset i.
struct Input {
  std::string dtype;
  std::vector<int64_t> shape, stride, bstride;
  bool flat = false;
};

// The IR's op names and their ops (descent/_compile/groups.py's POINTWISE).
struct OpName {
  const char* name;
  Op op;
  bool binary;
};
constexpr OpName kOps[] = {
    {"add", Op::add, true},    {"sub", Op::sub, true},    {"mul", Op::mul, true},
    {"div", Op::div, true},    {"neg", Op::neg, false},   {"abs", Op::abs, false},
    {"relu", Op::relu, false}, {"exp", Op::exp, false},   {"log", Op::log, false},
    {"sqrt", Op::sqrt, false}, {"tanh", Op::tanh, false}, {"sigmoid", Op::sigmoid, false},
    {"sin", Op::sin, false},   {"cos", Op::cos, false},   {"reciprocal", Op::reciprocal, false},
};

}  // namespace

struct FusedProgram {
  std::string ir_text;
  const char* name = "";
  ScalarType dtype = ScalarType::Float32;
  std::vector<int64_t> shape;
  int64_t numel = 1;
  std::vector<Input> inputs;
  std::vector<Instr> code;
  std::vector<int> outputs;  // the register of each output, in the IR's order
  // The reduction that ends the chain, if any: its instruction, the
  // register it reduces, its dims, and eager's plan for the same shape.
  Red red = Red::None;
  int red_instr = -1, red_src = -1;
  std::vector<int> dims;
  bool keepdim = false;
  ReducePlan plan;
};

// [SECTION] Parsing the IR -----------------------------------------------------------------

namespace {

[[noreturn]] void bad(int line, const std::string& text, const std::string& why) {
  throw ValueError(str("the fused kernel's IR, line ", line, " (", text, "): ", why));
}

// `[4, 5]` or `[1,2]` from position `at` of `s`; `at` moves past the `]`.
std::vector<int64_t> int_list(const std::string& s, size_t& at, int line) {
  while (at < s.size() && s[at] == ' ') ++at;
  if (at >= s.size() || s[at] != '[') bad(line, s, "expected a list [...]");
  const size_t end = s.find(']', at);
  if (end == std::string::npos) bad(line, s, "a list without its ]");
  std::vector<int64_t> out;
  std::string item;
  std::stringstream in(s.substr(at + 1, end - at - 1));
  while (std::getline(in, item, ',')) {
    char* stop = nullptr;
    const long long v = std::strtoll(item.c_str(), &stop, 10);
    if (stop == item.c_str()) bad(line, s, "not an integer: " + item);
    out.push_back(v);
  }
  at = end + 1;
  return out;
}

std::vector<std::string> words(const std::string& s) {
  std::vector<std::string> w;
  std::stringstream in(s);
  for (std::string x; in >> x;) w.push_back(x);
  return w;
}

// The strides over the program's dims of an input of (shape, stride), and
// whether it is the program's own contiguous layout.
void broadcast(Input& in, const std::vector<int64_t>& out) {
  const size_t nd = out.size(), pad = nd - in.shape.size();
  in.bstride.assign(nd, 0);
  for (size_t d = pad; d < nd; ++d)
    if (in.shape[d - pad] != 1 && out[d] != 1) in.bstride[d] = in.stride[d - pad];
  in.flat = in.shape == out;
  int64_t acc = 1;
  for (size_t d = nd; d-- > 0 && in.flat;) {
    if (out[d] != 1 && in.bstride[d] != acc) in.flat = false;
    acc *= out[d];
  }
}

// eager's plan (plan_reduction, device_reduce_matmul.cpp) for reducing a
// contiguous tensor of `shape` over `dims`, 16-byte aligned.
ReducePlan plan_of(const std::vector<int64_t>& shape, const std::vector<int>& dims, ScalarType dt) {
  std::vector<int64_t> stride(shape.size());
  int64_t acc = 1;
  for (size_t d = shape.size(); d-- > 0;) stride[d] = acc, acc *= shape[d];
  std::vector<int64_t> ks, kst, rs, rst;
  int64_t keep = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    const bool reduced = std::find(dims.begin(), dims.end(), int(d)) != dims.end();
    if (!reduced) keep *= shape[d];
    if (shape[d] == 1) continue;
    (reduced ? rs : ks).push_back(shape[d]);
    (reduced ? rst : kst).push_back(stride[d]);
  }
  int64_t n = 1;
  for (int64_t s : rs) n *= s;
  ReducePlan p = reduce_shape(keep, n);
  auto strided = [](const std::vector<int64_t>& sz, const std::vector<int64_t>& st) {
    Strided s;
    s.dims = int(sz.size());
    for (int d = 0; d < s.dims; ++d) s.sizes[d] = sz[d], s.strides[d] = st[d];
    return s;
  };
  p.out = strided(ks, kst);
  p.red = strided(rs, rst);
  int64_t step = 1;
  p.run = true;
  for (size_t d = rs.size(); d-- > 0;) {
    p.run = p.run && rst[d] == step;
    step *= rs[d];
  }
  if (p.run) {
    const int vec = std::min(4, 16 / int(element_size(dt)));
    bool aligned = true;
    for (int d = 0; d < p.out.dims; ++d) aligned = aligned && p.out.strides[d] % vec == 0;
    p.vec = aligned && n >= vec ? vec : 1;
  }
  return p;
}

}  // namespace

std::shared_ptr<const FusedProgram> parse_fused(const std::string& ir, const std::vector<int64_t>& shape,
                                                const std::string& dtype, const std::string& name) {
  auto p = std::make_shared<FusedProgram>();
  p->ir_text = ir;
  p->name = trace::intern(name);
  DESCENT_CHECK(dtype == "float32" || dtype == "float64", ValueError, "a fused kernel on sim:0 takes float32 or ",
                "float64, not ", dtype);
  p->dtype = dtype == "float32" ? ScalarType::Float32 : ScalarType::Float64;
  DESCENT_CHECK(shape.size() <= size_t(kDevMaxDims), ValueError, "a fused kernel takes at most ", kDevMaxDims, " dims");
  p->shape = shape;
  for (int64_t s : shape) p->numel *= s;
  std::vector<std::pair<std::string, int>> regs;  // name -> register
  auto reg = [&](const std::string& n, int line, const std::string& text) {
    for (const auto& [k, r] : regs)
      if (k == n) return r;
    bad(line, text, "no value is named " + n);
  };
  std::stringstream lines(ir);
  int line = 0;
  for (std::string text; std::getline(lines, text);) {
    ++line;
    if (text.empty()) continue;
    const size_t eq = text.find(" = ");
    if (eq == std::string::npos) bad(line, text, "expected `name = ...`");
    const std::string lhs = text.substr(0, eq), rhs = text.substr(eq + 3);
    const std::vector<std::string> w = words(rhs);
    if (w.empty()) bad(line, text, "nothing after =");
    if (lhs.rfind("out", 0) == 0) {
      p->outputs.push_back(reg(w[0], line, text));
      continue;
    }
    Instr in;
    in.name = lhs;
    in.op = w[0];
    if (w[0] == "input") {
      Input x;
      x.dtype = w.size() > 1 ? w[1] : "";
      if (x.dtype != dtype) bad(line, text, "an input of another dtype than the kernel's " + dtype);
      size_t at = rhs.find('[');
      if (at == std::string::npos) bad(line, text, "an input without its shape");
      x.shape = int_list(rhs, at, line);
      const size_t st = rhs.find("stride", at);
      if (st == std::string::npos) bad(line, text, "an input without its stride");
      at = st + 6;
      x.stride = int_list(rhs, at, line);
      if (x.shape.size() != x.stride.size() || x.shape.size() > shape.size())
        bad(line, text, "an input's shape and stride do not go with the kernel's shape");
      for (size_t d = 0; d < x.shape.size(); ++d) {
        const int64_t S = shape[shape.size() - x.shape.size() + d];
        if (x.shape[d] != 1 && x.shape[d] != S)
          bad(line, text, "an input that does not broadcast to the kernel's shape");
      }
      broadcast(x, shape);
      in.kind = Kind::Load;
      in.input = int(p->inputs.size());
      p->inputs.push_back(std::move(x));
    } else if (w[0] == "sum" || w[0] == "mean" || w[0] == "max") {
      if (p->red != Red::None) bad(line, text, "a second reduction");
      if (w.size() < 5 || w[2] != "dims") bad(line, text, "a reduction without its dims and keepdim");
      size_t at = rhs.find('[');
      std::vector<int64_t> dims = int_list(rhs, at, line);
      const std::vector<std::string> tail = words(rhs.substr(at));
      if (tail.size() != 2 || tail[0] != "keepdim") bad(line, text, "a reduction without keepdim");
      for (int64_t d : dims) {
        if (d < 0 || d >= int64_t(shape.size())) bad(line, text, "a reduced dim out of range");
        p->dims.push_back(int(d));
      }
      p->keepdim = tail[1] == "1";
      in.kind = Kind::Reduce;
      in.a = reg(w[1], line, text);
      p->red = w[0] == "sum" ? Red::Sum : w[0] == "mean" ? Red::Mean : Red::Max;
      p->red_instr = int(p->code.size());
      p->red_src = in.a;
    } else {
      const OpName* found = nullptr;
      for (const OpName& o : kOps)
        if (w[0] == o.name) found = &o;
      if (!found) bad(line, text, "an op the interpreter does not know: " + w[0]);
      in.aten = found->op;
      in.kind = found->binary ? Kind::Binary : Kind::Unary;
      std::vector<int> operands;
      for (size_t i = 1; i < w.size(); ++i) {
        if (w[i] == "const") {
          if (i + 1 >= w.size()) bad(line, text, "const without its value");
          Instr c;
          c.kind = Kind::Const;
          c.name = "const";
          c.value = std::strtod(w[i + 1].c_str(), nullptr);  // Python's repr: round-trips, inf and nan too
          operands.push_back(int(p->code.size()));
          p->code.push_back(c);
          ++i;
        } else {
          operands.push_back(reg(w[i], line, text));
        }
      }
      if (operands.size() != (found->binary ? 2u : 1u)) bad(line, text, "the wrong number of operands");
      in.a = operands[0];
      in.b = found->binary ? operands[1] : -1;
    }
    if (p->red != Red::None && in.kind != Kind::Reduce) bad(line, text, "an op after the reduction");
    regs.emplace_back(lhs, int(p->code.size()));
    p->code.push_back(std::move(in));
  }
  if (p->outputs.empty()) bad(line, "", "a kernel with no output");
  if (p->red != Red::None) {
    if (p->numel == 0) throw ValueError("a fused reduction of no elements");
    p->plan = plan_of(shape, p->dims, p->dtype);
  }
  return p;
}

std::string fused_ir(const FusedProgram& p) {
  std::string s;
  auto name = [&](int r) {
    const Instr& x = p.code[r];
    if (x.kind != Kind::Const) return x.name;
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.17g", x.value);  // round-trips, as the Python repr it was read from
    return "const " + std::string(buf);
  };
  auto list = [](const std::vector<int64_t>& v, const char* sep) {
    std::string t = "[";
    for (size_t i = 0; i < v.size(); ++i) t += str(i ? sep : "", v[i]);
    return t + "]";
  };
  for (const Instr& x : p.code) {
    if (x.kind == Kind::Const) continue;
    s += x.name + " = ";
    if (x.kind == Kind::Load) {
      const Input& in = p.inputs[x.input];
      s += str("input ", in.dtype, " ", list(in.shape, ", "), " stride ", list(in.stride, ", "));
    } else if (x.kind == Kind::Reduce) {
      std::vector<int64_t> d(p.dims.begin(), p.dims.end());
      s += str(x.op, " ", name(x.a), " dims ", list(d, ","), " keepdim ", int(p.keepdim));
    } else {
      s += x.op + " " + name(x.a) + (x.kind == Kind::Binary ? " " + name(x.b) : "");
    }
    s += "\n";
  }
  for (size_t j = 0; j < p.outputs.size(); ++j) s += str("out", j, " = ", p.code[p.outputs[j]].name, "\n");
  if (!s.empty()) s.pop_back();
  return s;
}

int fused_arity(const FusedProgram& p) { return int(p.inputs.size() + p.outputs.size()); }

// [SECTION] The interpreter ----------------------------------------------------------------

namespace {

// The program's registers over one strip of elements, and the pointers of
// one launch. run() computes every register at the strip's elements: the
// positions base, base + 1, ... (pos null) or pos[0], pos[1], ... (row-major
// numbers in the program's shape), and writes the outputs that are elements.
template <class T>
struct Machine {
  const FusedProgram& p;
  std::vector<void*> ptrs;
  std::vector<T> regs;

  Machine(const FusedProgram& prog, std::vector<void*> pointers)
      : p(prog), ptrs(std::move(pointers)), regs(prog.code.size() * kStrip) {
    for (size_t i = 0; i < p.code.size(); ++i)
      if (p.code[i].kind == Kind::Const)  // as eager converts a Python number: cast_element (input(), device_loops.h)
        std::fill_n(&regs[i * kStrip], kStrip, cast_element<T>(p.code[i].value));
  }
  T* reg(int i) { return &regs[size_t(i) * kStrip]; }

  int64_t offset(const Input& in, int64_t linear) const {
    int64_t off = 0;
    for (size_t d = p.shape.size(); d-- > 0;) {
      off += (linear % p.shape[d]) * in.bstride[d];
      linear /= p.shape[d];
    }
    return off;
  }

  void run(int64_t base, const int64_t* pos, int m) {
    for (size_t i = 0; i < p.code.size(); ++i) {
      const Instr& x = p.code[i];
      T* r = reg(int(i));
      switch (x.kind) {
        case Kind::Load: {
          const Input& in = p.inputs[x.input];
          const T* src = static_cast<const T*>(ptrs[x.input]);
          if (in.flat && !pos)
            for (int s = 0; s < m; ++s) r[s] = src[base + s];
          else
            for (int s = 0; s < m; ++s) r[s] = src[offset(in, pos ? pos[s] : base + s)];
          break;
        }
        case Kind::Unary: {
          const T* a = reg(x.a);
          visit_unary<T>(x.aten, ClampBounds{}, [&](auto f) {
            for (int s = 0; s < m; ++s) r[s] = f(a[s]);
          });
          break;
        }
        case Kind::Binary: {
          const T *a = reg(x.a), *b = reg(x.b);
          const opmath_t<T> alpha = opmath_t<T>(1);  // alpha=1: the only one a group takes
          visit_binary(x.aten, [&](auto f) {
            for (int s = 0; s < m; ++s) r[s] = f(a[s], b[s], alpha);
          });
          break;
        }
        case Kind::Const:
        case Kind::Reduce:
          break;
      }
    }
    const size_t n_in = p.inputs.size();
    for (size_t j = 0; j < p.outputs.size(); ++j) {
      if (p.outputs[j] == p.red_instr) continue;
      const T* v = reg(p.outputs[j]);
      T* out = static_cast<T*>(ptrs[n_in + j]);
      if (!pos)
        std::copy(v, v + m, out + base);
      else
        for (int s = 0; s < m; ++s) out[pos[s]] = v[s];
    }
  }
};

// Output j of a reduction, as eager's device reduction makes it (Note [A
// reduction over blocks]): for each of the plan's blocks, each thread's
// loads into its lanes (the chain computed a strip of the block's loads at
// a time), the thread's lanes, the block's tree; then the blocks' partials
// as eager's second launch reduces them.
template <class T, class R, class Out>
void reduce_output(Machine<T>& mach, const R& r, const Out& out, int64_t j) {
  using Acc = typename R::Acc;
  const FusedProgram& p = mach.p;
  const ReducePlan& plan = p.plan;
  const int vec = plan.vec;
  const int64_t origin = plan.out.offset(j), stride = plan.blocks * plan.threads;
  const int64_t loads = plan.n / vec;
  std::vector<Acc> partials(plan.blocks);
  Acc lane[kReduceThreads][4];
  int64_t pos[kStrip];
  const T* value = mach.reg(p.red_src);
  // The elements [k0, k0 + m) of output j, into the lanes.
  auto strip = [&](int64_t k0, int m, auto&& add) {
    if (plan.run) {
      mach.run(origin + k0, nullptr, m);
    } else {
      for (int s = 0; s < m; ++s) pos[s] = origin + plan.red.offset(k0 + s);
      mach.run(0, pos, m);
    }
    for (int s = 0; s < m; ++s) add(k0 + s, value[s]);
  };
  for (int64_t bx = 0; bx < plan.blocks; ++bx) {
    for (uint32_t t = 0; t < plan.threads; ++t)
      for (int l = 0; l < vec; ++l) lane[t][l] = r.identity();
    const int64_t g0 = bx * plan.threads;
    for (int64_t first = g0; first < loads; first += stride) {  // one pass of the grid-stride loop
      const int64_t last = std::min<int64_t>(first + plan.threads, loads);
      for (int64_t k0 = first * vec; k0 < last * vec; k0 += kStrip)
        strip(k0, int(std::min<int64_t>(kStrip, last * vec - k0)), [&](int64_t k, T x) {
          Acc& a = lane[k / vec - first][k % vec];
          a = r.combine(a, r.make(x, k));
        });
    }
    if (g0 == 0)  // the elements past the last whole load: thread 0's lanes
      for (int64_t k0 = loads * vec; k0 < plan.n; k0 += kStrip)
        strip(k0, int(std::min<int64_t>(kStrip, plan.n - k0)), [&](int64_t k, T x) {
          Acc& a = lane[0][k - loads * vec];
          a = r.combine(a, r.make(x, k));
        });
    Acc v[kReduceThreads];
    for (uint32_t t = 0; t < plan.threads; ++t) {
      for (int width = vec / 2; width >= 1; width /= 2)
        for (int l = 0; l < width; ++l) lane[t][l] = r.combine(lane[t][l], lane[t][l + width]);
      v[t] = lane[t][0];
    }
    block_tree(r, v, plan.threads);
    partials[bx] = v[0];
  }
  if (plan.blocks == 1) return out.write(j, partials[0]);
  const ReducePlan q = partials_shape(plan);
  Acc v[kReduceThreads];
  for (uint32_t t = 0; t < q.threads; ++t) {
    v[t] = r.identity();
    for (int64_t i = t; i < q.n; i += q.threads) v[t] = r.combine(v[t], partials[i]);
  }
  block_tree(r, v, q.threads);
  out.write(j, v[0]);
}

// [SECTION] The launches -------------------------------------------------------------------

template <class T>
void launch_typed(const std::shared_ptr<const FusedProgram>& prog, const streams::Stream& s,
                  const std::vector<void*>& ptrs) {
  const FusedProgram& p = *prog;
  // One machine per launch: the blocks run one after the other on the stream's worker.
  auto mach = std::make_shared<Machine<T>>(p, ptrs);
  if (p.red == Red::None) {
    if (p.numel == 0) return;
    const launch::KernelLaunch k = launch::linear_launch(p.name, "descent.compile", p.numel, kStrip, 1);
    const int64_t step = int64_t(k.grid.x) * kStrip;
    launch::launch_sim(s, k, [prog, mach, step](const launch::Dim3& b) {
      for (int64_t base = int64_t(b.x) * kStrip; base < prog->numel; base += step)
        mach->run(base, nullptr, int(std::min<int64_t>(kStrip, prog->numel - base)));
    });
    return;
  }
  T* y = static_cast<T*>(
      ptrs[p.inputs.size() + (std::find(p.outputs.begin(), p.outputs.end(), p.red_instr) - p.outputs.begin())]);
  const launch::KernelLaunch k = launch::grid_launch(p.name, "descent.compile", p.plan.outputs, p.plan.threads);
  launch::launch_sim(s, k, [prog, mach, y](const launch::Dim3& b) {
    if (prog->red == Red::Max)
      reduce_output(*mach, MaxOp<T>{}, MaxOut<T>{y, nullptr}, b.x);
    else
      reduce_output(*mach, SumOp<T>{}, SumOut<T>{y, prog->red == Red::Mean, prog->plan.n}, b.x);
  });
}

}  // namespace

void launch_fused(const std::shared_ptr<const FusedProgram>& p, Device d, const std::vector<void*>& ptrs) {
  DESCENT_CHECK(d.type == DeviceType::Sim, ValueError, "a fused kernel's program runs on sim:0, not ", d.str());
  DESCENT_CHECK(int(ptrs.size()) == fused_arity(*p), ValueError, "the fused kernel ", p->name, " takes ",
                fused_arity(*p), " pointers, not ", ptrs.size());
  const streams::Stream s = streams::current_stream(d);
  if (p->dtype == ScalarType::Float32)
    launch_typed<float>(p, s, ptrs);
  else
    launch_typed<double>(p, s, ptrs);
}

}  // namespace descent::kernels::device
