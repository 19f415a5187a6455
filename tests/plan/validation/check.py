#!/usr/bin/env python3
"""The planner against published runs: every case of cases.json keeps its prediction.

Each case of tests/plan/validation/cases.json is one published observation of a training run, a
full fine-tune or a LoRA or QLoRA one, under DeepSpeed ZeRO or FSDP or on one GPU (an
out-of-memory error, a run that went through, or a measured memory figure), the `zerodp plan`
arguments that describe its configuration, and the prediction
zerodp made for it. For every case the check runs `zerodp plan ARGV --json` from the source
directory and asserts:

  - the prediction is the stored one, byte for byte: the peak per GPU of the stage the plan is
    asked about (`--stage`, or the DeepSpeed config's stage), its terms, the GPU memory it is
    compared with, the `fits` flag and the three-valued `verdict` (stages[].verdict: "fits",
    "tight" or "does_not_fit");
  - the stored verdict is what the numbers give:
      oom       "same verdict" when the stage does not fit or is tight, else "off";
      ran       "same verdict" when it fits or is tight, else "off" ("tight" says the run is
                within the planner's error of the card, so either outcome agrees with it);
      measured  "within 15%" when the ratio of the prediction to the figure is within
                [0.85, 1.15], else "off"; for figures PyTorch's allocator reports
                (allocated, active, reserved) the prediction less the CUDA allowance is
                compared, as they do not count the CUDA context; for nvidia-smi's and unnamed
                figures the whole peak;
    an "off" case carries the reason it is off, and no other case carries one;
  - the tight band the planner prints (`tight_band.under`, `tight_band.over`) is the measured
    cases': among the "within 15%" cases, `under` the largest 1 / ratio - 1 where the planner
    predicted less than the figure, `over` the largest ratio - 1 where it predicted more, each
    rounded up to the next whole percent;
  - the table of docs/validation.md between its markers is what cases.json generates.

One line per failing case, then a summary; exit 1 when anything fails.

  --update  rewrites the stored predictions and verdicts of cases.json from the binary, then the
            table of docs/validation.md. A case that turns "off" gets an empty reason, which
            the check then refuses until one is written; the update says so and exits 1.

Usage: check.py path/to/zerodp path/to/repository [--update]
"""
import json
import math
import os
import re
import subprocess
import sys

HERE = os.path.join("tests", "plan", "validation")
CASES = os.path.join(HERE, "cases.json")
DOC = os.path.join("docs", "validation.md")
BEGIN = "<!-- BEGIN validation table: written by tests/plan/validation/check.py --update from cases.json; do not edit -->"
END = "<!-- END validation table -->"

KINDS = ("oom", "ran", "measured")
FIGURES = ("allocated", "active", "reserved", "nvidia-smi", "not stated")
# The figures PyTorch's caching allocator reports, which leave out the CUDA context.
ALLOCATOR_FIGURES = ("allocated", "active", "reserved")
CLASSES = ("same verdict", "within 15%", "off")
TOLERANCE = 0.15
STAGE_NAMES = ("DP", "ZeRO-1", "ZeRO-2", "ZeRO-3")
# The planner's three-valued verdict (stages[].verdict) and how the table writes it.
GPU_VERDICTS = {"fits": "fits", "tight": "tight", "does_not_fit": "does not fit"}
# The terms of the GPU peak the table has a column for, as `--json` names them under
# stages[].peak; any other term the binary reports is stored too and shown as "other".
TERMS = ("model_state_bytes", "activation_bytes", "reduce_buffer_bytes", "gathered_param_bytes",
         "layer_grad_bytes", "persistent_param_bytes", "hpz_secondary_bytes",
         "step_fp32_grad_bytes", "step_flat_grad_bytes", "optimizer_temp_bytes",
         "deferred_grad_bytes", "cuda_overhead_bytes", "peak_bytes")


class CaseError(Exception):
    pass


def gb(n):
    return f"{n / 1e9:.2f} GB"


def size(n):
    """A term of the peak: GB down to 0.1 GB, MB and kB below (10^6, 10^3 bytes)."""
    if n >= 10**8:
        return gb(n)
    if n >= 10**5:
        return f"{n / 1e6:.2f} MB"
    return f"{n / 1e3:.2f} kB"


def validate(case, seen, repo, update):
    """The case's form: what a reader and the check rely on. Raises CaseError. A new case may
    come without its prediction and verdict; --update writes them."""
    if update:
        case.setdefault("prediction", {})
        case.setdefault("verdict", {"class": "same verdict", "reason": ""})
    cid = case.get("id")
    if not isinstance(cid, str) or not re.fullmatch(r"[a-z0-9][a-z0-9.-]*", cid):
        raise CaseError(f"id {cid!r} is not a lower-case name of letters, digits, '.' and '-'")
    if cid in seen:
        raise CaseError("the id is used twice")
    seen.add(cid)
    if not str(case.get("source", "")).startswith("https://"):
        raise CaseError("source is not an https:// address")
    for key in ("configuration", "argv", "observation", "prediction", "verdict"):
        if key not in case:
            raise CaseError(f"no {key}")
    argv = case["argv"]
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
        raise CaseError("argv is not a list of strings")
    if "--json" in argv:
        raise CaseError("argv has --json (the check adds it)")
    for flag, value in zip(argv, argv[1:]):
        if flag in ("--deepspeed-config", "--model-config"):
            expected = os.path.join(HERE, cid + (".deepspeed.json" if flag == "--deepspeed-config"
                                                 else ".model.json"))
            if value != expected:
                raise CaseError(f"{flag} {value}: a case's files are {expected}")
            if not os.path.isfile(os.path.join(repo, value)):
                raise CaseError(f"{flag} {value}: no such file")
    obs = case["observation"]
    if obs.get("kind") not in KINDS:
        raise CaseError(f"observation kind {obs.get('kind')!r} is not one of {', '.join(KINDS)}")
    if obs["kind"] == "measured":
        if not isinstance(obs.get("value"), (int, float)) or obs["value"] <= 0:
            raise CaseError("a measured observation needs a positive value")
        if not isinstance(obs.get("unit"), str) or not isinstance(obs.get("unit_bytes"), int):
            raise CaseError("a measured observation needs its unit as the source writes it "
                            "and unit_bytes, the bytes that unit stands for")
        if obs.get("figure") not in FIGURES:
            raise CaseError(f"figure {obs.get('figure')!r} is not one of {', '.join(FIGURES)}")
    verdict = case["verdict"]
    if verdict.get("class") not in CLASSES:
        raise CaseError(f"verdict class {verdict.get('class')!r} is not one of "
                        f"{', '.join(repr(c) for c in CLASSES)}")


def run_plan(zerodp, repo, argv):
    """The prediction of `zerodp plan ARGV --json` for the stage it is asked about, and the
    plan's tight band ((`tight_band.under`, `tight_band.over`), None when it prints none)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ZERODP_")}
    result = subprocess.run([zerodp, "plan", *argv, "--json"], cwd=repo, env=env,
                            capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        first = (result.stderr.strip() or result.stdout.strip() or "no output").split("\n")[0]
        raise CaseError(f"zerodp plan exited {result.returncode}: {first}")
    try:
        plan = json.loads(result.stdout)
    except json.JSONDecodeError as e:
        raise CaseError(f"zerodp plan --json printed no JSON ({e})")
    stage = plan["inputs"].get("configured_stage")
    if not isinstance(stage, int):
        raise CaseError("the plan names no stage: give --stage or a DeepSpeed config with one")
    row = plan["stages"][stage]
    peak = row.get("peak")
    if row.get("fits") is None or plan["inputs"].get("gpu_memory_bytes") is None:
        raise CaseError("the plan has no fits verdict: give --gpu or --gpu-memory")
    if row.get("verdict") not in GPU_VERDICTS:
        raise CaseError(f"stages[{stage}].verdict is {row.get('verdict')!r}, not one of "
                        f"{', '.join(GPU_VERDICTS)}")
    band = plan.get("tight_band")
    prediction = {
        "stage": stage,
        "peak_bytes": peak["peak_bytes"] if peak else row["total_bytes"],
        "gpu_memory_bytes": plan["inputs"]["gpu_memory_bytes"],
        "cuda_overhead_bytes": plan["inputs"]["cuda_overhead_bytes"],
        "fits": row["fits"],
        "verdict": row["verdict"],
        "terms": {k: v for k, v in peak.items() if isinstance(v, int)} if peak else None,
    }
    return prediction, ((band["under"], band["over"]) if band else None)


def observed_bytes(obs):
    return round(obs["value"] * obs["unit_bytes"])


def compared_bytes(obs, prediction):
    """What of the prediction a measured figure is compared with."""
    if obs["figure"] in ALLOCATOR_FIGURES:
        return prediction["peak_bytes"] - prediction["cuda_overhead_bytes"]
    return prediction["peak_bytes"]


def ratio(case):
    obs, pred = case["observation"], case["prediction"]
    if obs["kind"] != "measured":
        return None
    return compared_bytes(obs, pred) / observed_bytes(obs)


def classify(case):
    """The verdict class the numbers give. "tight" agrees with either outcome: it says the run
    is within the planner's measured error of the card."""
    kind, verdict = case["observation"]["kind"], case["prediction"]["verdict"]
    if kind == "oom":
        return "same verdict" if verdict in ("does_not_fit", "tight") else "off"
    if kind == "ran":
        return "same verdict" if verdict in ("fits", "tight") else "off"
    return "within 15%" if abs(ratio(case) - 1) <= TOLERANCE else "off"


def tight_band(cases):
    """The tight band the measured cases give, each side with the case that sets it:
    {"under": (fraction, id, ratio), "over": (...)}, `under` from the largest 1 / ratio - 1 among
    the cases "within 15%" predicted below their figure, `over` from the largest ratio - 1 among
    those predicted above it, each rounded up to the next whole percent; a side no case sets is
    (0.0, None, None). None when no such case has a prediction."""
    sides = {"under": None, "over": None}
    for case in cases:
        obs, verdict = case.get("observation") or {}, case.get("verdict") or {}
        if obs.get("kind") != "measured" or verdict.get("class") != "within 15%":
            continue
        if not (case.get("prediction") or {}).get("peak_bytes") or not obs.get("value"):
            continue
        r = ratio(case)
        side, error = ("over", r - 1) if r >= 1 else ("under", 1 / r - 1)
        if sides[side] is None or error > sides[side][0]:
            sides[side] = (error, case["id"], r)
    if sides["under"] is None and sides["over"] is None:
        return None
    # Rounded to a millionth of a percent first, so that an error of exactly 8 % is 0.08.
    return {side: (math.ceil(round(worst[0] * 100, 6)) / 100, worst[1], worst[2]) if worst
            else (0.0, None, None) for side, worst in sides.items()}


def verdict_problem(case):
    """None, or why the stored verdict is not the one the stored prediction gives."""
    stored, want = case["verdict"]["class"], classify(case)
    reason = case["verdict"].get("reason", "")
    r = ratio(case)
    at = f" (ratio {r:.3f})" if r is not None else ""
    if stored != want:
        return f"verdict stored as {stored!r}, the numbers give {want!r}{at}"
    if want == "off" and not reason.strip():
        return f"it is off{at} and has no reason: write why in its verdict.reason"
    if want != "off" and reason:
        return f"it is {want!r}{at} yet carries a reason for being off"
    return None


def prediction_difference(stored, actual):
    """A short sentence naming what differs, or None."""
    if stored == actual:
        return None
    if stored.get("peak_bytes") != actual["peak_bytes"]:
        return (f"peak {stored.get('peak_bytes')} B stored, the binary gives "
                f"{actual['peak_bytes']} B ({gb(actual['peak_bytes'])})")
    keys = [k for k in actual if stored.get(k) != actual[k]]
    keys += [k for k in stored if k not in actual]
    if "terms" in keys and stored.get("terms") and actual["terms"]:
        terms = sorted(set(stored["terms"]) | set(actual["terms"]))
        keys = [k for k in keys if k != "terms"] + [
            "terms." + t for t in terms if stored["terms"].get(t) != actual["terms"].get(t)]
    return "stored prediction differs in " + ", ".join(keys)


# The table docs/validation.md shows, generated from cases.json alone.

def cell(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def observed_text(obs):
    if obs["kind"] == "oom":
        return "out of memory"
    if obs["kind"] == "ran":
        return "ran"
    value = obs["value"]
    value = int(value) if float(value).is_integer() else value
    shown = f"{value} {obs['unit']}"
    exact = observed_bytes(obs)
    unit_is = {10**9: "GB", 2**30: "GiB", 2**20: "MiB"}.get(obs["unit_bytes"])
    if unit_is and unit_is != obs["unit"]:
        shown += f" (read as {unit_is})"
    figure = "figure not stated" if obs["figure"] == "not stated" else obs["figure"]
    return f"{shown} = {gb(exact)}, {figure}"


def prediction_text(case):
    p = case["prediction"]
    sign = "<=" if p["fits"] else ">"
    text = (f"{STAGE_NAMES[p['stage']]}: {gb(p['peak_bytes'])} {sign} {gb(p['gpu_memory_bytes'])}")
    obs = case["observation"]
    if obs["kind"] == "measured" and obs["figure"] in ALLOCATOR_FIGURES:
        text += f"; less CUDA {gb(p['cuda_overhead_bytes'])}: {gb(compared_bytes(obs, p))}"
    return text


def verdict_text(case):
    r = ratio(case)
    cls = case["verdict"]["class"]
    text = cls if r is None else f"{cls} ({r:.2f})"
    if cls == "off":
        text += ": " + case["verdict"]["reason"]
    return text


def command_text(argv):
    def quote(a):
        return a if re.fullmatch(r"[A-Za-z0-9_.,/:=+-]+", a) else "'" + a + "'"
    return "`zerodp plan " + " ".join(quote(a) for a in argv) + "`"


def terms_row(n, case):
    t = case["prediction"]["terms"]
    if not t:
        return f"| {n} |" + " |" * 12 + f" {gb(case['prediction']['peak_bytes'])} |"

    def v(*keys):
        total = sum(t.get(k, 0) for k in keys)
        return "-" if total == 0 else size(total)
    return (f"| {n} | {v('model_state_bytes')} | {v('activation_bytes')} | "
            f"{v('reduce_buffer_bytes')} | {v('gathered_param_bytes')} | {v('layer_grad_bytes')} | "
            f"{v('persistent_param_bytes', 'hpz_secondary_bytes')} | {v('step_fp32_grad_bytes')} | "
            f"{v('step_flat_grad_bytes')} | {v('optimizer_temp_bytes')} | "
            f"{v('deferred_grad_bytes')} | {v('cuda_overhead_bytes')} | {v(*(k for k in t if k not in TERMS))} | "
            f"{gb(t['peak_bytes'])} |")


def generate_table(cases):
    lines = [BEGIN, "",
             "| # | case | configuration | observed | zerodp's command | zerodp's prediction "
             "(stage: peak per GPU vs GPU memory) | zerodp's verdict | verdict (ratio) |",
             "|---|---|---|---|---|---|---|---|"]
    for n, case in enumerate(cases, 1):
        lines.append(f"| {n} | [{case['id']}]({case['source']}) | {cell(case['configuration'])} | "
                     f"{cell(observed_text(case['observation']))} | {cell(command_text(case['argv']))} | "
                     f"{cell(prediction_text(case))} | "
                     f"{GPU_VERDICTS[case['prediction']['verdict']]} | {cell(verdict_text(case))} |")
    lines += ["", "The terms of each peak (`--json`, `stages[].peak`; GB = 10^9 bytes, MB = 10^6, "
              "kB = 10^3; - is none). They are not all held at once: peak = model state − grads "
              "made in bwd + CUDA + persistent + hpZ + max(activations + reduce bufs + gathered + "
              "layer grad, grads made in bwd + step fp32 grads + max(step grad copy, optimizer "
              "temps)), stage 3's reduction buffer held throughout (docs/planner.md).", "",
              "| # | model state | activations | reduce bufs | gathered | layer grad | persistent + hpZ "
              "| step fp32 grads | step grad copy | optimizer temps | grads made in bwd | CUDA "
              "| other | peak |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for n, case in enumerate(cases, 1):
        lines.append(terms_row(n, case))
    n_same = sum(c["verdict"]["class"] == "same verdict" for c in cases)
    n_within = sum(c["verdict"]["class"] == "within 15%" for c in cases)
    n_off = sum(c["verdict"]["class"] == "off" for c in cases)
    n_tight = sum(c["prediction"]["verdict"] == "tight" for c in cases)
    band = tight_band(cases)
    lines += ["", f"{len(cases)} cases: {n_same} same verdict, {n_within} within 15%, {n_off} off; "
              f"zerodp calls {n_tight} of them tight."]
    if band:
        under, over = band["under"], band["over"]
        lines += ["", f"The tight band these cases give, each side rounded up to the next whole "
                  f"percent: under = {under[0]:.2f} (the largest under-prediction among the cases "
                  f"within 15%: {under[1]}, {under[2]:.3f}), over = {over[0]:.2f} (the largest "
                  f"over-prediction: {over[1]}, {over[2]:.3f})."]
    lines += ["", END]
    return "\n".join(lines)


def doc_region(text):
    """(start, end) of the generated region, markers included, or None."""
    start = text.find(BEGIN)
    end = text.find(END, start + 1) if start >= 0 else -1
    if start < 0 or end < 0 or text.count(BEGIN) != 1 or text.count(END) != 1:
        return None
    return start, end + len(END)


def write_json(path, data):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2, ensure_ascii=False)
        f.write("\n")
    os.replace(tmp, path)


def main():
    args = [a for a in sys.argv[1:] if a != "--update"]
    update = len(args) != len(sys.argv[1:])
    if len(args) != 2:
        print(__doc__.strip().split("\n")[-1])
        return 2
    zerodp, repo = os.path.abspath(args[0]), os.path.abspath(args[1])
    cases_path, doc_path = os.path.join(repo, CASES), os.path.join(repo, DOC)
    with open(cases_path, encoding="utf-8") as f:
        data = json.load(f)
    cases = data["cases"]
    failures, notes, seen = [], [], set()
    printed_bands = {}  # the tight band each plan printed: (under, over) -> the first case

    for case in cases:
        cid = case.get("id", "?")
        try:
            validate(case, seen, repo, update)
            actual, band = run_plan(zerodp, repo, case["argv"])
        except CaseError as e:
            failures.append(f"{cid}: {e}")
            continue
        if band is not None:
            printed_bands.setdefault(band, cid)
        if update:
            before = case["prediction"].get("peak_bytes")
            case["prediction"] = actual
            cls = classify(case)
            if cls != case["verdict"]["class"]:
                notes.append(f"{cid}: verdict {case['verdict']['class']!r} -> {cls!r}")
            if cls == "off" and case["verdict"]["class"] == "off":
                case["verdict"] = {"class": cls, "reason": case["verdict"].get("reason", "")}
            else:
                case["verdict"] = {"class": cls, "reason": ""}
            if before != actual["peak_bytes"]:
                notes.append(f"{cid}: peak {before} B -> {actual['peak_bytes']} B "
                             f"({gb(actual['peak_bytes'])})")
            problem = verdict_problem(case)
            if problem:
                failures.append(f"{cid}: {problem}")
            continue
        difference = prediction_difference(case["prediction"], actual)
        if difference:
            failures.append(f"{cid}: {difference} (check.py --update rewrites it)")
            continue
        problem = verdict_problem(case)
        if problem:
            failures.append(f"{cid}: {problem}")

    if update:
        write_json(cases_path, data)

    # The planner's tight band must be the one its measured cases give.
    want = tight_band(cases)
    if want is None:
        failures.append(f"{CASES}: no measured case within 15% to give the tight band")
    elif not printed_bands:
        failures.append("no plan printed tight_band: the planner's verdict has no band")
    else:
        for printed, cid in printed_bands.items():
            for side, fraction in zip(("under", "over"), printed):
                if abs(fraction - want[side][0]) > 1e-9:
                    failures.append(
                        f"tight_band.{side}: zerodp plan prints {fraction} (first in {cid}), "
                        f"{CASES} gives {want[side][0]:.2f} (among the cases within 15%: "
                        f"{want[side][1]}, ratio {want[side][2]}, rounded up to the next whole "
                        f"percent)")

    with open(doc_path, encoding="utf-8") as f:
        doc = f.read()
    region = doc_region(doc)
    if region is None:
        failures.append(f"{DOC}: no single pair of markers {BEGIN!r} ... {END!r}")
    else:
        try:
            table = generate_table(cases)
        except (KeyError, TypeError, IndexError) as e:
            table = None
            failures.append(f"{DOC}: the table cannot be made from {CASES} ({e!r})")
        if table is not None:
            current = doc[region[0]:region[1]]
            if update:
                if current != table:
                    with open(doc_path + ".tmp", "w", encoding="utf-8") as f:
                        f.write(doc[:region[0]] + table + doc[region[1]:])
                    os.replace(doc_path + ".tmp", doc_path)
                    notes.append(f"{DOC}: table rewritten")
            elif current != table:
                failures.append(f"{DOC}: the table between the markers is not what {CASES} "
                                f"generates (check.py --update rewrites it)")

    for n in notes:
        print("updated " + n)
    for f in failures:
        print("FAIL " + f)
    verb = "updated" if update else "checked"
    print(f"{len(cases)} cases {verb}; {len(failures)} fail")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
