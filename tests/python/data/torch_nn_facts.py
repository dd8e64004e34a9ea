"""Records PyTorch's answers for tests/python/test_learner_nn.py into torch_nn_facts.json.

Run with PyTorch installed: python3 tests/python/data/torch_nn_facts.py OUT.json
(torch_nn_facts.json was written by PyTorch 2.11.0 on the CPU of the H100
host, 2026-12-07). The test imports this file and runs the same cases with
descent as `torch`: every case is a function of `torch` alone, its inputs
drawn from numpy with fixed seeds, so both libraries see the same numbers.
"""
import json
import os
import sys

import numpy as np


def rng(seed):
    return np.random.RandomState(seed)


def arr(torch, a, grad=False, dtype=None):
    t = torch.tensor(a.astype(np.float64) if dtype is None else a, dtype=dtype)
    if grad:
        t.requires_grad_(True)
    return t


def chain(t):
    """grad_fn names down the first edge: 'NllLossBackward0 <- LogSoftmaxBackward0 <- AccumulateGrad'."""
    names, fn = [], t.grad_fn
    while fn is not None:
        names.append(type(fn).__name__)
        nxt = [f for f, _ in fn.next_functions if f is not None]
        fn = nxt[0] if nxt else None
    return " <- ".join(names)


def error_of(f):
    try:
        f()
    except Exception as e:  # noqa: BLE001
        return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    return "no error"


def cases(torch):
    nn = torch.nn
    F = torch.nn.functional
    D = torch.float64
    out = {}
    r = rng(0)
    x = r.randn(4, 5)
    g_up = r.randn(4, 5)
    t_idx = np.array([1, 0, 4, 2])
    w = r.rand(5) + 0.5

    def value_and_grad(name, f, *inputs, upstream=None):
        try:
            ts = [arr(torch, a, grad=True) for a in inputs]
            y = f(*ts)
            (y * arr(torch, upstream)).sum().backward() if upstream is not None else y.sum().backward()
            out[name] = {"value": y.detach().tolist(), "grads": [t.grad.tolist() for t in ts], "chain": chain(y)}
        except Exception as e:  # noqa: BLE001  (descent: a case that fails is reported, the others still run)
            out[name] = {"error": f"{type(e).__name__}: {e}"}

    value_and_grad("softmax", lambda a: F.softmax(a, dim=1), x, upstream=g_up)
    value_and_grad("softmax_dim0", lambda a: torch.softmax(a, 0), x, upstream=g_up)
    value_and_grad("log_softmax", lambda a: F.log_softmax(a, dim=1), x, upstream=g_up)
    value_and_grad("log_softmax_dim0", lambda a: a.log_softmax(0), x, upstream=g_up)
    T = torch.tensor(t_idx)
    value_and_grad("cross_entropy", lambda a: F.cross_entropy(a, T), x)
    value_and_grad("cross_entropy_sum", lambda a: F.cross_entropy(a, T, reduction="sum"), x)
    value_and_grad("cross_entropy_none", lambda a: F.cross_entropy(a, T, reduction="none"), x, upstream=r.randn(4))
    value_and_grad("cross_entropy_weight", lambda a: F.cross_entropy(a, T, weight=arr(torch, w)), x)
    value_and_grad("cross_entropy_ignore", lambda a: F.cross_entropy(a, torch.tensor([1, -100, 4, 2])), x)
    value_and_grad("cross_entropy_ignore3", lambda a: F.cross_entropy(a, torch.tensor([1, 3, 3, 2]), ignore_index=3), x)
    value_and_grad("cross_entropy_smooth", lambda a: F.cross_entropy(a, T, label_smoothing=0.1), x)
    value_and_grad("cross_entropy_smooth_weight",
                   lambda a: F.cross_entropy(a, T, weight=arr(torch, w), label_smoothing=0.2), x)
    probs = r.rand(4, 5)
    probs /= probs.sum(1, keepdims=True)
    value_and_grad("cross_entropy_probs", lambda a, p: F.cross_entropy(a, p), x, probs)
    value_and_grad("cross_entropy_probs_smooth", lambda a: F.cross_entropy(a, arr(torch, probs), label_smoothing=0.3), x)
    x3 = r.randn(2, 5, 3)
    t3 = torch.tensor(r.randint(0, 5, size=(2, 3)))
    value_and_grad("cross_entropy_3d", lambda a: F.cross_entropy(a, t3), x3)
    value_and_grad("cross_entropy_1d", lambda a: F.cross_entropy(a, torch.tensor(3)), x[0])
    value_and_grad("nll_loss", lambda a: F.nll_loss(a, T), x)
    value_and_grad("nll_loss_weight_sum", lambda a: F.nll_loss(a, T, weight=arr(torch, w), reduction="sum"), x)
    ln_w, ln_b = r.randn(5), r.randn(5)
    value_and_grad("layer_norm", lambda a, lw, lb: F.layer_norm(a, (5,), lw, lb), x, ln_w, ln_b, upstream=g_up)
    value_and_grad("layer_norm_2d", lambda a: F.layer_norm(a, (4, 5), eps=1e-3), x, upstream=g_up)
    emb = r.randn(6, 3)
    idx = torch.tensor([[0, 2, 2], [5, 1, 2]])
    value_and_grad("embedding", lambda e: F.embedding(idx, e), emb, upstream=r.randn(2, 3, 3))
    value_and_grad("embedding_padding", lambda e: F.embedding(idx, e, padding_idx=2), emb, upstream=r.randn(2, 3, 3))
    value_and_grad("embedding_freq", lambda e: F.embedding(idx, e, scale_grad_by_freq=True), emb,
                   upstream=r.randn(2, 3, 3))
    p = r.rand(4, 5) * 0.9 + 0.05
    tgt = (r.rand(4, 5) > 0.5).astype(np.float64)
    value_and_grad("bce", lambda a, b: F.binary_cross_entropy(a, b), p, tgt)
    value_and_grad("bce_weight_sum", lambda a: F.binary_cross_entropy(a, arr(torch, tgt), weight=arr(torch, w),
                                                                      reduction="sum"), p)
    value_and_grad("bce_logits", lambda a, b: F.binary_cross_entropy_with_logits(a, b), x, tgt)
    value_and_grad("bce_logits_pos", lambda a, b: F.binary_cross_entropy_with_logits(a, b, pos_weight=arr(torch, w)),
                   x, tgt)
    value_and_grad("bce_logits_weight_none",
                   lambda a: F.binary_cross_entropy_with_logits(a, arr(torch, tgt), weight=arr(torch, w),
                                                                reduction="none"), x, upstream=g_up)
    value_and_grad("sigmoid", lambda a: torch.sigmoid(a), x, upstream=g_up)
    cx, cw, cb = r.randn(2, 4, 7, 6), r.randn(6, 2, 3, 2), r.randn(6)
    value_and_grad("conv2d", lambda a, ww, bb: F.conv2d(a, ww[:, :, :, :], bb, stride=(2, 1), padding=1), cx,
                   np.concatenate([cw, cw], 1), cb, upstream=r.randn(2, 6, 4, 7))
    value_and_grad("conv2d_groups", lambda a, ww: F.conv2d(a, ww, None, 1, (0, 1), (2, 1), 2), cx, cw,
                   upstream=r.randn(2, 6, 3, 7))
    value_and_grad("conv2d_unbatched", lambda a, ww: F.conv2d(a, ww, padding="same"), cx[0], r.randn(3, 4, 3, 3),
                   upstream=r.randn(3, 7, 6))
    px = np.round(r.randn(2, 3, 7, 6), 1)  # ties: the first maximum of a window gets the gradient
    value_and_grad("max_pool2d", lambda a: F.max_pool2d(a, 2), px, upstream=r.randn(2, 3, 3, 3))
    value_and_grad("max_pool2d_args", lambda a: F.max_pool2d(a, (3, 2), stride=(2, 1), padding=1, dilation=(1, 2)),
                   px, upstream=r.randn(2, 3, 4, 6))
    value_and_grad("max_pool2d_module", lambda a: nn.MaxPool2d(3, 2, padding=1)(a), px[0],
                   upstream=r.randn(3, 4, 3))
    out["one_hot"] = F.one_hot(torch.tensor([0, 3, 1])).tolist()
    out["one_hot_5"] = F.one_hot(torch.tensor([[0], [3]]), 5).tolist()
    a = arr(torch, x, grad=True)
    out["dropout_eval"] = chain(F.dropout(a * 1, 0.5, training=False)) or "none"
    out["dropout_train_chain"] = chain(F.dropout(a, 0.5))
    # Errors.
    xf = torch.randn(3, 5)
    out["errors"] = {
        "nll_float_target": error_of(lambda: F.nll_loss(xf, torch.tensor([1.0, 2.0, 0.0]))),
        "ce_float_target_shape": error_of(lambda: F.cross_entropy(xf, torch.tensor([1.0, 2.0, 0.0]))),
        "softmax_long": error_of(lambda: torch.softmax(torch.tensor([[1, 2], [3, 4]]), 1)),
        "softmax_long_dim0": error_of(lambda: torch.softmax(torch.tensor([[1, 2], [3, 4]]), 0)),
        "log_softmax_long": error_of(lambda: F.log_softmax(torch.tensor([1, 2]), 0)),
        "ce_out_of_range": error_of(lambda: F.cross_entropy(xf, torch.tensor([1, 5, 0]))),
        "ce_negative": error_of(lambda: F.cross_entropy(xf, torch.tensor([1, -3, 0]))),
        "nll_batch": error_of(lambda: F.nll_loss(xf, torch.tensor([1, 2]))),
        "nll_3d_target": error_of(lambda: F.nll_loss(xf, torch.tensor([[1, 2, 0]]))),
        "nll_weight": error_of(lambda: F.nll_loss(xf, torch.tensor([1, 2, 0]), weight=torch.ones(4))),
        "embedding_range": error_of(lambda: F.embedding(torch.tensor([7]), torch.randn(5, 2))),
        "embedding_float": error_of(lambda: F.embedding(torch.tensor([1.0]), torch.randn(5, 2))),
        "layer_norm_shape": error_of(lambda: F.layer_norm(torch.randn(2, 3), (4,))),
        "layer_norm_weight": error_of(lambda: F.layer_norm(torch.randn(2, 4), (4,), torch.ones(3))),
        "one_hot_float": error_of(lambda: F.one_hot(torch.tensor([1.0]))),
        "one_hot_negative": error_of(lambda: F.one_hot(torch.tensor([-1, 2]))),
        "one_hot_small": error_of(lambda: F.one_hot(torch.tensor([1, 4]), 3)),
        "bce_range": error_of(lambda: F.binary_cross_entropy(torch.tensor([1.5]), torch.tensor([1.0]))),
        "bce_size": error_of(lambda: F.binary_cross_entropy(torch.rand(3), torch.rand(3, 1))),
        "bce_logits_size": error_of(lambda: F.binary_cross_entropy_with_logits(torch.rand(3), torch.rand(3, 1))),
        "dropout_p": error_of(lambda: nn.Dropout(1.5)),
        "conv_channels": error_of(lambda: F.conv2d(torch.randn(1, 4, 5, 5), torch.randn(8, 3, 3, 3))),
        "conv_dims": error_of(lambda: F.conv2d(torch.randn(4, 5), torch.randn(8, 3, 3, 3))),
        "conv_groups": error_of(lambda: nn.Conv2d(4, 6, 3, groups=4)),
        "pool_pad": error_of(lambda: F.max_pool2d(torch.randn(1, 1, 5, 5), 3, padding=2)),
        "smoothing": error_of(lambda: F.cross_entropy(xf, torch.tensor([1, 2, 0]), label_smoothing=1.5)),
    }
    # Reprs.
    out["reprs"] = {
        "softmax": repr(nn.Softmax(dim=1)), "log_softmax": repr(nn.LogSoftmax(dim=-1)), "sigmoid": repr(nn.Sigmoid()),
        "tanh": repr(nn.Tanh()), "dropout": repr(nn.Dropout(0.1)), "embedding": repr(nn.Embedding(10, 3)),
        "embedding_pad": repr(nn.Embedding(10, 3, padding_idx=-1)), "layer_norm": repr(nn.LayerNorm(8)),
        "layer_norm_2": repr(nn.LayerNorm([4, 8], elementwise_affine=False)),
        "ce": repr(nn.CrossEntropyLoss()), "nll": repr(nn.NLLLoss()), "bce": repr(nn.BCELoss()),
        "bcel": repr(nn.BCEWithLogitsLoss()), "flatten": repr(nn.Flatten()),
        "module_list": repr(nn.ModuleList([nn.Linear(2, 2), nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 3)])),
        "module_dict": repr(nn.ModuleDict({"a": nn.ReLU(), "b": nn.Tanh()})),
        "sequential": repr(nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Dropout(0.5), nn.Linear(4, 1),
                                         nn.Sigmoid())),
        "conv": repr(nn.Conv2d(3, 8, 3)),
        "conv_args": repr(nn.Conv2d(4, 8, (3, 5), stride=2, padding=(1, 2), dilation=2, groups=2, bias=False)),
        "conv_same": repr(nn.Conv2d(3, 8, 3, padding="same")),
        "pool": repr(nn.MaxPool2d(2)),
        "pool_args": repr(nn.MaxPool2d((3, 2), stride=1, padding=1)),
        "adamw": repr(torch.optim.AdamW([torch.zeros(2, requires_grad=True)], lr=0.01)),
    }
    # AdamW on a fixed quadratic.
    p0 = arr(torch, rng(1).randn(3, 2), grad=True)
    tgt0 = arr(torch, rng(2).randn(3, 2))
    opt = torch.optim.AdamW([p0], lr=0.1, weight_decay=0.05)
    for _ in range(5):
        opt.zero_grad()
        ((p0 - tgt0) ** 2).sum().backward()
        opt.step()
    out["adamw_quadratic"] = p0.detach().tolist()
    return out


# [SECTION] A small GPT (as the test builds it) ------------------------------------------------

def build_gpt(torch, vocab=11, block=8, n_embd=16, n_head=2, n_layer=2):
    import math
    nn = torch.nn
    F = torch.nn.functional

    class Head(nn.Module):
        def __init__(self):
            super().__init__()
            self.attn = nn.Linear(n_embd, 3 * n_embd)
            self.proj = nn.Linear(n_embd, n_embd)
            self.register_buffer("mask", torch.tril(torch.ones(block, block)).view(1, 1, block, block))

        def forward(self, x):
            B, T, C = x.size()
            qkv = self.attn(x)
            q, k, v = qkv[:, :, :n_embd], qkv[:, :, n_embd:2 * n_embd], qkv[:, :, 2 * n_embd:]
            q = q.view(B, T, n_head, C // n_head).transpose(1, 2)
            k = k.view(B, T, n_head, C // n_head).transpose(1, 2)
            v = v.view(B, T, n_head, C // n_head).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.mask[:, :, :T, :T] == 0, float("-inf"))
            att = F.softmax(att, dim=-1)
            y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
            return self.proj(y)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1 = nn.LayerNorm(n_embd)
            self.attn = Head()
            self.ln2 = nn.LayerNorm(n_embd)
            self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.ReLU(), nn.Linear(4 * n_embd, n_embd),
                                     nn.Dropout(0.0))

        def forward(self, x):
            x = x + self.attn(self.ln1(x))
            return x + self.mlp(self.ln2(x))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok = nn.Embedding(vocab, n_embd)
            self.pos = nn.Embedding(block, n_embd)
            self.blocks = nn.ModuleList([Block() for _ in range(n_layer)])
            self.ln_f = nn.LayerNorm(n_embd)
            self.head = nn.Linear(n_embd, vocab, bias=False)

        def forward(self, idx, targets=None):
            B, T = idx.size()
            x = self.tok(idx) + self.pos(torch.arange(T))
            for b in self.blocks:
                x = b(x)
            logits = self.head(self.ln_f(x))
            loss = None if targets is None else F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
            return logits, loss

    model = GPT()
    # Weights from numpy, the same in both libraries (names sorted).
    r = rng(42)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            p.copy_(torch.tensor(r.randn(*p.shape) * 0.2, dtype=p.dtype))
    return model


def gpt_case(torch):
    model = build_gpt(torch)
    r = rng(7)
    idx = torch.tensor(r.randint(0, 11, size=(3, 8)))
    tgt = torch.tensor(r.randint(0, 11, size=(3, 8)))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    losses = []
    first_grads = None
    for step in range(4):
        opt.zero_grad()
        logits, loss = model(idx, tgt)
        loss.backward()
        if step == 0:
            first_grads = {n: float(p.grad.abs().sum()) for n, p in sorted(model.named_parameters())}
            first_logits = logits[0, :2].detach().tolist()
        losses.append(float(loss))
        opt.step()
    return {"losses": losses, "grad_abs_sums": first_grads, "logits": first_logits}


def bigram_case(torch):
    text = "hello world, the quick brown fox jumps over the lazy dog. hello again!"
    chars = sorted(set(text))
    stoi = {c: i for i, c in enumerate(chars)}
    data = torch.tensor([stoi[c] for c in text])
    V = len(chars)
    N = torch.zeros((V, V), dtype=torch.int32)
    for a, b in zip(data[:-1].tolist(), data[1:].tolist()):
        N[a, b] += 1
    P = (N + 1).float()
    P /= P.sum(1, keepdim=True)
    nll = -torch.log(P[data[:-1], data[1:]]).mean()
    # The same as a trained table of logits.
    W = torch.tensor(rng(3).randn(V, V), dtype=torch.float32, requires_grad=True)
    xs, ys = data[:-1], data[1:]
    losses = []
    for _ in range(5):
        logits = W[xs]
        loss = torch.nn.functional.cross_entropy(logits, ys)
        W.grad = None
        loss.backward()
        losses.append(float(loss))
        with torch.no_grad():
            W -= 10.0 * W.grad
    return {"vocab": V, "counts_row_h": N[stoi["h"]].tolist(), "count_total": int(N.sum()), "nll": float(nll),
            "losses": losses}


def cnn_case(torch):
    """Conv2d, ReLU, MaxPool2d, Flatten, Linear and cross-entropy: three SGD steps, weights from numpy."""
    nn = torch.nn
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(4, 6, 3), nn.ReLU(),
                          nn.Flatten(), nn.Linear(6 * 2 * 2, 3))
    r = rng(11)
    with torch.no_grad():
        for _, p in sorted(model.named_parameters()):
            p.copy_(torch.tensor(r.randn(*p.shape) * 0.3, dtype=p.dtype))
    x = torch.tensor(r.randn(5, 1, 8, 8), dtype=torch.float32)
    y = torch.tensor(r.randint(0, 3, size=(5,)))
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for _ in range(3):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return {"losses": losses, "repr": repr(model)}


if __name__ == "__main__":
    if os.environ.get("DESCENT"):
        import descent as torch
    else:
        import torch
        torch.manual_seed(0)
    facts = cases(torch)
    facts["gpt"] = gpt_case(torch)
    facts["bigram"] = bigram_case(torch)
    facts["cnn"] = cnn_case(torch)
    facts["torch_version"] = getattr(torch, "__version__", "descent")
    with open(sys.argv[1], "w") as f:
        json.dump(facts, f, indent=1, sort_keys=True)
    print("wrote", sys.argv[1])
