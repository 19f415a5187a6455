"""`zerodp export` of a LoRA run's checkpoint: PEFT's adapter folder, and the merged model.

Run by ctest as: /usr/bin/python3 peft_folder_test.py BUILD/zerodp REPO. Trains a tiny GPT,
then LoRA adapters on every projection beside it (2 ranks, stage 3), and checks:
  - export --out DIR writes exactly adapter_model.safetensors and adapter_config.json, with
    PEFT's key names and shapes ("base_model.model.transformer.h.{i}.{module}.lora_A.weight"
    [r, in], lora_B [out, r]) and config (peft_type LORA, r, lora_alpha, target_modules,
    fan_in_fan_out for GPT-2's Conv1D);
  - PyTorch (scripts/check_export.py) computes, from the base's own export with the adapters
    applied as PEFT applies them, zerodp eval's loss on the LoRA checkpoint within 1e-4
    relative (the same fp32 model, its weights W + s B A summed in another order);
  - export --merge writes a Hugging Face folder whose loss in PyTorch is the same, within the
    same bound, and which a second export replaces;
  - for QLoRA adapters (--quantize nf4), the same with the base's block weights replaced by the
    NumPy reference's NF4 values (check_export.py --nf4 on), which the 16-bit base misses;
  - --merge of a checkpoint without adapters, and adapters to a .safetensors name, are refused
    (exit 2) in one line.
Prints "N passed, N failed"; exit status 1 on a failure.
"""
import json
import os
import subprocess
import sys
import tempfile

ZERODP, REPO = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
TEXT = "/usr/share/common-licenses/GPL-3"
CHECK = os.path.join(REPO, "scripts", "check_export.py")
passed = failed = 0


def check(ok, what):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print("FAIL", what)


def zerodp(*args, cwd):
    return subprocess.run([ZERODP, *args], capture_output=True, text=True, cwd=cwd)


def torch_loss_matches(safetensors, loss, *more, tolerance="1e-4"):
    run = subprocess.run(["/usr/bin/python3", CHECK, safetensors, "--data", TEXT, "--loss",
                          repr(loss), "--tolerance", tolerance, *more], capture_output=True,
                         text=True)
    return run.returncode == 0, run.stdout + run.stderr


with tempfile.TemporaryDirectory() as work:
    base = zerodp("train", "--layers", "2", "--heads", "2", "--hidden", "64", "--seq-len", "32",
                  "--steps", "20", "--ranks", "2", "--save-dir", "base", "--out", "", "--json",
                  cwd=work)
    assert base.returncode == 0, base.stderr
    lora = zerodp("train", "--lora-rank", "4", "--lora-alpha", "16", "--lora-targets",
                  "all-linear", "--base", "base", "--steps", "20", "--lr", "1e-2", "--ranks", "2",
                  "--stage", "3", "--save-dir", "lora", "--out", "", "--json", cwd=work)
    assert lora.returncode == 0, lora.stderr
    ev = zerodp("eval", "--checkpoint", "lora", "--data", TEXT, "--json", cwd=work)
    assert ev.returncode == 0, ev.stderr
    loss = json.loads(ev.stdout)["loss"]
    base_ev = zerodp("eval", "--checkpoint", "base", "--data", TEXT, "--json", cwd=work)
    check(json.loads(base_ev.stdout)["loss"] != loss, "the adapters changed nothing")

    exported = zerodp("export", "--checkpoint", "lora", "--out", "adapter", cwd=work)
    check(exported.returncode == 0 and "PEFT's LoRA folder" in exported.stdout,
          f"export of adapters: {exported.stdout}{exported.stderr}")
    adapter = os.path.join(work, "adapter")
    check(sorted(os.listdir(adapter)) == ["adapter_config.json", "adapter_model.safetensors"],
          f"the adapter folder holds {sorted(os.listdir(adapter))}")
    with open(os.path.join(adapter, "adapter_config.json")) as f:
        cfg = json.load(f)
    check(cfg["peft_type"] == "LORA" and cfg["task_type"] == "CAUSAL_LM" and cfg["r"] == 4 and
          cfg["lora_alpha"] == 16 and cfg["fan_in_fan_out"] is True and cfg["bias"] == "none" and
          cfg["target_modules"] == ["attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"],
          f"adapter_config {cfg}")
    sys.path.insert(0, os.path.join(REPO, "scripts"))
    from check_export import load_safetensors  # noqa: E402
    _, tensors = load_safetensors(os.path.join(adapter, "adapter_model.safetensors"))
    key = "base_model.model.transformer.h.1.mlp.c_fc."
    check(len(tensors) == 2 * 4 * 2 and list(tensors[key + "lora_A.weight"].shape) == [4, 64] and
          list(tensors[key + "lora_B.weight"].shape) == [256, 4],
          f"{len(tensors)} tensors: {sorted(tensors)[:4]}")

    base_hf = zerodp("export", "--checkpoint", "base", "--out", "base_hf", cwd=work)
    assert base_hf.returncode == 0, base_hf.stderr
    ok, out = torch_loss_matches(os.path.join(work, "base_hf", "model.safetensors"), loss,
                                 "--adapter", adapter)
    check(ok, f"the base with PEFT's adapters applied in PyTorch against zerodp eval {loss}: {out}")

    merged = zerodp("export", "--checkpoint", "lora", "--merge", "--out", "merged", cwd=work)
    check(merged.returncode == 0, f"export --merge: {merged.stderr}")
    ok, out = torch_loss_matches(os.path.join(work, "merged", "model.safetensors"), loss)
    check(ok, f"the merged model in PyTorch against zerodp eval {loss}: {out}")
    again = zerodp("export", "--checkpoint", "lora", "--merge", "--out", "merged", cwd=work)
    check(again.returncode == 0, f"a second export --merge: {again.stderr}")

    # QLoRA: adapters trained beside the NF4 base. PyTorch, with the base quantized by the
    # NumPy reference of the QLoRA paper's table and PEFT's adapters applied, and the merged
    # folder alike, compute zerodp eval's loss. The bound is 8 fp32 epsilons (1e-6): the same
    # fp32 model summed in another order, a mean of 35,136 losses each a few roundings off
    # (1.6e-9 on its run). NF4's effect on this lightly trained base is near 5e-5, so the 16-bit
    # base misses it: the check tells the two bases apart.
    tight = "1e-6"
    qlora = zerodp("train", "--lora-rank", "4", "--lora-targets", "all-linear", "--base", "base",
                   "--quantize", "nf4", "--steps", "10", "--lr", "1e-2", "--ranks", "2",
                   "--stage", "3", "--save-dir", "qlora", "--out", "", "--json", cwd=work)
    assert qlora.returncode == 0, qlora.stderr
    ev = zerodp("eval", "--checkpoint", "qlora", "--data", TEXT, "--json", cwd=work)
    assert ev.returncode == 0, ev.stderr
    qloss = json.loads(ev.stdout)["loss"]
    exported = zerodp("export", "--checkpoint", "qlora", "--out", "qadapter", cwd=work)
    check(exported.returncode == 0, f"export of QLoRA adapters: {exported.stderr}")
    ok, out = torch_loss_matches(os.path.join(work, "base_hf", "model.safetensors"), qloss,
                                 "--adapter", os.path.join(work, "qadapter"), "--nf4", "on",
                                 tolerance=tight)
    check(ok, f"the NF4 base with PEFT's adapters in PyTorch against zerodp eval {qloss}: {out}")
    ok, out = torch_loss_matches(os.path.join(work, "base_hf", "model.safetensors"), qloss,
                                 "--adapter", os.path.join(work, "qadapter"), tolerance=tight)
    check(not ok, f"the 16-bit base gave the QLoRA run's loss {qloss}: {out}")
    merged = zerodp("export", "--checkpoint", "qlora", "--merge", "--out", "qmerged", cwd=work)
    check(merged.returncode == 0, f"export --merge of QLoRA: {merged.stderr}")
    ok, out = torch_loss_matches(os.path.join(work, "qmerged", "model.safetensors"), qloss,
                                 tolerance=tight)
    check(ok, f"the merged QLoRA model in PyTorch against zerodp eval {qloss}: {out}")

    refused = zerodp("export", "--checkpoint", "base", "--merge", "--out", "x", cwd=work)
    check(refused.returncode == 2 and refused.stderr.count("\n") == 1 and
          "holds no LoRA adapters to merge" in refused.stderr, f"--merge of a base: {refused.stderr}")
    refused = zerodp("export", "--checkpoint", "lora", "--out", "a.safetensors", cwd=work)
    check(refused.returncode == 2 and "export as a PEFT folder" in refused.stderr,
          f"adapters to a .safetensors name: {refused.stderr}")
    check(not os.path.exists(os.path.join(work, "x")), "a refused export made its folder")

print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
