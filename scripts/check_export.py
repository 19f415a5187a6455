#!/usr/bin/python3
"""Check a zerodp GPT-2 export with PyTorch: load model.safetensors with a hand-written parser,
run GPT-2's forward in torch, and print the mean loss over a file's windows, to compare with
zerodp's on the same tokens. make test runs it (tests/export/hf_folder_test.py). Needs PyTorch: Debian's python3-torch
(apt-get install python3-torch), so run it with /usr/bin/python3.

Windows are those of zerodp's validation sweep over a whole file: window i is bytes
[i*T, i*T + T + 1), i < (n - 1) // T; the model reads T bytes and predicts each next one.

  /usr/bin/python3 scripts/check_export.py out/model.safetensors --data FILE [--loss X]

config.json is read from the directory of the .safetensors file. With --loss (zerodp's mean
loss on the same file), exits 1 when the two differ by more than --tolerance (relative).
With --adapter DIR (a PEFT LoRA folder: adapter_config.json and adapter_model.safetensors), the
adapters are applied as PEFT applies them to GPT-2's Conv1D modules (fan_in_fan_out): each
targeted weight [in, out] gains (B @ A)^T * lora_alpha / r, found by PEFT's key names
"base_model.model.transformer.<module>.lora_A.weight" and the module-suffix rule of
target_modules.
With --nf4 on|off, the base's block weights (every linear but the head) are first replaced by
their NF4 values, as bitsandbytes' Linear4bit holds a QLoRA base (with double quantization on
or off): quantized as nn.Linear's [out, in], i.e. Conv1D's weight transposed, by
scripts/optim_reference.py's NumPy code of the QLoRA paper's table.
If the transformers package is importable, GPT2LMHeadModel.from_pretrained() is run too.
"""

import argparse
import json
import math
import os
import struct
import sys

import torch
import torch.nn.functional as F


def load_safetensors(path):
    """Returns (metadata, {name: tensor}) of an F32 safetensors file, validating as it goes."""
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    if 8 + n > len(blob):
        raise ValueError(f"{path}: header length {n} exceeds the file")
    header = json.loads(blob[8 : 8 + n].decode("utf-8"))
    base = 8 + n
    metadata = header.pop("__metadata__", {})
    tensors, end = {}, 0
    for name, entry in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
        if entry["dtype"] != "F32":
            raise ValueError(f"{name}: dtype {entry['dtype']}, expected F32")
        begin, stop = entry["data_offsets"]
        if begin != end:
            raise ValueError(f"{name}: data does not follow the previous tensor")
        count = math.prod(entry["shape"])
        if stop - begin != 4 * count:
            raise ValueError(f"{name}: {stop - begin} bytes for shape {entry['shape']}")
        data = bytearray(blob[base + begin : base + stop])
        tensors[name] = torch.frombuffer(data, dtype=torch.float32).reshape(entry["shape"])
        end = stop
    if base + end != len(blob):
        raise ValueError(f"{path}: {len(blob) - base - end} bytes after the last tensor")
    return metadata, tensors


def gpt2_logits(w, cfg, idx):
    """GPT-2's forward with Hugging Face's layouts (Conv1D weights [in, out]); idx [B, T]."""
    B, T = idx.shape
    C, H, eps = cfg["n_embd"], cfg["n_head"], cfg["layer_norm_epsilon"]
    x = w["wte.weight"][idx] + w["wpe.weight"][:T]
    causal = torch.tril(torch.ones(T, T, dtype=torch.bool))
    for i in range(cfg["n_layer"]):
        p = f"h.{i}."
        h = F.layer_norm(x, (C,), w[p + "ln_1.weight"], w[p + "ln_1.bias"], eps)
        qkv = h @ w[p + "attn.c_attn.weight"] + w[p + "attn.c_attn.bias"]
        q, k, v = (t.view(B, T, H, C // H).transpose(1, 2) for t in qkv.split(C, dim=2))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(C // H)
        att = att.masked_fill(~causal, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        x = x + y @ w[p + "attn.c_proj.weight"] + w[p + "attn.c_proj.bias"]
        h = F.layer_norm(x, (C,), w[p + "ln_2.weight"], w[p + "ln_2.bias"], eps)
        h = F.gelu(h @ w[p + "mlp.c_fc.weight"] + w[p + "mlp.c_fc.bias"], approximate="tanh")
        x = x + h @ w[p + "mlp.c_proj.weight"] + w[p + "mlp.c_proj.bias"]
    x = F.layer_norm(x, (C,), w["ln_f.weight"], w["ln_f.bias"], eps)
    return x @ w["wte.weight"].T  # the LM head, tied


def apply_adapter(w, folder):
    """Adds a PEFT LoRA folder's adapters into the GPT-2 weights w, as PEFT's merge does."""
    with open(os.path.join(folder, "adapter_config.json")) as f:
        cfg = json.load(f)
    if cfg["peft_type"] != "LORA" or not cfg["fan_in_fan_out"] or cfg["bias"] != "none":
        raise ValueError(f"{folder}: not a LoRA config for GPT-2's Conv1D: {cfg}")
    _, adapters = load_safetensors(os.path.join(folder, "adapter_model.safetensors"))
    scale = cfg["lora_alpha"] / cfg["r"]
    prefix = "base_model.model.transformer."
    merged = 0
    for key in sorted(adapters):
        if not key.endswith(".lora_A.weight"):
            continue
        if not key.startswith(prefix):
            raise ValueError(f"{key}: not under {prefix}")
        module = key[len(prefix):-len(".lora_A.weight")]
        if not any(module == t or module.endswith("." + t) for t in cfg["target_modules"]):
            raise ValueError(f"{module}: not among target_modules {cfg['target_modules']}")
        a, b = adapters[key], adapters[prefix + module + ".lora_B.weight"]
        if a.shape[0] != cfg["r"] or b.shape[1] != cfg["r"]:
            raise ValueError(f"{module}: A {list(a.shape)}, B {list(b.shape)} for r {cfg['r']}")
        w[module + ".weight"] = w[module + ".weight"] + (b @ a).T * scale
        merged += 1
    print(f"{folder}: {merged} adapters of rank {cfg['r']}, alpha {cfg['lora_alpha']}, "
          f"on {cfg['target_modules']}")
    if merged == 0:
        raise ValueError(f"{folder}: no adapter")


def quantize_base_nf4(w, double_quant):
    """Each block weight of the GPT-2 weights w replaced by its NF4 values (bitsandbytes'
    quantize_4bit then dequantize_4bit, in fp32)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from optim_reference import nf4_dequantized
    modules = ("attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj")
    quantized = 0
    for key in sorted(w):
        if not (key.startswith("h.") and key.endswith(".weight") and
                any(key.endswith("." + m + ".weight") for m in modules)):
            continue
        linear = w[key].t().contiguous()  # Conv1D [in, out] as nn.Linear's [out, in]
        values = nf4_dequantized(linear.numpy(), double_quant).reshape(linear.shape)
        w[key] = torch.from_numpy(values).t().contiguous()
        quantized += 1
    print(f"NF4 base: {quantized} weights quantized, double quantization "
          f"{'on' if double_quant else 'off'}")


def windows(data, T, limit):
    count = (len(data) - 1) // T
    if limit:
        count = min(count, limit)
    if count == 0:
        sys.exit(f"the data has {len(data)} bytes: too short for one window of {T + 1}")
    rows = [list(data[i * T : i * T + T + 1]) for i in range(count)]
    return torch.tensor(rows, dtype=torch.long)


def mean_loss(logits_fn, batch, chunk=16):
    total, n = 0.0, 0
    with torch.no_grad():
        for start in range(0, batch.shape[0], chunk):
            rows = batch[start : start + chunk]
            logits = logits_fn(rows[:, :-1])
            loss = F.cross_entropy(
                logits.reshape(-1, logits.shape[-1]).double(), rows[:, 1:].reshape(-1),
                reduction="sum")
            total += loss.item()
            n += rows[:, 1:].numel()
    return total / n


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("safetensors")
    parser.add_argument("--data", required=True, help="the file zerodp evaluated")
    parser.add_argument("--loss", type=float, help="zerodp's mean loss on the same file")
    parser.add_argument("--tolerance", type=float, default=1e-4, help="relative, default 1e-4")
    parser.add_argument("--max-windows", type=int, default=0, help="0: all")
    parser.add_argument("--adapter", help="a PEFT LoRA folder to apply to the weights")
    parser.add_argument("--nf4", choices=["on", "off"],
                        help="the base in NF4 (QLoRA), with double quantization on or off")
    args = parser.parse_args()

    cfg_path = os.path.join(os.path.dirname(os.path.abspath(args.safetensors)), "config.json")
    with open(cfg_path) as f:
        cfg = json.load(f)
    metadata, w = load_safetensors(args.safetensors)
    if args.nf4:
        quantize_base_nf4(w, args.nf4 == "on")
    if args.adapter:
        apply_adapter(w, args.adapter)
    print(f"{args.safetensors}: {len(w)} tensors, {sum(t.numel() for t in w.values()):,} "
          f"parameters, metadata {metadata}")
    print(f"config: n_layer {cfg['n_layer']}, n_head {cfg['n_head']}, n_embd {cfg['n_embd']}, "
          f"n_positions {cfg['n_positions']}, vocab_size {cfg['vocab_size']}")
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    with open(args.data, "rb") as f:
        batch = windows(f.read(), cfg["n_positions"], args.max_windows)

    loss = mean_loss(lambda idx: gpt2_logits(w, cfg, idx), batch)
    print(f"torch {torch.__version__}: mean loss {loss:.6f} over {batch.shape[0]} windows "
          f"({batch.shape[0] * (batch.shape[1] - 1):,} predicted bytes)")
    failed = False
    if args.loss is not None:
        rel = abs(loss - args.loss) / abs(args.loss)
        failed = rel > args.tolerance
        print(f"zerodp: mean loss {args.loss:.6f}; relative difference {rel:.2e} "
              f"({'FAIL' if failed else 'ok'}, tolerance {args.tolerance:g})")

    try:
        from transformers import GPT2LMHeadModel  # optional
    except ImportError:
        print("transformers not installed: GPT2LMHeadModel.from_pretrained() not tried")
    else:
        model = GPT2LMHeadModel.from_pretrained(os.path.dirname(os.path.abspath(args.safetensors)))
        model.eval()
        hf = mean_loss(lambda idx: model(idx).logits, batch)
        print(f"transformers GPT2LMHeadModel: mean loss {hf:.6f}")
        failed |= abs(hf - loss) / abs(loss) > args.tolerance
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
