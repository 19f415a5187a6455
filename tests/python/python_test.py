"""`import zerodp` against the command line: each function returns what its command prints with
--json, refuses what it refuses with its line, and leaves Python's own output alone.

Run by ctest as: /usr/bin/python3 python_test.py BUILD/zerodp, with PYTHONPATH=BUILD/python.
Prints one line per failed check and 'N passed, N failed' last; exit status 1 on a failure.
"""
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import warnings
from contextlib import redirect_stdout

import zerodp

ZERODP = sys.argv[1]
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
passed = failed = 0


def check(ok, what):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print("FAIL", what)


def cli(*args):
    return subprocess.run([ZERODP, *args], capture_output=True, text=True, cwd=REPO)


def cli_json(*args):
    r = cli(*args, "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def raises(error, function, **flags):
    try:
        function(**flags)
    except error as e:
        return str(e)
    return None


os.chdir(REPO)
# The module's temporary configs go to TMPDIR: a folder of this test's own, to see them removed.
scratch = tempfile.mkdtemp(prefix="zerodp-python-test-")
os.environ["TMPDIR"] = scratch

# The seed's Example 1 (1e9 parameters on 8 GPUs): with no GPU memory given there is no verdict,
# so no cheapest stage that fits.
p = zerodp.plan(params=1e9, gpus=8)
check(p == cli_json("plan", "--params", "1e9", "--gpus", "8"), "plan(params=1e9, gpus=8) != CLI")
check([s["model_state_bytes"] for s in p["stages"]] ==
      [16_000_000_000, 5_500_000_000, 3_750_000_000, 2_000_000_000],
      f"Example 1's model states: {[s['model_state_bytes'] for s in p['stages']]}")
check(p["cheapest_fitting_stage"] is None, "a verdict without a GPU memory")
check(zerodp.plan(params=1e9, gpus=8, gpu="a100-40gb")["cheapest_fitting_stage"] == 0,
      "1e9 parameters on 8 A100 40GB: DP holds 16 GB of model states, so DP fits")

# A published model on a card with every kind of value: strings, whole numbers, a float count.
flags = dict(model="llama-3-8b", gpus=8, gpu="a100-40gb", seq_len=4096, micro_batch=1,
             checkpointing="full", attention="flash", stage=2)
argv = ["plan", "--model", "llama-3-8b", "--gpus", "8", "--gpu", "a100-40gb", "--seq-len", "4096",
        "--micro-batch", "1", "--checkpointing", "full", "--attention", "flash", "--stage", "2"]
check(zerodp.plan(**flags) == cli_json(*argv), "plan(model=llama-3-8b ...) != CLI")
check(zerodp.plan(params=8.03e9, gpus=4.0) == cli_json("plan", "--params", "8030000000", "--gpus", "4"),
      "a float with no fraction is not read as the whole number")

# A list is joined with commas, a bool is a flag, None leaves the flag out.
check(zerodp.plan(params="7B", gpus=8, bytes_per_param=[2, 2, 4], count_both_directions=True,
                  activations=None) ==
      cli_json("plan", "--params", "7B", "--gpus", "8", "--bytes-per-param", "2,2,4",
               "--count-both-directions"), "a list, a bool or None is not passed as the CLI takes it")

# A DeepSpeed config and a config.json as dicts give the plan of the same files by path (but for
# the path each names).
ds_path = "examples/ds_zero2_offload.json"
with open(ds_path) as f:
    ds = json.load(f)
run = dict(model="llama-3-8b", gpus=8, gpu="a100-80gb", seq_len=2048, micro_batch=2)
by_path = zerodp.plan(deepspeed_config=ds_path, **run)
by_dict = zerodp.plan(deepspeed_config=ds, **run)
check(by_path["stages"] == by_dict["stages"], "a DeepSpeed config as a dict plans otherwise")
check(by_path == cli_json("plan", "--model", "llama-3-8b", "--gpus", "8", "--gpu", "a100-80gb",
                          "--seq-len", "2048", "--micro-batch", "2", "--deepspeed-config", ds_path),
      "deepspeed_config=path != CLI")
model_path = "tests/plan/validation/llamafactory-1158-baichuan2-13b-zero2.model.json"
with open(model_path) as f:
    model = json.load(f)
check(zerodp.plan(model_config=model, gpus=4, activations="0B")["stages"] ==
      zerodp.plan(model_config=model_path, gpus=4, activations="0B")["stages"],
      "a config.json as a dict plans otherwise")
# A LoRA run: keywords as flags, a PEFT adapter_config.json as a dict, the same plan as the CLI's.
lora = dict(model="llama-2-7b", gpus=8, gpu="a100-80gb")
adapter = {"peft_type": "LORA", "r": 8, "lora_alpha": 16, "lora_dropout": 0.0,
           "target_modules": ["q_proj", "v_proj"], "bias": "none", "modules_to_save": None}
by_flags = zerodp.plan(lora_rank=8, lora_targets=["q_proj", "v_proj"], lora_alpha=16, **lora)
check(by_flags["lora"]["adapter_params"] == 4_194_304, "LoRA r8 on q, v of Llama-2-7B: PEFT's count")
check(by_flags == cli_json("plan", "--model", "llama-2-7b", "--gpus", "8", "--gpu", "a100-80gb",
                           "--lora-rank", "8", "--lora-targets", "q_proj,v_proj",
                           "--lora-alpha", "16"), "plan(lora_rank=8 ...) != CLI")
check(zerodp.plan(adapter_config=adapter, **lora)["stages"] == by_flags["stages"],
      "an adapter_config.json as a dict plans otherwise than its flags")
qlora = zerodp.plan(lora_rank=8, quantize="nf4", **lora)
check(qlora["lora"]["quantize"] == "nf4" and
      qlora["stages"][0]["frozen_bytes"] < by_flags["stages"][0]["frozen_bytes"] // 3,
      "an NF4 base holds more than a third of the 16-bit one's bytes")
leftover = os.listdir(scratch)
check(not leftover, f"files written for the dicts: {leftover}")
# A dict is lent as text in memory: no temporary folder is needed, even one that is missing.
os.environ["TMPDIR"] = os.path.join(scratch, "missing")
check(zerodp.plan(deepspeed_config=ds, **run)["stages"] == by_dict["stages"],
      "a dict needs a temporary folder")
os.environ["TMPDIR"] = scratch
check(zerodp.plan(deepspeed_config=ds, **run)["inputs"]["deepspeed_config"] == "<dict>",
      "the plan does not name the dict as <dict>")

# Bad input: ValueError with the command line's own line, in keywords ("zerodp: --gpus: ..." is
# "zerodp.plan(): gpus: ...").
def in_keywords(line, function="plan"):
    line = line.replace("zerodp: ", f"zerodp.{function}(): ", 1)
    line = re.sub(r"--list-(gpus|models)", r"zerodp.list_\1()", line)
    return re.sub(r"--([a-z0-9]+(?:-[a-z0-9]+)*)", lambda m: m.group(1).replace("-", "_"), line)


import re
for bad, argv in [(dict(params=1e9, gpus=0), ["plan", "--params", "1e9", "--gpus", "0"]),
                  (dict(params=1e9, gpu="a100-41gb"), ["plan", "--params", "1e9", "--gpu", "a100-41gb"]),
                  (dict(model="llama-3-8b", seq_len="4kk"),
                   ["plan", "--model", "llama-3-8b", "--seq-len", "4kk"]),
                  (dict(params=1e9, gpus=8, gpu_memory="80XB"),
                   ["plan", "--params", "1e9", "--gpus", "8", "--gpu-memory", "80XB"])]:
    r = cli(*argv)
    message = raises(ValueError, zerodp.plan, **bad)
    check(r.returncode == 2 and message == in_keywords(r.stderr.strip().splitlines()[-1]),
          f"plan(**{bad}) raised {message!r}; the CLI said {r.stderr.strip()!r}")
    check(message is not None and "--" not in message, f"plan(**{bad}) names a flag: {message!r}")
check(raises(TypeError, zerodp.plan, params={"a": 1}) is not None, "a dict for params was accepted")

# Keywords: a typo is a TypeError with the nearest keyword; a flag's spelling, an output flag and
# a reserved keyword are TypeErrors naming them.
message = raises(TypeError, zerodp.plan, params=1e9, seqlen=4096)
check(message == "zerodp.plan() got an unexpected keyword argument 'seqlen'; did you mean "
      "'seq_len'?", f"seqlen= raised {message!r}")
message = raises(TypeError, zerodp.plan, params=1e9, no_such_flag=1)
check(message == "zerodp.plan() got an unexpected keyword argument 'no_such_flag'",
      f"no_such_flag= raised {message!r}")
message = raises(TypeError, zerodp.plan, **{"list-gpus": True})
check(message is not None and "'list-gpus', which is not a keyword" in message,
      f"**{{'list-gpus': True}} raised {message!r}")
message = raises(TypeError, zerodp.plan, **{"seq-len": 4096})
check(message is not None and "'seq-len' is seq_len" in message, f"seq-len= raised {message!r}")
check(raises(TypeError, zerodp.plan, params=1e9, json=True) is not None, "json= was accepted")
check(raises(TypeError, zerodp.plan, **{"": 1}) is not None, "an empty keyword was accepted")
# Types: a bool is not a count, a number is not a switch.
message = raises(TypeError, zerodp.plan, params=1e9, gpus=True)
check(message == "zerodp.plan(): gpus takes a value (a number or a string), not True or False",
      f"gpus=True raised {message!r}")
check(raises(TypeError, zerodp.plan, params=1e9, gpus=[8, True]) is not None,
      "a bool inside a list was accepted")
message = raises(TypeError, zerodp.plan, params=1e9, gpus=8, binary=1)
check(message == "zerodp.plan(): binary is a switch: True, False or None, not int",
      f"binary=1 raised {message!r}")
check(raises(TypeError, zerodp.plan, params=object()) is not None, "an object was accepted")
# Text: a NUL, a lone surrogate; a config nested 100,000 deep (a dict and a list).
message = raises(ValueError, zerodp.plan, model="llama\0-3-8b", gpus=8)
check(message == "zerodp.plan(): model: expected text without a NUL character",
      f"a NUL raised {message!r}")
message = raises(ValueError, zerodp.plan, model="llama-3-8b\ud800", gpus=8)
check(message is not None and message.startswith("zerodp.plan(): model: ") and
      "surrogate" in message, f"a lone surrogate raised {message!r}")
check(raises(ValueError, zerodp.plan, **{"params": 1e9, "gpu\ud800": 1}) is not None or
      raises(TypeError, zerodp.plan, **{"params": 1e9, "gpu\ud800": 1}) is not None,
      "a keyword with a lone surrogate was accepted")
# A 100 kB value that looks like flags: taken as the keyword's value (not as a flag), named cut
# in a message of bounded length, and no std::regex recursion over it (which killed Python).
long_value = "--a" + "-a" * 50_000
for key in ("gpu_memory", "gpu", "seq_len"):
    kw = dict(params=1e9, gpus=8, **{key: long_value})
    if key == "seq_len":
        kw = dict(model="gpt2", gpus=8, seq_len=long_value)
    message = raises(ValueError, zerodp.plan, **kw)
    check(message is not None and message.startswith(f"zerodp.plan(): {key}: ") and
          "(100003 bytes)" in message and len(message) < 1000,
          f"a 100 kB {key} raised {message if message is None else message[:200]!r}")
message = raises(ValueError, zerodp.plan, params=1e9, gpus=8, gpu_memory="-5GB")
check(message is not None and message.startswith("zerodp.plan(): gpu_memory: ") and "'-5GB'" in message,
      f"gpu_memory='-5GB' raised {message!r}")
deep = {}
inner = deep
for _ in range(100_000):
    inner["zero_optimization"] = {}
    inner = inner["zero_optimization"]
message = raises(ValueError, zerodp.plan, model="gpt2", gpus=8, deepspeed_config=deep)
check(message == "zerodp.plan(): deepspeed_config: expected a config nested at most 64 deep",
      f"a dict 100,000 deep raised {message!r}")
deep_list = []
inner = deep_list
for _ in range(100_000):
    inner.append([])
    inner = inner[0]
message = raises(ValueError, zerodp.plan, model_config={"n_layer": deep_list}, gpus=8)
check(message is not None and "model_config" in message, f"a list 100,000 deep raised {message!r}")

# An integer of another type (numpy's) is taken by its __index__, as Python's own indices are.
class Eight:
    def __index__(self):
        return 8
check(zerodp.plan(params=1e9, gpus=Eight()) == zerodp.plan(params=1e9, gpus=8),
      "an object with __index__ plans otherwise than its int")

# The C locale for numbers, whatever the process set: a decimal-comma locale (de_DE, compiled
# here into a folder of the test's own: LOCPATH) read "1.5s" as 1 s and printed "3,00x".
locale_dir = tempfile.mkdtemp(prefix="zerodp-locale-")
made = subprocess.run(["localedef", "-i", "de_DE", "-f", "UTF-8",
                       os.path.join(locale_dir, "de_DE.UTF-8")], capture_output=True, text=True)
check(made.returncode in (0, 1) and os.path.isdir(os.path.join(locale_dir, "de_DE.UTF-8")),
      f"localedef could not make de_DE.UTF-8 (the locales package): {made.stderr}")
timed = dict(params=1e9, gpus=8, compute_time="1.5s", bandwidth="12.5GB/s", overlap=0.25)
probe = (f"import json, locale, sys; sys.path.insert(0, {os.path.dirname(zerodp.__file__)!r}); "
         "import zerodp; locale.setlocale(locale.LC_ALL, 'de_DE.UTF-8'); "
         f"print(json.dumps(zerodp.plan(**{timed!r})))")
german = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                        env=dict(os.environ, LOCPATH=locale_dir))
check(german.returncode == 0 and json.loads(german.stdout) == zerodp.plan(**timed),
      f"a decimal-comma locale plans otherwise: {german.stderr[-300:]}")
shutil.rmtree(locale_dir)

# A fork while other threads plan: the child plans too (the fork waits for the call in progress;
# the child's copy of the lock is free), every time.
import threading
stop = threading.Event()
def plan_until_stopped():
    while not stop.is_set():
        zerodp.plan(params=1e9, gpus=8)
planners = [threading.Thread(target=plan_until_stopped) for _ in range(2)]
for t in planners:
    t.start()
hung = 0
for _ in range(20):
    pid = os.fork()
    if pid == 0:
        signal.alarm(20)  # a hang ends the child, which the parent counts
        ok = zerodp.plan(params=1e9, gpus=4)["inputs"]["gpus"] == 4
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    hung += status != 0
stop.set()
for t in planners:
    t.join()
check(hung == 0, f"{hung} of 20 children forked while threads planned failed or hung")

# help() and inspect show every keyword with its type and default.
import inspect
signature = inspect.signature(zerodp.plan)
check(all(p.kind == p.KEYWORD_ONLY and p.default is None for p in signature.parameters.values()),
      f"plan's signature: {signature}")
check({"seq_len", "micro_batch", "host_memory", "deepspeed_config", "gpus"} <=
      set(signature.parameters), f"plan's keywords: {list(signature.parameters)}")
check(signature.parameters["binary"].annotation == "bool", "binary is not a bool")
doc = zerodp.plan.__doc__
check("seq_len (str | int | float; N): " in doc and "default 1024" in doc and
      "--seq-len" not in doc.split("Keywords")[1], f"plan's help: {doc[:400]!r}")
check("stage" in inspect.signature(zerodp.predict_peak).parameters, "predict_peak's keywords")

# A warning of the command line is a Python warning, and the plan still comes back.
with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
    json.dump({"zero_optimization": {"stage": 3, "no_such_key": 1}}, f)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    warned = zerodp.plan(params=1e9, gpus=8, largest_layer="65M", deepspeed_config=f.name)
os.unlink(f.name)
check(warned["stages"][3]["model_state_bytes"] == 2_000_000_000 and
      any("no_such_key" in str(w.message) for w in caught),
      f"the unknown key's warning: {[str(w.message) for w in caught]}")

# The catalogues.
models = zerodp.list_models()
check(models == cli_json("plan", "--list-models"), "list_models() != CLI")
check({m["name"]: m["params"] for m in models}.get("llama-3-8b") == 8_030_261_248,
      "llama-3-8b's count in list_models()")
gpus = zerodp.list_gpus()
check(gpus == cli_json("plan", "--list-gpus"), "list_gpus() != CLI")
check({g["name"]: g["reported_bytes"] for g in gpus}.get("a100-40gb") == 42_298_834_944,
      "the A100 40GB's reported bytes in list_gpus()")

links = zerodp.list_links()
check(links == cli_json("plan", "--list-links"), "list_links() != CLI")
check({l["name"]: l["bytes_per_second"] for l in links}.get("ib-hdr") == 24e9,
      "the HDR NIC's measured rate in list_links()")

# How long and at what cost: the predicted step, wall clock and GPU-hours are the CLI's.
timed = zerodp.plan(model="llama-3-8b", gpus=16, gpu="h100-80gb", seq_len=4096, micro_batch=1,
                    tokens="1B", price_per_gpu_hour=2.5)
check(timed == cli_json("plan", "--model", "llama-3-8b", "--gpus", "16", "--gpu", "h100-80gb",
                        "--seq-len", "4096", "--micro-batch", "1", "--tokens", "1B",
                        "--price-per-gpu-hour", "2.5"),
      "plan(tokens=..., price_per_gpu_hour=...) != CLI")
z3 = timed["stages"][3]
check(z3["gpu_hours"] > 0 and
      abs(z3["gpu_hours"] - 1e9 / z3["tokens_per_second_per_gpu"] / 3600) < 1e-9 * z3["gpu_hours"]
      and abs(z3["cost"] - 2.5 * z3["gpu_hours"]) < 1e-9 * z3["cost"],
      f"GPU-hours and cost of 1B tokens: {z3['gpu_hours']}, {z3['cost']}")

# The engine's prediction, as train --dry-run --json (nothing trained).
peak = zerodp.predict_peak(stage=3, ranks=4)
check(peak == cli_json("train", "--dry-run", "--stage", "3", "--ranks", "4"),
      "predict_peak(stage=3, ranks=4) != CLI")
check(raises(ValueError, zerodp.predict_peak, stage=7) ==
      in_keywords(cli("train", "--dry-run", "--stage", "7").stderr.strip().splitlines()[-1],
                  "predict_peak"),
      "predict_peak's refusal is not the CLI's line in keywords")

# A QLoRA run's prediction: train's LoRA keywords, the base a checkpoint trained here.
base = os.path.join(scratch, "qlora-base")
trained = cli("train", "--layers", "1", "--heads", "2", "--hidden", "64", "--seq-len", "16",
              "--steps", "1", "--save-dir", base, "--out", "")
check(trained.returncode == 0, f"a base for predict_peak: {trained.stderr}")
qlora = dict(lora_rank=8, lora_targets="all-linear", base=base, stage=3, ranks=2)
nf4_peak = zerodp.predict_peak(quantize="nf4", **qlora)
check(nf4_peak == cli_json("train", "--dry-run", "--lora-rank", "8", "--lora-targets",
                           "all-linear", "--base", base, "--stage", "3", "--ranks", "2",
                           "--quantize", "nf4"),
      "predict_peak(quantize='nf4', ...) != CLI")
plain_peak = zerodp.predict_peak(**qlora)
check(nf4_peak["model"]["quantize"] == "nf4" and nf4_peak["model"]["double_quant"] is True and
      nf4_peak["breakdown"]["params16"] < plain_peak["breakdown"]["params16"],
      f"the NF4 base's params16 {nf4_peak['breakdown']['params16']} against 16 bits' "
      f"{plain_peak['breakdown']['params16']}")
shutil.rmtree(base)

# Python's own output is untouched: what it printed before and after a call is where it was.
buffer = io.StringIO()
with redirect_stdout(buffer):
    print("before")
    zerodp.plan(params=1e9, gpus=8)
    print("after")
check(buffer.getvalue() == "before\nafter\n", f"Python's stdout around a call: {buffer.getvalue()!r}")

# Eight threads, each printing (through Python and straight to file descriptor 1) while it
# calls: every result is the one a single call gives, and nothing the module runs is written to
# file descriptor 1 (the module captures nothing there).
import threading
expected = {n: zerodp.plan(params=1e9, gpus=n) for n in range(1, 9)}
bad_expected = raises(ValueError, zerodp.plan, params=1e9, gpus=0)
results, errors = {}, []
fd1_copy = os.dup(1)
pipe_read, pipe_write = os.pipe()
os.dup2(pipe_write, 1)
try:
    def worker(n):
        try:
            for round in range(20):
                sys.stdout.write(f"thread {n} round {round}\n")  # one write: print's two may
                sys.stdout.flush()                                 # interleave with others
                os.write(1, f"raw {n} {round}\n".encode())
                got = zerodp.plan(params=1e9, gpus=n)
                if got != expected[n]:
                    errors.append(f"thread {n}: another result")
                if raises(ValueError, zerodp.plan, params=1e9, gpus=0) != bad_expected:
                    errors.append(f"thread {n}: another refusal")
            results[n] = True
        except Exception as e:  # noqa: BLE001 - any failure is the test's
            errors.append(f"thread {n}: {e!r}")
    threads = [threading.Thread(target=worker, args=(n,)) for n in range(1, 9)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
finally:
    sys.stdout.flush()
    os.dup2(fd1_copy, 1)
    os.close(fd1_copy)
    os.close(pipe_write)
written = b""
while True:
    chunk = os.read(pipe_read, 65536)
    if not chunk:
        break
    written += chunk
os.close(pipe_read)
# What file descriptor 1 received is exactly the threads' own lines, each once, and nothing else.
leftover = written.decode()
for n in range(1, 9):
    for round in range(20):
        for said in (f"thread {n} round {round}\n", f"raw {n} {round}\n"):
            check(said in leftover, f"file descriptor 1 lost {said!r}")
            leftover = leftover.replace(said, "", 1)
check(not errors and len(results) == 8, f"8 threads: {errors[:3]}")
check(leftover.strip("\n") == "", f"file descriptor 1 held more than the threads wrote: "
      f"{leftover[:200]!r}")

# docs/python.md's notebook session is run as it is shown.
import doctest
result = doctest.testfile(os.path.join(REPO, "docs", "python.md"), module_relative=False,
                          report=True)
check(result.attempted >= 10 and result.failed == 0,
      f"docs/python.md: {result.failed} of {result.attempted} examples differ (shown above)")

# README.md's Python runs as shown and prints what its comment says.
readme = open(os.path.join(REPO, "README.md"), encoding="utf-8").read()
blocks = re.findall(r"```python\n(.*?)```", readme, re.S)
check(len(blocks) >= 1, "README.md has no Python block")
for block in blocks:
    printed = io.StringIO()
    with redirect_stdout(printed):
        exec(block, {})
    shown = re.findall(r"print\(.*\)\s+#\s*(.*?)(?:\.\.\.)?$", block, re.M)
    check(all(printed.getvalue().startswith(s.strip()) for s in shown) and printed.getvalue(),
          f"README.md's Python printed {printed.getvalue()!r}, its comment says {shown}")

os.rmdir(scratch)
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
