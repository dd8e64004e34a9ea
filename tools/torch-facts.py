#!/usr/bin/env python3
"""Facts read off PyTorch on the H200 host (run there: python3 tools/torch-facts.py): the gradients of
views read after an in-place write, node classes and names, error classes and messages, inference
tensors, printing of nn modules and optimizers, linspace, cat, memory_summary. Its output from
PyTorch 2.11 is tests/python/data/torch_facts_h200.txt; the tests quote it where they hold descent to it."""
import math, torch, json, sys
def show(label, fn):
    try:
        r = fn()
        print(f"{label} => {r!r}")
    except BaseException as e:
        print(f"{label} !! {type(e).__name__}: {e}")
cases = [
    "b = x * 1; v = b[0]; b.mul_(5); v.sum().backward()",
    "b = x * 1; c = b[:, 1]; b[0].mul_(7); c.sum().backward()",
    "b = x * 1; v = b[1]; w = v[1:]; b.mul_(3); w.sum().backward()",
    "b = x * 1; v = b[0]; b.mul_(2); b.mul_(3); (v * v).sum().backward()",
    "b = x * 1; v = b.t(); b[1].mul_(4); v[0].sum().backward()",
    "b = x * 1; v = b[0].expand(3, 2); b.mul_(2); v.sum().backward()",
    "b = x * 1; v = b[0]; v.mul_(2); b.mul_(5); v.sum().backward()",
]
for c in cases:
    x = torch.ones(2, 2, requires_grad=True); exec(c); print("VIEW", c, "=>", x.grad.tolist())
x = torch.ones(2, 2, requires_grad=True); b = x * 1; v = b[0]; print("chain0", v.grad_fn, v.grad_fn.next_functions); b.mul_(5)
print("chain1", v.grad_fn, v.grad_fn.next_functions, v.grad_fn.next_functions[0][0].next_functions, v.grad_fn is v.grad_fn)
d = (torch.arange(4.0).reshape(2, 2) * 1).t().detach(); d.requires_grad_(); v = d[0]
with torch.no_grad(): d.mul_(2)
print("leafT", v.grad_fn); v.sum().backward(); print("leafT grad", d.grad.tolist())
b = torch.ones(3); v = b[0:2]; w = torch.ones(3, requires_grad=True); b.mul_(w); print("nogradbase", v.grad_fn, v.requires_grad)
show("repr randn", lambda: repr(torch.randn))
for e in ["torch.tensor(2**63)", "torch.tensor(10**400)", "torch.tensor(-2**63-1)", "torch.tensor([1, 2**64])", "torch.ones(2) + 2**63", "torch.ones(2, dtype=torch.long) + 2**63", "torch.full((2,), 2**63)"]:
    show(e, lambda: eval(e))
x = torch.ones(2, requires_grad=True); x.data.add_(1); print("data version", x._version)
x = torch.ones(2, requires_grad=True); y = x * 2
print("names", type(y.grad_fn).__name__, y.grad_fn.name(), y.grad_fn.next_functions[0][0].name(), type(y.grad_fn.next_functions[0][0]).__name__)
b = x * 1; b[0] = 3; print("copyslices", b.grad_fn.name(), type(b.grad_fn).__name__)
for e in ["2 - x", "2 / x", "2 ** x", "x[...]", "x.relu()", "x.t() if x.dim()==2 else x.unsqueeze(0).t()", "x.mean()", "x.flatten()", "x.unsqueeze(-1).pow(torch.tensor([1,2,3]))", "x.clamp(min=0)", "x.clamp(max=0)", "x.clamp(0, 1)", "x.clamp_min(0)", "x.sin()", "torch.cat([x, x])", "torch.nn.functional.linear(x.view(1,2), torch.ones(3,2), torch.ones(3))", "torch.nn.functional.linear(x, torch.ones(3,2), torch.ones(3))", "torch.nn.functional.mse_loss(x, torch.zeros(2))", "x.contiguous()", "x.to(torch.float32)"]:
    show("gf " + e, lambda: (lambda r: (r.grad_fn, r.grad_fn.next_functions if r.grad_fn else None, r is x))(eval(e)))
show("clamp none", lambda: torch.ones(2).clamp())
x = torch.ones(3, dtype=torch.float16, device="cuda", requires_grad=True); y = x.exp(); z = y * 1; y.mul_(2)
show("version msg", lambda: z.sum().backward())
x = torch.ones(3, 2); print("stride", (x.t() + 1).stride(), (x.t() * x.t()).stride(), x.t().contiguous().stride())
with torch.inference_mode(): t = torch.ones(2)
show("inf inplace", lambda: t.add_(1)); show("inf req", lambda: t.requires_grad_()); show("inf version", lambda: t._version)
w = torch.ones(2, requires_grad=True); show("inf save", lambda: (w * t).sum().backward())
n = torch.ones(2)
with torch.inference_mode(): vv = n[0:1]
print("view in inf is_inference", vv.is_inference())
class LegendrePolynomial3(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input); return 0.5 * (5 * input ** 3 - 3 * input)
    @staticmethod
    def backward(ctx, g):
        input, = ctx.saved_tensors; return g * 1.5 * (5 * input ** 2 - 1)
x = torch.ones(2, requires_grad=True); y = LegendrePolynomial3.apply(x)
print("fn", y.grad_fn, type(y.grad_fn).__name__, y.grad_fn.name(), y.grad_fn.next_functions)
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(3, 1), torch.nn.Flatten(0, 1))
print("REPR<<"); print(model); print(torch.nn.MSELoss(reduction='sum')); print(torch.nn.ReLU()); print(torch.nn.Linear(2, 3, bias=False))
print(torch.optim.SGD(model.parameters(), lr=1e-6, momentum=0.9)); print(torch.optim.Adam(model.parameters(), lr=1e-3)); print(torch.optim.RMSprop(model.parameters(), lr=1e-3))
print(model[0].weight); print(model.state_dict()); print(list(model.named_parameters())[0][0]); print(">>REPR")
class DynamicNet(torch.nn.Module):
    def __init__(self):
        super().__init__(); self.a = torch.nn.Parameter(torch.randn(()))
    def forward(self, x): return self.a * x
print(DynamicNet())
x = torch.linspace(-math.pi, math.pi, 2000)
import hashlib; print("linspace sha", hashlib.sha256(x.numpy().tobytes()).hexdigest(), x[:3].tolist(), x[998:1002].tolist())
print("linspace int", torch.linspace(0, 10, 5, dtype=torch.long).tolist(), torch.linspace(0, 1, 1).tolist(), torch.linspace(1, 0, 4).tolist())
show("linspace neg", lambda: torch.linspace(0, 1, -1))
show("cat mismatch", lambda: torch.cat([torch.ones(2, 3), torch.ones(2, 4)]))
show("cat promote", lambda: torch.cat([torch.ones(2), torch.ones(2, dtype=torch.long)]).dtype)
show("cat empty", lambda: torch.cat([]))
show("mse warn", lambda: torch.nn.functional.mse_loss(torch.ones(3, 1), torch.ones(3)))
if torch.cuda.is_available():
    a = torch.ones(1000, device="cuda"); b = torch.ones(10**6, device="cuda"); del b
    print("SUMMARY<<"); print(torch.cuda.memory_summary()); print(">>SUMMARY")
    s = torch.cuda.memory_snapshot(); print("snapshot keys", sorted(s[0].keys()), sorted(s[0]["blocks"][0].keys()))
