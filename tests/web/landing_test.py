#!/usr/bin/env python3
"""The planner's web page as a first visit finds it (docs/web.md), in headless Chromium.

Usage: landing_test.py ZERODP SITE MODE
  ZERODP  the native build's zerodp
  SITE    where scripts/build-web.sh writes the page (built here first, incrementally)
  MODE    landing: the page opened with no query, at 1280 and 390 px, shows a plan (the
                   CLI's for the example) and no error, with every field labelled in words and
                   nothing wider than a phone; its presets are catalogue names and re-plan; a
                   link with wrong values shows each one's error beside its field
          words:   every input flag of `zerodp plan --help` has words in web/app.js (no
                   browser needed)

Exit 77 with one line when emscripten or Chromium is missing (ctest counts it skipped).
Screenshots at both widths are written beside SITE, in SITE-screenshots/ (not in git).
"""
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.parse

sys.dont_write_bytecode = True  # no __pycache__ left in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import page_test as page  # noqa: E402  (its browser, build and comparison helpers)

check = page.check

# What the page opens on without a query (EXAMPLE_QUERY in web/app.js): written out here, so
# that a change of the example is a change of this test too.
EXAMPLE = [("model", "llama-3-8b"), ("gpus", "8"), ("gpu", "h100-80gb"), ("seq-len", "4096"),
           ("micro-batch", "1")]
# Two wrong values, neither depending on the other; the CLI names only the first.
TWO_WRONG = [("gpus", "abc"), ("micro-batch", "-1")]
OUTPUT_FLAGS = ("--help", "--json", "--link", "--link-base", "--list-models", "--list-gpus",
                "--list-links")


def plan_inputs(zerodp):
    """The input flags of `zerodp plan`, as its --help lists them: each at the start of an
    option's line, not where a wrapped description names one."""
    listed = re.findall(r"^ {2}(?:-\w, ?)?(--[a-z0-9-]+)",
                        page.native(zerodp, ["plan", "--help"])["stdout"], re.M)
    return [f for f in listed if f not in OUTPUT_FLAGS]


def words_test(zerodp):
    """Every input flag has words in app.js's WORDS table, so a new flag without them fails."""
    with open(os.path.join(page.ROOT, "web", "app.js"), encoding="utf-8") as f:
        source = f.read()
    table = re.search(r"const WORDS = \{(.*?)\n  \};", source, re.S)
    if not check(table, "web/app.js has no WORDS table"):
        return
    words = dict(re.findall(r'"(--[a-z0-9-]+)": "([^"]+)"', table.group(1)))
    inputs = plan_inputs(zerodp)
    check(len(inputs) >= 30, f"plan --help lists only {inputs}")
    for flag in inputs:
        check(flag in words, f"{flag} has no words in web/app.js's WORDS (add a label for it)")


def cli_messages(zerodp, pairs, wrong):
    """The CLI's message for each wrong key of pairs: its value with the other wrong values
    taken out, so that the CLI stops on it."""
    messages = {}
    for key in wrong:
        alone = [(k, v) for k, v in pairs if k == key or k not in wrong]
        messages[key] = page.native(zerodp, page.argv_of(alone, page.FLAGS))["stderr"].strip()
    return messages


def check_shown(zerodp, where, m, width, inputs):
    """A plan with no error, the example's, inside the width, every field labelled in words."""
    check(m["viewport"] == width, f"{where}: the frame's viewport is {m['viewport']}")
    check(m["scrollWidth"] <= width, f"{where}: the page scrolls sideways ({m['scrollWidth']} px)")
    check(m["search"] == "", f"{where}: the address changed to {m['search']!r} before any input")
    expected = page.native(zerodp, page.argv_of(EXAMPLE, page.FLAGS))
    check(expected["status"] == 0 and m["planText"] == expected["stdout"],
          f"{where}: the plan is not the CLI's for {EXAMPLE}:\n{m['planText']}")
    answer = json.loads(page.native(zerodp, page.argv_of(EXAMPLE, page.FLAGS) +
                                    ["--json"])["stdout"])["answer"]
    check(m["headline"] != "" and m["headline"] == answer["headline"] and
          answer["headline"].startswith("Cheapest stage that fits"),
          f"{where}: the verdict {m['headline']!r} is not the CLI's {answer['headline']!r}")
    check(m["stageRows"] == 4, f"{where}: the stages' table has {m['stageRows']} rows")
    check(m["message"] == "" and m["errors"] == [] and not m["failed"],
          f"{where}: an error shows on the example: {m['message']!r} {m['errors']}")
    for key, value in EXAMPLE:
        check(m["fields"].get(key) == value,
              f"{where}: the field of --{key} holds {m['fields'].get(key)!r}, not {value!r}")
    for flag in inputs:
        label = m["labels"].get(flag[2:])
        check(label and label["flag"] == flag and label["words"].strip() != "" and
              not label["words"].startswith("--"),
              f"{where}: {flag}'s field is not labelled in words with the flag beside: {label}")


def check_errors(zerodp, where, m, pairs, wrong, width):
    """Each wrong value of pairs has the CLI's message beside its own field, and no other."""
    expected = cli_messages(zerodp, pairs, wrong)
    shown = {e["key"]: e for e in m["errors"]}
    check(sorted(shown) == sorted(expected),
          f"{where}: errors beside {sorted(shown)}, expected beside {sorted(expected)}")
    for key, message in expected.items():
        e = shown.get(key)
        if not check(e, f"{where}: no error beside --{key}"):
            continue
        check(message.startswith(f"zerodp: --{key}: ") and e["text"] == message,
              f"{where}: beside --{key} {e['text']!r}, the CLI says {message!r}")
        check(e["inItsField"] and e["invalid"] and e["drawn"] and e["right"] <= width,
              f"{where}: --{key}'s error is not shown in its field, marked invalid: {e}")
        check(message in m["message"].split("\n"),
              f"{where}: the summary above the plan lacks {message!r}: {m['message']!r}")
    check(m["planText"] == "" and m["failed"], f"{where}: a plan shows beside the errors")
    check(m["scrollWidth"] <= width, f"{where}: the page scrolls sideways ({m['scrollWidth']} px)")


def landing(zerodp, site, browser, profile, tmp):
    inputs = plan_inputs(zerodp)
    served = os.path.join(tmp, "served")
    shutil.copytree(site, served)
    shutil.copy(os.path.join(page.ROOT, "tests", "web", "landing.html"), served)
    base = page.serve(served)
    url = base + "landing.html?errors=" + urllib.parse.quote(page.query_of(TWO_WRONG))
    measured = json.loads(page.element_text(page.dump_dom(browser, url, profile), "results")
                          or "null")
    if not check(measured, "landing: the page did not answer"):
        return
    check_shown(zerodp, "no query at 1280 px", measured["wide"], 1280, inputs)
    check_shown(zerodp, "no query at 390 px", measured["phone"], 390, inputs)

    # The presets are the catalogues' names, several of each, the example's pressed.
    models = {e["name"] for e in json.loads(
        page.native(zerodp, ["plan", "--list-models", "--json"])["stdout"])}
    gpus = {e["name"] for e in json.loads(
        page.native(zerodp, ["plan", "--list-gpus", "--json"])["stdout"])}
    presets = measured["phone"]["presets"]
    for flag, names in (("--model", models), ("--gpu", gpus)):
        mine = [p for p in presets if p["flag"] == flag]
        check(len(mine) >= 5 and all(p["value"] in names for p in mine),
              f"presets of {flag}: {[p['value'] for p in mine]} (not 5 catalogue names)")
        check([p["value"] for p in mine if p["pressed"] == "true"] == [dict(EXAMPLE)[flag[2:]]],
              f"presets of {flag}: the example's is not the one pressed: {mine}")
    check(all(p["right"] <= 390 for p in presets), f"a preset runs past 390 px: {presets}")
    # Pressing two of them re-plans: the address and the plan are the CLI's for the new flags.
    after = measured["presets"]
    pairs = urllib.parse.parse_qsl(after["search"].lstrip("?"))
    check(("gpu", "a100-40gb") in pairs and ("model", "llama-3-70b") in pairs,
          f"presets: the address is {after['search']!r}")
    expected = page.native(zerodp, page.argv_of(pairs, page.FLAGS))
    check(expected["status"] == 0 and after["planText"] == expected["stdout"],
          f"presets: the plan for {pairs} is not the CLI's:\n{after['planText']}")
    check([p["value"] for p in after["presets"] if p["pressed"] == "true"] ==
          ["llama-3-70b", "a100-40gb"], f"presets: pressed {after['presets']}")

    # A link with two wrong values: two errors, each the CLI's words beside its own field.
    check_errors(zerodp, "two wrong values at 390 px", measured["errors"], TWO_WRONG,
                 ["gpus", "micro-batch"], 390)
    # More of them, from a file: a choice among them; and a value that is right but for a
    # wrong one beside it (--framework fsdp needs the --model that is misspelt) is not marked.
    index = "file://" + os.path.join(site, "index.html")
    for name, pairs, wrong in [
        ("three wrong values", [("model", "llama-3-8b"), ("gpus", "abc"), ("micro-batch", "-1"),
                                ("checkpointing", "most")],
         ["gpus", "micro-batch", "checkpointing"]),
        ("a wrong model under fsdp", [("model", "gpt5"), ("framework", "fsdp"), ("gpus", "8")],
         ["model"]),
        ("a wrong model with its batch", [("model", "gpt5"), ("seq-len", "4096"),
                                          ("micro-batch", "1"), ("gpus", "8")], ["model"]),
    ]:
        dom = page.dump_dom(browser, index + "?" + page.query_of(pairs), profile)
        if not check('data-ready="true"' in dom, f"{name}: the page did not finish"):
            continue
        shown = {k: html.unescape(v) for k, v in
                 re.findall(r'<p id="error-([a-z0-9-]+)" class="error">([^<]+)</p>', dom)}
        expected = cli_messages(zerodp, pairs, wrong)
        check(all(expected[k].startswith(f"zerodp: --{k}") for k in wrong),
              f"{name}: the CLI does not name each of {wrong}: {expected}")
        check(shown == expected, f"{name}: the page shows {shown}, the CLI {expected}")

    # Screenshots with no query, full height, and of the two errors on a phone.
    shots = tempfile.mkdtemp(dir=tmp)
    for name, width, height, query in (("landing-1280", 1280, 2400, ""),
                                       ("landing-390", 390, 3200, ""),
                                       ("two-errors-390", 390, 1600,
                                        "?" + page.query_of(TWO_WRONG))):
        path = os.path.join(shots, name + ".png")
        subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                        "--user-data-dir=" + tempfile.mkdtemp(dir=profile),
                        "--virtual-time-budget=30000", f"--window-size={width},{height}",
                        f"--screenshot={path}", base + "index.html" + query],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
        check(os.path.exists(path) and os.path.getsize(path) > 20000, f"no screenshot {name}")
    page.SCREENSHOTS.append(shots)


def main():
    zerodp, site, mode = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]), sys.argv[3]
    if mode == "words":
        words_test(zerodp)
    else:
        browser = page.chromium_binary()
        if browser is None:
            print("skipped: chromium not found (apt-get install chromium; scripts/setup.sh)")
            return 77
        page.build_site(site)
        with tempfile.TemporaryDirectory() as tmp:
            profile = os.path.join(tmp, "profiles")
            os.makedirs(profile)
            try:
                landing(zerodp, site, browser, profile, tmp)
            finally:
                page.stop_servers()
            page.keep_screenshots(site)
    print(f"web {mode}: {len(page.failures)} failed" if page.failures else f"web {mode}: passed")
    return 1 if page.failures else 0


if __name__ == "__main__":
    sys.exit(main())
