#!/usr/bin/python3
"""One optimizer step as its published implementation takes it, for tests/optim/reference_test.cc.

AdamW and SGD (with and without momentum) are torch.optim's own, run one tensor at a time
(foreach=False) on this machine's PyTorch; Lion is lion-pytorch's update (Chen et al. 2023,
Algorithm 2; lucidrains/lion-pytorch, lion_pytorch.py) in NumPy float32, operation by operation
as that code orders them. Each case starts from the state it is given: the step count t, the
parameter, the gradient and the optimizer's slots, so a test compares one step, never drift.

Adafactor is transformers' Adafactor with the Trainer's settings in NumPy float32, its means and
norms exact sums rounded once, as zerodp's engine computes them (adafactor); its cases give
"cols" (a matrix's columns, 0 for a vector) and the state as NAME.row and NAME.col (a matrix) or
NAME.slot0 (a vector), and receive the same names with .out, and NAME.param.torch.out: the same
step with torch's own mean and norm (adafactor_torch), which the test holds to a tolerance.

8-bit AdamW is bitsandbytes' block-wise 8-bit Adam as its CPU kernel computes it
(bitsandbytes/backends/cpu/ops.py, _optimizer_update_8bit_blockwise_cpu, blocks of 256, no
skip_zeros): the states dequantized with the dynamic maps (create_dynamic_map of functional.py,
releases since 0.43, built here with torch.linspace as it builds them), the Adam step in float32,
and the states quantized again as its default quantize_blockwise does; 8-bit Lion is the same
kernel's Lion branch on one signed-map state. Their cases give the states as codes and blocks'
absmax: NAME.code0, NAME.code1 (uint8, N each; code1 for AdamW's v) and NAME.absmax0,
NAME.absmax1 (float32, one a block), and receive the same names with .out.

Usage: optim_reference.py maps FOLDER
  writes map_signed.f32 and map_unsigned.f32 (256 float32 each) into FOLDER.
Usage: optim_reference.py nf4 FOLDER
  reads x.f32 (float32) from FOLDER and writes the NF4 weight of nf4(): codes.u8 (two a byte),
  absmax.f32 (a block's, before double quantization), absmax_codes.u8, nested_absmax.f32,
  offset.f32 and dequantized.f32.
Usage: optim_reference.py CASES.json FOLDER
  CASES.json: [{"optimizer": "adamw"|"adamw-8bit"|"adafactor"|"lion"|"lion-8bit"|"sgd-momentum"|"sgd",
                "name": NAME, "n": N,
                "t": T, "lr": LR, "beta1": B1, "beta2": B2, "eps": EPS, "weight_decay": WD}...]
  FOLDER holds NAME.param, NAME.grad, NAME.slot0, NAME.slot1 (float32, little-endian, N each;
  the slots the optimizer has) and receives NAME.param.out, NAME.slot0.out, NAME.slot1.out.
"""
import json
import math
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


def create_dynamic_map(signed):
    """bitsandbytes.functional.create_dynamic_map(signed, max_exponent_bits=7, total_bits=8)."""
    max_exponent_bits, total_bits = 7, 8
    data = []
    non_sign_bits = total_bits - 1
    for i in range(max_exponent_bits):
        fraction_items = int(2 ** (i + non_sign_bits - max_exponent_bits) + 1 if signed
                             else 2 ** (i + non_sign_bits - max_exponent_bits + 1) + 1)
        boundaries = torch.linspace(0.1, 1, fraction_items)
        means = (boundaries[:-1] + boundaries[1:]) / 2.0
        data += ((10 ** (-(max_exponent_bits - 1) + i)) * means).tolist()
        if signed:
            data += (-(10 ** (-(max_exponent_bits - 1) + i)) * means).tolist()
    data.append(0)
    data.append(1.0)
    assert len(data) == 2 ** total_bits
    data.sort()
    return torch.Tensor(data).numpy()


BLOCK = 256


def dequantize(codes, absmax, code):
    values = code[codes.astype(np.int64)]
    block = np.arange(values.size) // BLOCK
    return (values * absmax[block]).astype(np.float32)


def quantize(x, code):
    f32 = np.float32
    blocks = (x.size + BLOCK - 1) // BLOCK
    absmax = np.array([np.abs(x[b * BLOCK:(b + 1) * BLOCK]).max() for b in range(blocks)],
                      dtype=f32)
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = (f32(1) / absmax)[np.arange(x.size) // BLOCK]
        scaled = np.clip(x * scale, f32(-1), f32(1))
        # torch.argmin(|scaled - code|): the first index of the least distance; NaN counts as least.
        distance = np.abs(scaled[:, None] - code[None, :])
    return np.argmin(distance, axis=1).astype(np.uint8), absmax


# The QLoRA paper's NormalFloat4 values as bitsandbytes' get_4bit_type("nf4") lists them.
NF4 = np.array([-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453,
                -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0,
                0.07958029955625534, 0.16093020141124725, 0.24611230194568634,
                0.33791524171829224, 0.44070982933044434, 0.5626170039176941,
                0.7229568362236023, 1.0], dtype=np.float32)
NF4_BLOCK = 64


def nf4_weight(x):
    """quantize_4bit(nf4, blocksize 64) as bitsandbytes' CUDA kernel computes it: each value
    times fl(1 / absmax), coded by how many of the table's midpoints lie strictly below it (the
    kernel's decision tree: a value on a midpoint takes the lower code, NaN code 0), two codes a
    byte with the even element high; then double quantization of the absmax: minus their fp32
    mean (summed in order), quantized with the signed dynamic map in blocks of 256. Returns the
    codes (one a value, unpacked), the absmax, their codes, the nested absmax and the offset."""
    f32 = np.float32
    n = x.size
    blocks = (n + NF4_BLOCK - 1) // NF4_BLOCK
    absmax = np.array([np.abs(x[b * NF4_BLOCK:(b + 1) * NF4_BLOCK]).max() for b in range(blocks)],
                      dtype=f32)
    midpoints = ((NF4[:-1] + NF4[1:]) / f32(2)).astype(f32)
    with np.errstate(divide="ignore", invalid="ignore"):
        scaled = x * (f32(1) / absmax)[np.arange(n) // NF4_BLOCK]
        codes = (midpoints[None, :] < scaled[:, None]).sum(axis=1).astype(np.uint8)
    offset = np.cumsum(absmax, dtype=f32)[-1] / f32(blocks)
    centered = (absmax - offset).astype(f32)
    absmax_codes, nested = quantize(centered, create_dynamic_map(True))
    return codes, absmax, absmax_codes, nested, offset


def nf4_dequantized(x, double_quant=True):
    """The values of x's NF4 weight: each block's absmax (double quantization undone:
    map[code] * nested + offset), then t[code] * it, each in fp32."""
    f32 = np.float32
    x = np.ascontiguousarray(x, dtype=f32).reshape(-1)
    codes, absmax, absmax_codes, nested, offset = nf4_weight(x)
    blocks = absmax.size
    if double_quant:
        absmax = (create_dynamic_map(True)[absmax_codes.astype(np.int64)] *
                  nested[np.arange(blocks) // BLOCK]).astype(f32) + offset
    return NF4[codes.astype(np.int64)] * absmax.astype(f32)[np.arange(x.size) // NF4_BLOCK]


def nf4(folder):
    """Writes nf4_weight() of FOLDER/x.f32 and its values (nf4_dequantized())."""
    x = np.fromfile(os.path.join(folder, "x.f32"), dtype="<f4")
    codes, absmax, absmax_codes, nested, offset = nf4_weight(x)
    f32 = np.float32
    midpoints = ((NF4[:-1] + NF4[1:]) / f32(2)).astype(f32)
    if x.size % 2:
        codes = np.append(codes, np.uint8((midpoints < f32(0)).sum()))
    packed = ((codes[0::2] << 4) | codes[1::2]).astype(np.uint8)
    packed.tofile(os.path.join(folder, "codes.u8"))
    absmax.astype("<f4").tofile(os.path.join(folder, "absmax.f32"))
    absmax_codes.tofile(os.path.join(folder, "absmax_codes.u8"))
    nested.astype("<f4").tofile(os.path.join(folder, "nested_absmax.f32"))
    np.array([offset], dtype="<f4").tofile(os.path.join(folder, "offset.f32"))
    nf4_dequantized(x).astype("<f4").tofile(os.path.join(folder, "dequantized.f32"))


def adamw_8bit(case, folder, name, p, g):
    f32 = np.float32
    n = case["n"]
    blocks = (n + BLOCK - 1) // BLOCK
    maps = [create_dynamic_map(True), create_dynamic_map(False)]
    codes = [np.fromfile(os.path.join(folder, f"{name}.code{k}"), dtype=np.uint8) for k in (0, 1)]
    absmax = [np.fromfile(os.path.join(folder, f"{name}.absmax{k}"), dtype="<f4") for k in (0, 1)]
    if any(c.size != n for c in codes) or any(a.size != blocks for a in absmax):
        raise SystemExit(f"{name}: codes or absmax of the wrong size")
    m, v = (dequantize(codes[k], absmax[k], maps[k]) for k in (0, 1))
    lr, wd, eps = case["lr"], case["weight_decay"], case["eps"]
    beta1, beta2, t = case["beta1"], case["beta2"], case["t"]
    # state1.mul_(beta1).add_(grad, alpha=1 - beta1); state2.mul_(beta2).addcmul_(grad, grad,
    # value=1 - beta2): each Python scalar is the tensor's type.
    m = m * f32(beta1) + f32(1.0 - beta1) * g
    v = v * f32(beta2) + (f32(1.0 - beta2) * g) * g
    correction1 = 1.0 - beta1 ** t
    correction2 = math.sqrt(1.0 - beta2 ** t)
    denom = np.sqrt(v) / f32(correction2) + f32(eps)
    if wd > 0.0:
        p = p * f32(1.0 - lr * wd)
    # p.addcdiv_(state1, denom, value=-lr / correction1): p + (value * state1) / denom
    p = p + (f32(-lr / correction1) * m) / denom
    for k, state in enumerate((m, v)):
        c, a = quantize(state.astype(f32), maps[k])
        c.tofile(os.path.join(folder, f"{name}.code{k}.out"))
        a.astype("<f4").tofile(os.path.join(folder, f"{name}.absmax{k}.out"))
    return p


def lion_8bit(case, folder, name, p, g):
    f32 = np.float32
    n = case["n"]
    signed = create_dynamic_map(True)
    code = np.fromfile(os.path.join(folder, f"{name}.code0"), dtype=np.uint8)
    absmax = np.fromfile(os.path.join(folder, f"{name}.absmax0"), dtype="<f4")
    if code.size != n or absmax.size != (n + BLOCK - 1) // BLOCK:
        raise SystemExit(f"{name}: codes or absmax of the wrong size")
    m = dequantize(code, absmax, signed)
    lr, wd, beta1, beta2 = case["lr"], case["weight_decay"], case["beta1"], case["beta2"]
    # p.mul_(1 - lr * wd); update = sign(state1.mul(beta1) + grad.mul(1 - beta1));
    # p.add_(update, alpha=-lr); state1.mul_(beta2).add_(grad, alpha=1 - beta2)
    if wd > 0.0:
        p = p * f32(1.0 - lr * wd)
    p = p + np.sign(m * f32(beta1) + g * f32(1.0 - beta1)).astype(f32) * f32(-lr)
    m = m * f32(beta2) + f32(1.0 - beta2) * g
    c, a = quantize(m.astype(f32), signed)
    c.tofile(os.path.join(folder, f"{name}.code0.out"))
    a.astype("<f4").tofile(os.path.join(folder, f"{name}.absmax0.out"))
    return p


def exact_sum(values):
    """The sum of non-negative float32 values, exact, rounded once to float32 (ties to even):
    zerodp's ExactSum (zerodp/optim/adafactor.h), here with Python's integers."""
    f = np.asarray(values, dtype=np.float32).astype(np.float64)
    if np.isnan(f).any():
        return np.float32("nan")
    if np.isinf(f).any():
        return np.float32("inf")
    total = sum(int(x) for x in f * 2.0 ** 149)  # every float32 is a whole number of 2^-149
    if total >= 2 ** 277:
        return np.float32("inf")
    top = total.bit_length() - 1
    if top < 24:
        return np.float32(total * 2.0 ** -149)
    shift = top - 23
    q, rest = total >> shift, total & ((1 << shift) - 1)
    half = 1 << (shift - 1)
    if rest > half or (rest == half and q & 1):
        q += 1
    with np.errstate(over="ignore"):
        return np.float32(float(q) * 2.0 ** (shift - 149))


def adafactor(case, p, g, row, col, v):
    """transformers' Adafactor step (optimization.py) with the Trainer's settings
    (scale_parameter=False, relative_step=False, beta1=None, eps=(1e-30, 1e-3), clip_threshold
    1.0, decay_rate -0.8) in NumPy float32, operation by operation, its means and norms exact
    sums rounded once (exact_sum) where torch sums in an order of its own."""
    f32 = np.float32
    t, n = case["t"], case["n"]
    lr = f32(case["lr"])
    beta2t = 1.0 - math.pow(t, -0.8)
    b, a = f32(beta2t), f32(1.0 - beta2t)
    g = g * f32(case.get("grad_mul", 1.0))
    g2 = g * g + f32(1e-30)
    if case["cols"] > 0:
        rows, cols = n // case["cols"], case["cols"]
        m2 = g2.reshape(rows, cols)
        row_mean = np.array([exact_sum(m2[i, :]) for i in range(rows)], dtype=f32) / f32(cols)
        col_mean = np.array([exact_sum(m2[:, j]) for j in range(cols)], dtype=f32) / f32(rows)
        row = row * b + a * row_mean
        col = col * b + a * col_mean
        r = f32(1) / np.sqrt(row / (exact_sum(row) / f32(rows)))
        c = f32(1) / np.sqrt(col)
        u = (r[:, None] * c[None, :]).reshape(-1) * g
    else:
        v = v * b + a * g2
        u = (f32(1) / np.sqrt(v)) * g
    rms = np.sqrt(exact_sum(u * u)) / f32(math.sqrt(n))
    divisor = rms / f32(1.0)
    if divisor < f32(1.0):
        divisor = f32(1.0)
    u = (u / divisor) * lr
    wd = case["weight_decay"]
    if wd != 0:
        p = p + f32(-wd * float(lr)) * p
    return p - u, row, col, v


def adafactor_torch(case, p, g, row, col, v):
    """The same step as transformers' Adafactor.step writes it, with torch's own operations
    (mean, norm, rsqrt, add_ with alpha) on this machine's PyTorch: what the Trainer runs."""
    t, n = case["t"], case["n"]
    lr = float(np.float32(case["lr"]))
    grad = torch.from_numpy(g * np.float32(case.get("grad_mul", 1.0)))
    p = torch.from_numpy(p.copy())
    beta2t = 1.0 - math.pow(t, -0.8)
    update = grad ** 2 + 1e-30
    if case["cols"] > 0:
        shape = (n // case["cols"], case["cols"])
        grad, update, p = grad.reshape(shape), update.reshape(shape), p.reshape(shape)
        row, col = torch.from_numpy(row.copy()), torch.from_numpy(col.copy())
        row.mul_(beta2t).add_(update.mean(dim=-1), alpha=1.0 - beta2t)
        col.mul_(beta2t).add_(update.mean(dim=-2), alpha=1.0 - beta2t)
        r_factor = (row / row.mean(dim=-1, keepdim=True)).rsqrt_().unsqueeze(-1)
        c_factor = col.unsqueeze(-2).rsqrt()
        update = torch.mul(r_factor, c_factor).mul_(grad)
    else:
        v = torch.from_numpy(v.copy())
        v.mul_(beta2t).add_(update, alpha=1.0 - beta2t)
        update = v.rsqrt().mul_(grad)
    rms = update.norm(2) / (update.numel() ** 0.5)
    update.div_((rms / 1.0).clamp_(min=1.0))
    update.mul_(lr)
    if case["weight_decay"] != 0:
        p.add_(p, alpha=-case["weight_decay"] * lr)
    p.add_(-update)
    return p.reshape(-1).numpy()


def main():
    if sys.argv[1] == "maps":
        torch.set_num_threads(1)
        for signed, file in ((True, "map_signed.f32"), (False, "map_unsigned.f32")):
            create_dynamic_map(signed).astype("<f4").tofile(os.path.join(sys.argv[2], file))
        print("done")
        return
    if sys.argv[1] == "nf4":
        torch.set_num_threads(1)
        nf4(sys.argv[2])
        print("done")
        return
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
        elif kind == "adamw-8bit":
            write(folder, name, "param", adamw_8bit(case, folder, name, p, g))
            continue
        elif kind == "lion-8bit":
            write(folder, name, "param", lion_8bit(case, folder, name, p, g))
            continue
        elif kind == "adafactor":
            cols = case["cols"]
            row = read(folder, name, "row", n // cols) if cols else None
            col = read(folder, name, "col", cols) if cols else None
            v = None if cols else read(folder, name, "slot0", n)
            write(folder, name, "param.torch", adafactor_torch(case, p, g, row, col, v))
            p, row, col, v = adafactor(case, p, g, row, col, v)
            write(folder, name, "param", p)
            for part, values in (("row", row), ("col", col), ("slot0", v)):
                if values is not None:
                    write(folder, name, part, values)
            continue
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
