#!/usr/bin/python3
"""One optimizer step as its published implementation takes it, for tests/optim/reference_test.cc.

AdamW and SGD (with and without momentum) are torch.optim's own, run one tensor at a time
(foreach=False) on this machine's PyTorch; Lion is lion-pytorch's update (Chen et al. 2023,
Algorithm 2; lucidrains/lion-pytorch, lion_pytorch.py) in NumPy float32, operation by operation
as that code orders them. Each case starts from the state it is given: the step count t, the
parameter, the gradient and the optimizer's slots, so a test compares one step, never drift.

Usage: optim_reference.py CASES.json FOLDER
  CASES.json: [{"optimizer": "adamw"|"lion"|"sgd-momentum"|"sgd", "name": NAME, "n": N,
                "t": T, "lr": LR, "beta1": B1, "beta2": B2, "eps": EPS, "weight_decay": WD}...]
  FOLDER holds NAME.param, NAME.grad, NAME.slot0, NAME.slot1 (float32, little-endian, N each;
  the slots the optimizer has) and receives NAME.param.out, NAME.slot0.out, NAME.slot1.out.
"""
import json
import os
import sys

import numpy as np
import torch


def read(folder, name, part, n):
    values = np.fromfile(os.path.join(folder, f"{name}.{part}"), dtype="<f4")
    if values.size != n:
        raise SystemExit(f"{name}.{part}: {values.size} values, expected {n}")
    return values


def write(folder, name, part, values):
    np.asarray(values, dtype="<f4").tofile(os.path.join(folder, f"{name}.{part}.out"))


def adamw(case, p, g, m, v):
    param = torch.nn.Parameter(torch.from_numpy(p.copy()))
    opt = torch.optim.AdamW([param], lr=case["lr"], betas=(case["beta1"], case["beta2"]),
                            eps=case["eps"], weight_decay=case["weight_decay"], foreach=False)
    param.grad = torch.from_numpy(g.copy())
    # The state as the step before left it: torch keeps the count as a float tensor.
    opt.state[param] = {"step": torch.tensor(float(case["t"] - 1)),
                        "exp_avg": torch.from_numpy(m.copy()),
                        "exp_avg_sq": torch.from_numpy(v.copy())}
    opt.step()
    state = opt.state[param]
    return param.detach().numpy(), [state["exp_avg"].numpy(), state["exp_avg_sq"].numpy()]


def sgd(case, p, g, buf):
    param = torch.nn.Parameter(torch.from_numpy(p.copy()))
    momentum = case["beta1"] if buf is not None else 0.0
    opt = torch.optim.SGD([param], lr=case["lr"], momentum=momentum, foreach=False)
    param.grad = torch.from_numpy(g.copy())
    if buf is not None:
        opt.state[param] = {"momentum_buffer": torch.from_numpy(buf.copy())}
    opt.step()
    if buf is None:
        return param.detach().numpy(), []
    return param.detach().numpy(), [opt.state[param]["momentum_buffer"].numpy()]


def lion(case, p, g, m):
    f32 = np.float32
    lr, wd = case["lr"], case["weight_decay"]
    beta1, beta2 = case["beta1"], case["beta2"]
    # p.data.mul_(1 - lr * wd): the factor is computed in Python (double), then the tensor's type.
    p = p * f32(1 - lr * wd)
    # update = exp_avg.clone().mul_(beta1).add(grad, alpha=1 - beta1).sign_()
    update = np.sign(m * f32(beta1) + g * f32(1 - beta1)).astype(f32)
    # p.add_(update, alpha=-lr)
    p = p + update * f32(-lr)
    # exp_avg.mul_(beta2).add_(grad, alpha=1 - beta2)
    m = m * f32(beta2) + g * f32(1 - beta2)
    return p, [m]


def main():
    cases_path, folder = sys.argv[1], sys.argv[2]
    with open(cases_path) as f:
        cases = json.load(f)
    torch.set_num_threads(1)
    for case in cases:
        name, n = case["name"], case["n"]
        p, g = read(folder, name, "param", n), read(folder, name, "grad", n)
        kind = case["optimizer"]
        if kind == "adamw":
            p, slots = adamw(case, p, g, read(folder, name, "slot0", n),
                             read(folder, name, "slot1", n))
        elif kind == "sgd-momentum":
            p, slots = sgd(case, p, g, read(folder, name, "slot0", n))
        elif kind == "sgd":
            p, slots = sgd(case, p, g, None)
        elif kind == "lion":
            p, slots = lion(case, p, g, read(folder, name, "slot0", n))
        else:
            raise SystemExit(f"{name}: unknown optimizer {kind}")
        write(folder, name, "param", p)
        for i, slot in enumerate(slots):
            write(folder, name, f"slot{i}", slot)
    print("done")


if __name__ == "__main__":
    main()
