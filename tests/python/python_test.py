"""`import zerodp` against the command line: each function returns what its command prints with
--json, refuses what it refuses with its line, and leaves Python's own output alone.

Run by ctest as: /usr/bin/python3 python_test.py BUILD/zerodp, with PYTHONPATH=BUILD/python.
Prints one line per failed check and 'N passed, N failed' last; exit status 1 on a failure.
"""
import io
import json
import os
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
leftover = os.listdir(scratch)
check(not leftover, f"temporary configs left behind: {leftover}")

# Bad input: ValueError with the command line's own line.
for bad, argv in [(dict(model="llama-3-8b", gpus=8), ["plan", "--model", "llama-3-8b", "--gpus", "8"]),
                  (dict(params=1e9, gpus=0), ["plan", "--params", "1e9", "--gpus", "0"]),
                  (dict(params=1e9, gpu="a100-41gb"), ["plan", "--params", "1e9", "--gpu", "a100-41gb"]),
                  (dict(params=1e9, no_such_flag=1), ["plan", "--params", "1e9", "--no-such-flag", "1"])]:
    r = cli(*argv)
    message = raises(ValueError, zerodp.plan, **bad)
    check(r.returncode == 2 and message == r.stderr.strip().splitlines()[-1],
          f"plan(**{bad}) raised {message!r}; the CLI said {r.stderr.strip()!r}")
check(raises(ValueError, zerodp.plan, params=1e9, json=True) is not None, "json= was accepted")
check(raises(ValueError, zerodp.plan, params={"a": 1}) is not None, "a dict for --params was accepted")

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

# The engine's prediction, as train --dry-run --json (nothing trained).
peak = zerodp.predict_peak(stage=3, ranks=4)
check(peak == cli_json("train", "--dry-run", "--stage", "3", "--ranks", "4"),
      "predict_peak(stage=3, ranks=4) != CLI")
check(raises(ValueError, zerodp.predict_peak, stage=7) ==
      cli("train", "--dry-run", "--stage", "7").stderr.strip().splitlines()[-1],
      "predict_peak's refusal is not the CLI's line")

# Python's own output is untouched: what it printed before and after a call is where it was.
buffer = io.StringIO()
with redirect_stdout(buffer):
    print("before")
    zerodp.plan(params=1e9, gpus=8)
    print("after")
check(buffer.getvalue() == "before\nafter\n", f"Python's stdout around a call: {buffer.getvalue()!r}")

# docs/python.md's notebook session is run as it is shown.
import doctest
result = doctest.testfile(os.path.join(REPO, "docs", "python.md"), module_relative=False,
                          report=True)
check(result.attempted >= 10 and result.failed == 0,
      f"docs/python.md: {result.failed} of {result.attempted} examples differ (shown above)")

# README.md's Python runs as shown and prints what its comment says.
import re
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
