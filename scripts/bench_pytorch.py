#!/usr/bin/python3
"""PyTorch's tokens/s on zerodp's GPT benchmark configuration, for bench_speed.sh. Not in CI.

The same model as zerodp's GptModel (byte-level GPT-2: vocab 256, context 128, 4 layers,
4 heads, hidden 256, tied LM head, GELU tanh, LayerNorm eps 1e-5: 3,257,856 parameters),
micro-batch 8 per rank, AdamW and gradient clipping at 1.0 as `zerodp train` does. PyTorch
computes and stores everything in fp32 (zerodp stores 16-bit params and grads and computes in
fp32); the products are the same size either way.

Modes (one line of results each):
  single  one process, --threads intra-op threads (default 2)
  ddp     DistributedDataParallel over gloo, --ranks processes x 1 thread
  zero    DDP + ZeroRedundancyOptimizer (PyTorch's ZeRO-1: AdamW states sharded), same shape
With --autocast, each forward runs under torch.autocast("cpu", dtype=torch.bfloat16): linear
layers and batched products multiply in bf16 (oneDNN's bf16 matmul on a CPU with AVX512-BF16
or AMX), the one-line change a PyTorch user makes; the weights, gradients and AdamW stay fp32.
PyTorch 1.13's FullyShardedDataParallel needs CUDA (it has no CPU path in 1.13), so there is
no ZeRO-3 column.

Timing: --warmup steps are run and dropped; then --repeats blocks of --steps steps are timed,
and the median block's tokens/s is printed (global tokens: ranks x micro-batch x context per
step). With --cpu, a block's time is the larger of two lower bounds of its wall time on an
idle machine, as in zerodp's bench_gpt_train: the CPU time of every process of the run over
the cores it uses (min(ranks x threads, cores)), and the CPU time of the busiest main thread.
Other work on a shared machine moves CPU time much less than wall time; but threads that spin
while they wait (OpenBLAS's pool, gloo) count as busy, and on a loaded machine they spin longer,
so a process with such threads can look slower than it would be on an idle machine.

Environment: OMP_WAIT_POLICY=PASSIVE is set (unless given) before torch is imported, and
OPENBLAS_NUM_THREADS to the threads per process: PyTorch 1.13 from Debian calls OpenBLAS
(libblas.so.3) for its GEMMs, and two spinning pools on two cores halve the speed. Other
variables (OPENBLAS_CORETYPE, OPENBLAS_L2_SIZE) are left as they are and printed.

  /usr/bin/python3 scripts/bench_pytorch.py [--modes single,ddp,zero] [--autocast] [--cpu] [--json]
"""

import argparse
import json
import os
import statistics
import sys
import time


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--modes", default="single,ddp,zero", help="comma-separated: single,ddp,zero")
    p.add_argument("--threads", type=int, default=2, help="intra-op threads of 'single' [2]")
    p.add_argument("--ranks", type=int, default=2, help="processes of 'ddp' and 'zero' [2]")
    p.add_argument("--micro-batch", type=int, default=8, help="samples per rank per step [8]")
    p.add_argument("--warmup", type=int, default=3, help="steps run before timing [3]")
    p.add_argument("--steps", type=int, default=5, help="steps per timed block [5]")
    p.add_argument("--repeats", type=int, default=5, help="timed blocks; the median is kept [5]")
    p.add_argument("--foreach", action="store_true", help="AdamW(foreach=True)")
    p.add_argument("--autocast", action="store_true", help="forward under bf16 autocast")
    p.add_argument("--bucket-mb", type=float, default=25, help="DDP bucket_cap_mb [25]")
    p.add_argument("--cpu", action="store_true", help="process CPU time / cores used, not wall")
    p.add_argument("--json", action="store_true", help="one JSON object per mode, nothing else")
    p.add_argument("--port", type=int, default=0, help="gloo rendezvous port [0: a free one]")
    return p.parse_args()


def build_model(torch, cfg):
    nn, F = torch.nn, torch.nn.functional
    V, T, L, NH, C = cfg["vocab"], cfg["seq_len"], cfg["layers"], cfg["heads"], cfg["hidden"]

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(C, eps=1e-5)
            self.c_attn = nn.Linear(C, 3 * C)
            self.attn_proj = nn.Linear(C, C)
            self.ln_2 = nn.LayerNorm(C, eps=1e-5)
            self.c_fc = nn.Linear(C, 4 * C)
            self.mlp_proj = nn.Linear(4 * C, C)
            # Plain attributes, not buffers: DDP broadcasts buffers, and gloo has no bool.
            self.future = ~torch.ones(T, T, dtype=torch.bool).tril()

        def forward(self, x):
            B = x.shape[0]
            q, k, v = self.c_attn(self.ln_1(x)).split(C, dim=2)
            q = q.view(B, T, NH, C // NH).transpose(1, 2)
            k = k.view(B, T, NH, C // NH).transpose(1, 2)
            v = v.view(B, T, NH, C // NH).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) * (1.0 / (C // NH) ** 0.5)
            att = att.masked_fill(self.future, float("-inf")).softmax(dim=-1)
            y = (att @ v).transpose(1, 2).reshape(B, T, C)
            x = x + self.attn_proj(y)
            return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(V, C)
            self.wpe = nn.Embedding(T, C)
            self.h = nn.ModuleList([Block() for _ in range(L)])
            self.ln_f = nn.LayerNorm(C, eps=1e-5)
            self.pos = torch.arange(T)
            for name, w in self.named_parameters():
                if name.endswith("bias"):
                    nn.init.zeros_(w)
                elif "ln_" in name:
                    nn.init.ones_(w)
                else:
                    std = 0.02 / (2 * L) ** 0.5 if name.endswith("proj.weight") else 0.02
                    nn.init.normal_(w, std=std)

        def forward(self, idx, targets):
            x = self.wte(idx) + self.wpe(self.pos)
            for block in self.h:
                x = block(x)
            logits = self.ln_f(x) @ self.wte.weight.t()  # LM head tied to wte
            return F.cross_entropy(logits.view(-1, V), targets.view(-1))

    return GPT()


CONFIG = {"vocab": 256, "seq_len": 128, "layers": 4, "heads": 4, "hidden": 256}
PARAMS = 3_257_856


def run(rank, ranks, threads, mode, args, out):
    """One process of a mode: builds the model, trains, returns the timed blocks (rank 0)."""
    import torch
    import torch.distributed as dist

    torch.set_num_threads(threads)
    torch.manual_seed(1)
    model = build_model(torch, CONFIG)
    n = sum(p.numel() for p in model.parameters())
    assert n == PARAMS, f"{n} parameters, expected {PARAMS}"
    distributed = mode != "single"
    if distributed:
        os.environ["MASTER_ADDR"] = "127.0.0.1"
        os.environ["MASTER_PORT"] = str(args.port)
        dist.init_process_group("gloo", rank=rank, world_size=ranks)
        model = torch.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=args.bucket_mb)
    adamw = dict(lr=1e-3, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1, foreach=args.foreach)
    if mode == "zero":
        from torch.distributed.optim import ZeroRedundancyOptimizer

        opt = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.AdamW, **adamw)
    else:
        opt = torch.optim.AdamW(model.parameters(), **adamw)

    B, T = args.micro_batch, CONFIG["seq_len"]
    g = torch.Generator().manual_seed(1234 + rank)
    windows = torch.randint(0, 256, (16, B, T + 1), generator=g)
    inputs, targets = windows[:, :, :-1].contiguous(), windows[:, :, 1:].contiguous()

    def step(i):
        if args.autocast:
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss = model(inputs[i % 16], targets[i % 16])
        else:
            loss = model(inputs[i % 16], targets[i % 16])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss

    i = 0
    for _ in range(args.warmup):
        step(i)
        i += 1
    blocks = []
    for _ in range(args.repeats):
        if distributed:
            dist.barrier()
        w0, c0, t0 = time.perf_counter(), time.process_time(), time.thread_time()
        for _ in range(args.steps):
            step(i)
            i += 1
        if distributed:
            dist.barrier()
        wall, cpu, main = time.perf_counter() - w0, time.process_time() - c0, time.thread_time() - t0
        if distributed:
            t = torch.tensor([wall, cpu], dtype=torch.float64)
            dist.all_reduce(t)  # sum over ranks: the wall times are ~equal after the barrier
            m = torch.tensor([main], dtype=torch.float64)
            dist.all_reduce(m, op=dist.ReduceOp.MAX)
            wall, cpu, main = t[0].item() / ranks, t[1].item(), m[0].item()
        blocks.append((wall, cpu, main))
    if distributed:
        dist.destroy_process_group()
    if rank == 0:
        out.put(blocks)


def child(rank, ranks, threads, mode, args, out):
    try:
        run(rank, ranks, threads, mode, args, out)
    except BaseException as e:  # report, so that the parent does not wait forever
        out.put(f"rank {rank}: {type(e).__name__}: {e}")
        raise


def free_port():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def measure(mode, args):
    import multiprocessing as mp
    import queue

    ranks = 1 if mode == "single" else args.ranks
    threads = args.threads if mode == "single" else 1
    # Each process gets its thread count before torch (and OpenBLAS) load.
    os.environ["OMP_NUM_THREADS"] = str(threads)
    os.environ["OPENBLAS_NUM_THREADS"] = str(threads)
    if args.port == 0:  # a fresh rendezvous port for every run
        args = argparse.Namespace(**{**vars(args), "port": free_port()})
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=child, args=(r, ranks, threads, mode, args, out)) for r in range(ranks)]
    for p in procs:
        p.start()
    # Rank 0's blocks, or the first failure; a process that dies without a word fails the run
    # rather than leaving its peers waiting in a collective.
    result = None
    while result is None:
        try:
            result = out.get(timeout=5)
        except queue.Empty:
            dead = [p for p in procs if p.exitcode not in (None, 0)]
            if dead:
                result = f"a process exited with status {dead[0].exitcode}"
    for p in procs:
        p.join(timeout=60)
        if p.is_alive():  # stuck tearing down gloo after rank 0 reported: not our measurement
            p.terminate()
            p.join()
    if isinstance(result, str):
        sys.exit(f"bench_pytorch: {mode}: {result}")
    cores = min(ranks * threads, os.cpu_count() or 1)
    tokens = ranks * args.micro_batch * CONFIG["seq_len"] * args.steps
    rates = [tokens / (max(cpu / cores, main) if args.cpu else wall) for wall, cpu, main in result]
    if os.environ.get("BENCH_PYTORCH_DEBUG"):
        print(f"{mode}: blocks (wall, process CPU / {cores}, busiest main thread CPU): "
              + ", ".join(f"({w:.2f}, {c / cores:.2f}, {m:.2f})" for w, c, m in result), file=sys.stderr)
    return {
        "mode": mode,
        "ranks": ranks,
        "threads_per_rank": threads,
        "tokens_per_second": statistics.median(rates),
        "min": min(rates),
        "max": max(rates),
        "repeats": len(rates),
        "autocast": "bf16" if args.autocast else "none",
        "time": "cpu" if args.cpu else "wall",
    }


def main():
    args = parse_args()
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    modes = [m for m in args.modes.split(",") if m]
    for m in modes:
        if m not in ("single", "ddp", "zero"):
            sys.exit(f"--modes: expected single, ddp or zero, got '{m}'")
    import torch

    env = {k: os.environ.get(k, "(unset)") for k in ("OMP_WAIT_POLICY", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    if not args.json:
        print(
            f"PyTorch {torch.__version__}, {CONFIG['layers']} layers, {CONFIG['heads']} heads, "
            f"hidden {CONFIG['hidden']}, context {CONFIG['seq_len']}, vocab {CONFIG['vocab']}: "
            f"{PARAMS} parameters, fp32{' with bf16 autocast' if args.autocast else ''}, AdamW, "
            f"micro-batch {args.micro_batch} per rank"
        )
        print("environment: " + ", ".join(f"{k}={v}" for k, v in env.items()) + f"; {os.cpu_count()} cores")
        print(
            f"{'time' if not args.cpu else 'CPU time / cores used'}: median of {args.repeats} blocks "
            f"of {args.steps} steps after {args.warmup} warm-up steps"
        )
        print("FSDP: none (PyTorch 1.13's FullyShardedDataParallel has no CPU path)")
    for m in modes:
        r = measure(m, args)
        r["environment"] = env
        if args.json:
            print(json.dumps(r), flush=True)
        else:
            name = {"single": "1 process", "ddp": "DDP (gloo)", "zero": "DDP + ZeroRedundancyOptimizer"}[m]
            print(
                f"{name:32s} {r['ranks']} x {r['threads_per_rank']} thread(s)  "
                f"{r['tokens_per_second']:8.0f} tokens/s  (min {r['min']:.0f}, max {r['max']:.0f})",
                flush=True,
            )


if __name__ == "__main__":
    main()
