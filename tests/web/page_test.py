#!/usr/bin/env python3
"""The planner's web page (docs/web.md) in headless Chromium, against the native executable.

Usage: page_test.py ZERODP SITE MODE
  ZERODP  the native build's zerodp
  SITE    where scripts/build-web.sh writes the page (built here first, incrementally)
  MODE    examples: the seed's worked examples and error cases, read from the page's DOM,
                    from disk, over HTTP and through `plan --link`
          property: a few hundred random inputs (fixed seed); the page's JSON equals
                    `zerodp plan ... --json` byte for byte, and so do its table and errors

Exit 77 with one line when emscripten or Chromium is missing (ctest counts it skipped).
"""
import html
import http.server
import json
import os
import random
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import urllib.parse

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
failures = []


def check(condition, what):
    if not condition:
        failures.append(what)
        print("FAIL:", what)
    return condition


def chromium_binary():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def build_site(site):
    r = subprocess.run([os.path.join(ROOT, "scripts", "build-web.sh"), site],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode == 77:
        print("skipped:", r.stdout.strip().splitlines()[-1])
        sys.exit(77)
    if r.returncode != 0:
        print(r.stdout)
        print("FAIL: scripts/build-web.sh exited", r.returncode)
        sys.exit(1)


def dump_dom(browser, url, profile):
    """The page's DOM once its scripts have run (virtual time lets the wasm start). A profile
    of its own each time: a Chromium still closing would otherwise take the call over. A
    browser that exits before the page says it is ready (data-ready) is tried again, twice."""
    for attempt in range(3):
        r = subprocess.run(
            [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
             "--no-first-run",
             "--user-data-dir=" + tempfile.mkdtemp(dir=profile), "--virtual-time-budget=30000",
             "--dump-dom", url],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
        if 'data-ready="true"' in r.stdout:
            return r.stdout
        print(f"note: attempt {attempt + 1}: {url[:120]} was not ready (exit {r.returncode}); "
              f"Chromium said: {r.stderr.strip().splitlines()[-3:]}")
    return r.stdout


SERVERS = []


def serve(folder):
    """Serves folder over HTTP on a free local port, as any static server would; its base URL."""
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *a, **k):
            super().__init__(*a, directory=folder, **k)

        def log_message(self, *a):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    SERVERS.append(server)
    return f"http://127.0.0.1:{server.server_address[1]}/"


def stop_servers():
    while SERVERS:
        SERVERS.pop().shutdown()


def keep_screenshots(site):
    """Copies the screenshots taken into SITE-screenshots/, beside those of the other web
    tests (each test writes its own file names)."""
    kept = site.rstrip("/") + "-screenshots"
    for shots in SCREENSHOTS:
        os.makedirs(kept, exist_ok=True)
        for name in sorted(os.listdir(shots)):
            shutil.copy(os.path.join(shots, name), kept)
            print(f"screenshot: {os.path.join(kept, name)}")


def element_text(dom, element_id):
    """The text of the element with this id (its own text only: these hold no markup)."""
    m = re.search(r'<(\w+)[^>]*\bid="%s"[^>]*>(.*?)</\1>' % re.escape(element_id), dom, re.S)
    return html.unescape(m.group(2)) if m else None


def native(zerodp, args, cwd=None):
    r = subprocess.run([zerodp] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       cwd=cwd)
    return {"status": r.returncode, "stdout": r.stdout.decode("utf-8", "replace"),
            "stderr": r.stderr.decode("utf-8", "replace")}


def query_of(pairs):
    return urllib.parse.urlencode(pairs, quote_via=urllib.parse.quote)


def pairs_of(argv):
    """(key, value) pairs of a plan argv, argv[0] being "plan"; a flag's value is "1"."""
    pairs, i = [], 1
    while i < len(argv):
        key = argv[i][2:]
        if key in FLAGS:
            pairs.append((key, "1"))
            i += 1
        else:
            pairs.append((key, argv[i + 1] if i + 1 < len(argv) else None))
            i += 2
    return pairs


def argv_of(pairs, flags):
    argv = ["plan"]
    for key, value in pairs:
        argv += ["--" + key] if key in flags else ["--" + key, value]
    return argv


# The seed's worked examples (docs/planner.md), as query pairs.
EXAMPLES = [
    ("Example 1", [("params", "1e9"), ("gpus", "8")]),
    ("Example 3", [("params", "1e9")]),
    ("Example 4", [("params", "50M"), ("gpus", "8"), ("activations", "12GB")]),
    ("Example 5", [("params", "175B"), ("gpu-memory", "80GB"), ("activations", "20GB")]),
    ("Example 5 at 47", [("params", "175B"), ("gpus", "47"), ("gpu-memory", "80GB"),
                         ("activations", "20GB")]),
    ("Example 5 at 46", [("params", "175B"), ("gpus", "46"), ("gpu-memory", "80GB"),
                         ("activations", "20GB")]),
    ("Example 6", [("params", "175B"), ("gpus", "64")]),
    ("Example 6 both directions", [("params", "175B"), ("gpus", "64"),
                                   ("count-both-directions", "1")]),
    ("Example 7", [("comm-bytes", "2.06TB"), ("bandwidth", "300GB/s"), ("compute-time", "10s")]),
    ("Example 7 overlap", [("comm-bytes", "2.06TB"), ("bandwidth", "300GB/s"),
                           ("compute-time", "10s"), ("overlap", "0.6")]),
    ("Example 8", [("params", "1e10"), ("gpus", "4"), ("gpu-memory", "24GB"),
                   ("activations", "6GB")]),
    ("Self-test N = 1", [("params", "1e9"), ("gpus", "1")]),
]
# The numbers each example of the seed states, as the CLI prints them.
SEED_NUMBERS = {
    "Example 1": ["16.00 GB", "5.50 GB", "3.75 GB", "2.00 GB"],
    "Example 3": ["16.00 GB", "4.00 GB", "2.00 GB", "0.00 GB"],
    "Example 4": ["0.80 GB", "12.80 GB", "0.10 GB", "12.10 GB", "5.5 %"],
    "Example 5": ["47"],
    "Example 5 at 47": ["59.57 GB", "yes", "47"],
    "Example 5 at 46": ["60.87 GB", "No stage fits at N = 46"],
    "Example 6": ["0.34 TB", "1.03 TB", "3.00x", "43.75 GB"],
    "Example 6 both directions": ["2.07 TB"],
    "Example 7": ["6.87 s", "59.29 %"],
    "Example 7 overlap": ["2.75 s", "78.45 %"],
    "Example 8": ["160.00 GB", "70.00 GB", "55.00 GB", "40.00 GB", "0.00 GB no 9",
                  "No stage fits at N = 4"],
    "Self-test N = 1": ["16.00 GB"],
}
FLAGS = {"count-both-directions", "binary"}
GPT2_CONFIG = json.dumps({"model_type": "gpt2", "vocab_size": 50257, "n_positions": 1024,
                          "n_embd": 768, "n_layer": 12, "n_head": 12})


def check_page(browser, profile, zerodp, url, name, pairs, workdir=None):
    """The page at url shows what `zerodp plan` prints for pairs: table or error."""
    dom = dump_dom(browser, url, profile)
    if not check('data-ready="true"' in dom, f"{name}: the page did not finish ({url})"):
        return None
    expected = native(zerodp, argv_of(pairs, FLAGS), cwd=workdir)
    if expected["status"] == 0:
        check(element_text(dom, "plan-text") == expected["stdout"],
              f"{name}: the page's table is not the CLI's:\n{element_text(dom, 'plan-text')}"
              f"\n--- CLI ---\n{expected['stdout']}")
        check(element_text(dom, "message") == "", f"{name}: an error shows on a valid plan")
    else:
        message = expected["stderr"].strip()
        flag = re.match(r"zerodp: (--[a-z0-9-]+)", message).group(1)
        check(element_text(dom, "error-" + flag[2:]) == message,
              f"{name}: {flag}'s field does not show the CLI's message {message!r}: "
              f"{element_text(dom, 'error-' + flag[2:])!r}")
        check('id="field-%s" aria-invalid="true"' % flag[2:] in dom or
              re.search(r'id="field-%s"[^>]*aria-invalid="true"' % flag[2:], dom),
              f"{name}: {flag}'s field is not marked invalid")
        check(element_text(dom, "plan-text") == "", f"{name}: a table shows beside an error")
    # Copy-as-command gives the same flags (in the planner's option order).
    if "model-config" not in dict(pairs):
        words = shlex.split(element_text(dom, "command"))
        check(words[:2] == ["zerodp", "plan"] and
              sorted(pairs_of(words[1:])) == sorted(pairs),
              f"{name}: copy-as-command shows {element_text(dom, 'command')!r} for {pairs}")
    return dom


def examples(zerodp, site, browser, profile, tmp):
    index = "file://" + os.path.join(site, "index.html")
    for name, pairs in EXAMPLES:
        dom = check_page(browser, profile, zerodp, index + "?" + query_of(pairs), name, pairs)
        if dom is None:
            continue
        # The numbers as the page renders them (its tables), not only in the terminal text.
        shown = dom[dom.find('id="verdict"'):dom.find('id="plan-terminal"')]
        shown = html.unescape(re.sub(r"<[^>]+>", " ", shown))
        shown = re.sub(r"\s+", " ", shown) + " " + element_text(dom, "headline")
        for number in SEED_NUMBERS[name]:
            check(number in shown, f"{name}: {number!r} is not on the page")
        has_params = any(k == "params" for k, _ in pairs)
        check(("<svg" in dom) == has_params,
              f"{name}: the figure {'is missing' if has_params else 'shows without params'}")
        answer = json.loads(native(zerodp, argv_of(pairs, FLAGS) + ["--json"])["stdout"])["answer"]
        check(element_text(dom, "headline") == answer["headline"],
              f"{name}: the headline {element_text(dom, 'headline')!r} is not the CLI's "
              f"answer {answer['headline']!r}")

    # The stage a user asks about (--stage) heads the page with the CLI's sentence on it: the
    # question "will Llama-3-8B fit on 8 x 40 GB with ZeRO-2?" and its answer with the reason.
    question = [("model", "llama-3-8b"), ("gpus", "8"), ("gpu-memory", "40GB"),
                ("seq-len", "4096"), ("micro-batch", "1"), ("checkpointing", "full"),
                ("attention", "flash"), ("stage", "2")]
    dom = dump_dom(browser, index + "?" + query_of(question), profile)
    asked = json.loads(native(zerodp, argv_of(question, FLAGS) + ["--json"])["stdout"])["answer"]
    check(asked["headline"].startswith("ZeRO-2 is tight at N = 8") and
          element_text(dom, "headline") == asked["headline"],
          f"the headline {element_text(dom, 'headline')!r} is not the CLI's answer on --stage 2 "
          f"{asked['headline']!r}")
    check(element_text(dom, "cheapest") == asked["cheapest"] != "",
          f"the line under it {element_text(dom, 'cheapest')!r} is not the CLI's "
          f"{asked['cheapest']!r}")

    # The time per stage beside its memory: the stages' table carries each stage's predicted
    # tokens a second a GPU, the CLI's own figures.
    timed = [("model", "llama-3-8b"), ("gpus", "16"), ("gpu", "h100-80gb"), ("seq-len", "4096"),
             ("micro-batch", "1"), ("tokens", "1B")]
    dom = dump_dom(browser, index + "?" + query_of(timed), profile)
    plan = json.loads(native(zerodp, argv_of(timed, FLAGS) + ["--json"])["stdout"])
    table = html.unescape(dom[dom.find('id="stage-table"'):])
    table = table[:table.find("</table>")]
    check("tok/s/GPU" in table and "peak" in table,
          f"the stages' table has no tokens a second beside the peak: {table[:400]!r}")
    for stage in plan["stages"]:
        figure = f"{round(stage['tokens_per_second_per_gpu']):,}"
        check(f">{figure}<" in table,
              f"{stage['name']}: {figure} tokens/s/GPU (the CLI's) not in the stages' table")

    # Example 1's figure is `zerodp plot`'s: its title, legend and the floors' labels.
    dom = dump_dom(browser, index + "?params=1e9&gpus=8", profile)

    # Every input of `zerodp plan`, as its --help lists them, has a labelled field.
    # Each at the start of an option's line, not where a wrapped description names one.
    listed = re.findall(r"^ {2}(?:-\w, ?)?(--[a-z0-9-]+)",
                        native(zerodp, ["plan", "--help"])["stdout"], re.M)
    inputs = [f for f in listed if f not in ("--help", "--json", "--link", "--link-base",
                                             "--list-models", "--list-gpus", "--list-links")]
    check(len(inputs) >= 30, f"plan --help lists only {inputs}")
    for flag in inputs:
        check(f'id="field-{flag[2:]}"' in dom and f'for="field-{flag[2:]}"' in dom,
              f"{flag} has no labelled field on the page")
    figure = html.unescape(dom[dom.find('id="figure"'):])
    svg = os.path.join(tmp, "figure.svg")
    native(zerodp, ["plot", "--params", "1e9", "--out", svg])
    with open(svg, encoding="utf-8") as f:
        texts = re.findall(r"<text[^>]*>([^<]+)</text>", f.read())
    check(len(texts) > 10 and all(html.unescape(t) in figure for t in texts),
          "Example 1: the figure's texts are not zerodp plot's")

    # Errors: the CLI's one line beside the field it names, for text, choice and file fields.
    for name, pairs in [
        ("bad --gpus", [("params", "1e9"), ("gpus", "eight")]),
        ("bad --gpu-memory", [("params", "1e9"), ("gpus", "8"), ("gpu-memory", "80XB")]),
        ("bad --precision", [("params", "1e9"), ("precision", "fp8")]),
        ("bad --overlap", [("params", "1e9"), ("overlap", "60%")]),
        ("bad --model", [("model", "gpt5")]),
        ("bad --model-config", [("model-config", "{not json")]),
    ]:
        with open(os.path.join(tmp, "config.json"), "w") as f:
            f.write(dict(pairs).get("model-config", ""))
        native_pairs = [(k, "config.json" if k == "model-config" else v) for k, v in pairs]
        dom = dump_dom(browser, index + "?" + query_of(pairs), profile)
        check('data-ready="true"' in dom, f"{name}: the page did not finish")
        expected = native(zerodp, argv_of(native_pairs, FLAGS), cwd=tmp)
        check(expected["status"] == 2, f"{name}: the CLI accepted it")
        message = expected["stderr"].strip()
        flag = re.match(r"zerodp: (--[a-z0-9-]+)", message).group(1)
        check(element_text(dom, "error-" + flag[2:]) == message,
              f"{name}: the page shows {element_text(dom, 'error-' + flag[2:])!r} beside "
              f"{flag}, the CLI {message!r}")

    # Nothing fits: the page shows the verdict and what would fit, as the CLI prints them.
    first_try = [("model", "llama-3-8b"), ("gpus", "8"), ("gpu", "a100-40gb"),
                 ("seq-len", "2048"), ("micro-batch", "1"), ("stage", "2"), ("attention", "eager")]
    dom = check_page(browser, profile, zerodp, index + "?" + query_of(first_try),
                     "nothing fits", first_try)
    if dom is not None:
        check("What would fit with the 11 % margin at N = 8: --checkpointing full"
              in element_text(dom, "plan-text"),
              "nothing fits: the page does not say what would fit")
        check(re.search(r'<p id="headline"[^>]*class="verdict-does-not-fit"', dom) is not None,
              "nothing fits: the headline is not coloured as not fitting")

    # A tight verdict (ZeRO-2's 40.4 GB of the card's 42.3 GB at 3072 tokens: the planner's 11 %
    # of under-prediction would take it past the card) is coloured as such, in the table and in
    # the headline, beside the word "tight".
    tight = [("model", "llama-3-8b"), ("gpus", "8"), ("gpu", "a100-40gb"), ("seq-len", "3072"),
             ("micro-batch", "1"), ("stage", "2"), ("checkpointing", "full"),
             ("attention", "flash")]
    dom = check_page(browser, profile, zerodp, index + "?" + query_of(tight), "tight", tight)
    if dom is not None:
        check('<td class="verdict-tight">tight</td>' in dom, "tight: the table's cell is not marked")
        check('<td class="verdict-fits">yes</td>' in dom, "tight: ZeRO-3's yes is not marked")
        check(re.search(r'<p id="headline"[^>]*class="verdict-tight"', dom) is not None,
              "tight: the headline is not coloured as tight")

    # Hostile addresses: a key given twice is refused as the command line refuses a flag given
    # twice; a config nested 20,000 deep gets the CLI's one line (the page answers, it does
    # not stop); a key of an output flag gets a line of its own instead of a blank page.
    deep = "[" * 20000 + "]" * 20000
    for name, pairs in [
        ("repeated gpus", [("params", "1e9"), ("gpus", "8"), ("gpus", "16")]),
        ("deep config.json", [("model-config", '{"n_layer": ' + deep + "}"), ("gpus", "8")]),
    ]:
        with open(os.path.join(tmp, "config.json"), "w") as f:
            f.write(dict(pairs).get("model-config", ""))
        native_pairs = [(k, "config.json" if k == "model-config" else v) for k, v in pairs]
        dom = dump_dom(browser, index + "?" + query_of(pairs), profile)
        if not check('data-ready="true"' in dom, f"{name}: the page did not finish"):
            continue
        expected = native(zerodp, argv_of(native_pairs, FLAGS), cwd=tmp)
        message = expected["stderr"].strip()
        check(expected["status"] == 2 and message.count("\n") == 0,
              f"{name}: the CLI gave {expected}")
        check(element_text(dom, "message") == message,
              f"{name}: the page shows {element_text(dom, 'message')!r}, the CLI {message!r}")
        check(element_text(dom, "plan-text") == "", f"{name}: a table shows beside an error")
    for key in ("help", "json", "link"):
        dom = dump_dom(browser, index + f"?params=1e9&gpus=8&{key}=1", profile)
        if not check('data-ready="true"' in dom, f"{key}=1: the page did not finish"):
            continue
        message = element_text(dom, "message") or ""
        check(message.startswith(f"zerodp: --{key}: ") and f"remove '{key}'" in message,
              f"{key}=1: the page shows {message!r}")
        check(element_text(dom, "plan-text") == "", f"{key}=1: a table shows beside an error")

    # A pasted config.json: the page's table is the CLI's for the same file.
    with open(os.path.join(tmp, "config.json"), "w") as f:
        f.write(GPT2_CONFIG)
    pairs = [("model-config", GPT2_CONFIG), ("gpus", "8"), ("seq-len", "1024"),
             ("micro-batch", "4")]
    native_pairs = [(k, "config.json" if k == "model-config" else v) for k, v in pairs]
    dom = dump_dom(browser, index + "?" + query_of(pairs), profile)
    expected = native(zerodp, argv_of(native_pairs, FLAGS), cwd=tmp)
    check(expected["status"] == 0 and element_text(dom, "plan-text") == expected["stdout"],
          f"pasted config.json: the page's table is not the CLI's:\n"
          f"{element_text(dom, 'plan-text')}\n--- CLI ---\n{expected['stdout']}{expected['stderr']}")

    # `zerodp plan ... --link` opens the same plan, a config file's text included.
    args = ["--model-config", "config.json", "--gpus", "8", "--gpu-memory", "80GB",
            "--activations", "12GB", "--count-both-directions"]
    link = native(zerodp, ["plan"] + args + ["--link", "--link-base", index], cwd=tmp)
    check(link["status"] == 0 and link["stdout"].startswith(index + "?"),
          f"--link printed {link['stdout']!r} {link['stderr']!r}")
    dom = dump_dom(browser, link["stdout"].strip(), profile)
    check(element_text(dom, "plan-text") == native(zerodp, ["plan"] + args, cwd=tmp)["stdout"],
          "--link: the page it names does not show the same plan")

    # Served over HTTP by any static server, not only from disk.
    served = os.path.join(tmp, "served")
    shutil.copytree(site, served)
    shutil.copy(os.path.join(ROOT, "tests", "web", "typing.html"), served)
    shutil.copy(os.path.join(ROOT, "tests", "web", "layout.html"), served)

    base = serve(served)
    try:
        check_page(browser, profile, zerodp, base + "index.html?params=1e9&gpus=8",
                   "Example 1 over HTTP", EXAMPLES[0][1])
        # Typing updates the plan, the address and the command; a mistake shows at once.
        typing = json.loads(element_text(dump_dom(browser, base + "typing.html", profile),
                                         "results") or "null")
        if check(typing, "typing: the page did not answer"):
            args = ["plan", "--params", "1e9", "--gpus", "16"]
            check(typing["typed"]["text"] == native(zerodp, args)["stdout"],
                  f"typing 16 GPUs: the page shows {typing['typed']['text']!r}")
            check(typing["typed"]["search"] == "?params=1e9&gpus=16",
                  f"typing 16 GPUs: the address is {typing['typed']['search']!r}")
            check(typing["typed"]["command"] == "zerodp " + " ".join(args),
                  f"typing 16 GPUs: the command is {typing['typed']['command']!r}")
            both = native(zerodp, args + ["--count-both-directions"])["stdout"]
            check(typing["ticked"]["text"] == both and
                  "count-both-directions=1" in typing["ticked"]["search"],
                  f"ticking --count-both-directions: {typing['ticked']}")
            wrong = native(zerodp, ["plan", "--params", "1e9", "--gpus", "sixteen",
                                    "--count-both-directions"])["stderr"].strip()
            check(typing["wrong"]["error"] == wrong,
                  f"typing 'sixteen': {typing['wrong']['error']!r}, not {wrong!r}")
            # While the value is wrong, the last valid plan stays, said to be the last valid one.
            check(typing["wrong"]["text"] == both and typing["wrong"]["staleNote"] and
                  typing["wrong"]["bars"] == 1,
                  f"typing 'sixteen': the last valid plan did not stay: {typing['wrong']}")
        layout(browser, profile, base, tmp)
    finally:
        stop_servers()


# The question the page is for, at a laptop's and a phone's width.
LAYOUT_QUERY = ("model=llama-3-8b&gpus=8&gpu=a100-40gb&seq-len=4096&micro-batch=1&"
                "checkpointing=full&attention=flash&stage=2")


def layout(browser, profile, base, tmp):
    """At 1280 and 390 px: the verdict, the bar chart and the stages' table with its peak column
    lie inside the width (nothing scrolls sideways); on the laptop the verdict and the chart
    are in the first screen; on the phone the verdict comes above the fields. Screenshots of
    both are written to the site's folder's sibling *-screenshots/ to be looked at."""
    url = base + "layout.html?q=" + urllib.parse.quote(LAYOUT_QUERY)
    measured = json.loads(element_text(dump_dom(browser, url, profile), "results") or "null")
    if not check(measured, "layout: the page did not answer"):
        return
    for name, width in (("wide", 1280), ("phone", 390)):
        m = measured[name]
        where = f"layout at {width} px"
        check(m["viewport"] == width, f"{where}: the frame's viewport is {m['viewport']}")
        check(m["scrollWidth"] <= width, f"{where}: the page scrolls sideways ({m['scrollWidth']})")
        for part in ("headline", "cheapest", "chart", "table", "peak"):
            b = m[part]
            check(b is not None and b["width"] > 0 and b["left"] >= 0 and b["right"] <= width,
                  f"{where}: the {part} is not inside the width: {b}")
        if m["peak"] and m["table"]:
            check(m["peak"]["right"] <= m["table"]["right"],
                  f"{where}: the peak column is scrolled out of its table: {m['peak']}")
        if name == "wide":
            check(m["headline"]["top"] < 800 and m["chart"]["top"] < 800,
                  f"{where}: the verdict or the chart is below the first screen: {m}")
        else:
            check(m["headline"]["bottom"] <= m["inputs"]["top"],
                  f"{where}: the verdict is not above the fields: {m}")
    # Screenshots, full height, for a person to look at.
    shots = tempfile.mkdtemp(dir=tmp)
    for width, height in ((1280, 2400), (390, 3200)):
        path = os.path.join(shots, f"page-{width}.png")
        subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                        "--user-data-dir=" + tempfile.mkdtemp(dir=profile),
                        "--virtual-time-budget=30000", f"--window-size={width},{height}",
                        f"--screenshot={path}", base + "index.html?" + LAYOUT_QUERY],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
        check(os.path.getsize(path) > 20000 if os.path.exists(path) else False,
              f"no screenshot at {width} px")
    SCREENSHOTS.append(shots)


SCREENSHOTS = []


# Values for the property test: valid forms, then mistakes (after the "|"), so that both
# the plans and the errors are exercised.
VALUES = {
    "params": "1e9 7.5B 175B 50M 1e10 13B 124M 1.5T | 0 -1 abc 1e30",
    "model": "gpt2 llama-3-8b mixtral-8x7b pythia-1b qwen2.5-0.5b | gpt5",
    "gpus": "1 2 8 46 47 64 512 | 0 x 3.5",
    "gpu-memory": "80GB 24GiB 40GB 16GB 1TB 39.39GiB | 0 80XB",
    "gpu": "a100-40gb h100-80gb rtx-4090 t4 mi300x | a100 tpu",
    "activations": "12GB 20GB 6GB 0 | bad 12",
    "round-to": "8 4 | 0 x",
    "compute-time": "10s 250ms 1.5s | 0s x",
    "bandwidth": "300GB/s 25GiB/s 200Mbit/s | x 0GB/s 100Gb/s",
    "overlap": "0.6 60% 1 | 1.5 x",
    "comm-bytes": "2.06TB 1GB | x",
    "comm-convention": "ring seed | x",
    "count-both-directions": "1 |",
    "precision": "fp16 bf16 fp32 | fp8",
    "optimizer": "adam adamw sgd sgd-momentum adamw-8bit adafactor lion adamw_bnb_8bit | adamw_9bit",
    "optimizer-impl": "fused foreach single | apex",
    "bytes-per-param": "2,2,12 4,4,8 | 2,2 0,2,12",
    "layers": "24 32 | x",
    "hidden": "1024 4096 |",
    "heads": "16 32 | 7",
    "seq-len": "1024 2048 |",
    "micro-batch": "1 4 | 0",
    "checkpointing": "none selective full | x",
    "attention": "eager flash | x",
    "offload-optimizer": "none cpu nvme | x",
    "offload-params": "none cpu nvme | x",
    "gpus-per-node": "8 4 | x",
    "estimator": "deepspeed | x",
    "largest-layer": "65M | x",
    "nodes": "1 2 |",
    "binary": "1 |",
    "lora-rank": "8 16 64 | 0 x",
    "lora-targets": "all-linear q_proj,v_proj c_attn | wq",
    "quantize": "nf4 | int4",
    "double-quant": "on off | maybe",
    "lora-dropout": "0.05 0 | 1",
}
# Flags that mean something together: (always, sometimes), and for which models.
GROUPS = [
    (["layers", "hidden", "heads", "seq-len", "micro-batch"], ["checkpointing"], "params"),
    (["seq-len", "micro-batch"], ["checkpointing", "attention"], "model"),
    (["compute-time", "bandwidth"], ["overlap", "comm-convention", "count-both-directions"], ""),
    (["estimator", "largest-layer"], ["gpus-per-node"], "params"),
    (["estimator"], ["gpus-per-node", "nodes"], "model"),
    ([], ["offload-optimizer", "offload-params", "gpus-per-node"], ""),
    ([], ["precision", "optimizer", "optimizer-impl", "binary"], ""),
    (["gpu-memory"], ["activations", "round-to"], ""),
    (["gpu"], ["activations", "round-to"], ""),
    (["lora-rank"], ["lora-targets", "quantize", "lora-dropout"], "model"),
    (["lora-rank", "quantize"], ["double-quant"], "model"),
]
PROPERTY_CASES = 300


def random_cases(rng):
    """Random states: a model, often GPUs, a few groups of flags and now and then one more;
    about one value in twelve a mistake."""
    def value(key):
        valid, invalid = (side.split() for side in VALUES[key].split("|"))
        return rng.choice(invalid) if invalid and rng.random() < 0.08 else rng.choice(valid)

    cases = []
    for _ in range(PROPERTY_CASES):
        chosen = {}
        r = rng.random()
        if r < 0.6:
            chosen["params"], kind = value("params"), "params"
        elif r < 0.8:
            chosen["model"], kind = value("model"), "model"
        elif r < 0.9:
            chosen["model-config"] = rng.choice([GPT2_CONFIG, GPT2_CONFIG[:40]])
            kind = "model"
        else:
            kind = ""
        if rng.random() < 0.75:
            chosen["gpus"] = value("gpus")
        fitting = [g for g in GROUPS if g[2] in ("", kind)]
        for always, sometimes, _ in rng.sample(fitting, rng.randint(0, 3)):
            for key in always + [k for k in sometimes if rng.random() < 0.5]:
                chosen[key] = value(key)
        if rng.random() < 0.15:
            key = rng.choice(sorted(VALUES))
            chosen[key] = value(key)
        cases.append(sorted(chosen.items()))
    return cases


def property_test(zerodp, site, browser, profile, tmp):
    rng = random.Random(15)
    cases = random_cases(rng)
    page = os.path.join(tmp, "page")
    os.makedirs(page)
    for name in ("zerodp.js", "app.js"):
        shutil.copy(os.path.join(site, name), page)
    shutil.copy(os.path.join(ROOT, "tests", "web", "harness.html"), page)
    with open(os.path.join(page, "cases.js"), "w") as f:
        f.write("const CASES = " + json.dumps([query_of(c) for c in cases]) + ";\n")
    dom = dump_dom(browser, "file://" + os.path.join(page, "harness.html"), profile)
    text = element_text(dom, "results")
    if not check(text, "the harness wrote no results"):
        return
    results = json.loads(text)
    check(len(results) == len(cases), f"{len(results)} results for {len(cases)} cases")
    counts = {"ok": 0, "error": 0}
    for pairs, page_result in zip(cases, results):
        # The page turned the query into this argv: the same flags and values, in its order.
        expected_pairs = sorted((k, "config.json" if k == "model-config" else v)
                                for k, v in pairs)
        argv = page_result["argv"]
        got_pairs = pairs_of(argv)
        label = query_of(pairs)[:300]
        if not check(argv[0] == "plan" and sorted(got_pairs) == expected_pairs,
                     f"{label}: the page ran {argv}"):
            continue
        with open(os.path.join(tmp, "config.json"), "w") as f:
            f.write(dict(pairs).get("model-config", ""))
        text_run = native(zerodp, argv, cwd=tmp)
        check(page_result["text"] == text_run,
              f"{label}: the page's table or error differs from the CLI's:\n"
              f"page {page_result['text']}\ncli  {text_run}")
        if text_run["status"] == 0:
            counts["ok"] += 1
            json_run = native(zerodp, argv + ["--json"], cwd=tmp)
            check(page_result["json"] == json_run,
                  f"{label}: the page's JSON differs from plan --json:\n"
                  f"page {page_result['json']}\ncli  {json_run}")
        else:
            counts["error"] += 1
            check(page_result["json"] is None, f"{label}: JSON beside an error")
    print(f"{len(cases)} random inputs compared with the CLI: {counts['ok']} plans, "
          f"{counts['error']} errors")
    # Both paths must really be taken, or the comparison proves little.
    check(counts["ok"] >= len(cases) // 5 and counts["error"] >= len(cases) // 5,
          f"the random inputs are lopsided: {counts}")


def main():
    zerodp, site, mode = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]), sys.argv[3]
    browser = chromium_binary()
    if browser is None:
        print("skipped: chromium not found (apt-get install chromium; scripts/setup.sh)")
        return 77
    build_site(site)
    with tempfile.TemporaryDirectory() as tmp:
        profile = os.path.join(tmp, "profiles")
        os.makedirs(profile)
        {"examples": examples, "property": property_test}[mode](zerodp, site, browser,
                                                                profile, tmp)
        keep_screenshots(site)
    print(f"web {mode}: {len(failures)} failed" if failures else f"web {mode}: passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
