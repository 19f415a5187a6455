#!/usr/bin/env python3
"""The docs' planner examples are the program's output.

Every fenced block of README.md and docs/*.md that opens with `$ zerodp plan ...`,
`$ zerodp plot ...` or `$ zerodp train ... --dry-run` is run (a block that opens with a script
is that script's output, not checked here), and what follows each command in the block must be
what the command prints (stderr, then stdout), line by line with trailing spaces ignored. A line
that starts with "..." or "…" stands for any number of lines left out; "..." or "…" inside a
line stands for the part of it left out. A command shown without output, and README.md's command
block, must run as written (exit 0).
A ```json block whose paragraph names a file `examples/NAME.json` must hold that file's JSON.

Commands run in a fresh directory where `examples/` is the repository's, so files they write
(`plot --out`) land there and relative example paths resolve as from the repository's root.

Usage: doc_examples.py path/to/zerodp path/to/repository
"""
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

ELLIPSIS = re.compile(r"\\\.\\\.\\\.|…")


def is_gap(expected_line):
    """A line that stands for any number of lines left out."""
    return expected_line.lstrip().startswith(("...", "…"))


def line_pattern(expected_line):
    """The printed lines an expected line accepts: "..." inside it stands for any text."""
    return re.compile(ELLIPSIS.sub(".*", re.escape(expected_line.rstrip())) + r"\Z")


def fenced_blocks(text):
    """(line number of the fence, language, lines, the paragraph before it) of each block."""
    blocks, lines = [], text.split("\n")
    i = 0
    while i < len(lines):
        if lines[i].startswith("```"):
            lang, start, body = lines[i][3:].strip(), i + 1, []
            i += 1
            while i < len(lines) and not lines[i].startswith("```"):
                body.append(lines[i])
                i += 1
            before, j = [], start - 2
            while j >= 0 and not lines[j].strip():
                j -= 1
            while j >= 0 and lines[j].strip():
                before.insert(0, lines[j])
                j -= 1
            blocks.append((start, lang, body, "\n".join(before)))
        i += 1
    return blocks


def is_checked(command):
    words = command.split()
    if len(words) < 2 or words[0] != "zerodp":
        return False
    return words[1] in ("plan", "plot") or (words[1] == "train" and "--dry-run" in words)


def matches(expected, actual):
    """Expected lines (with "..." wildcards) against actual lines, trailing spaces ignored."""
    expected = [e.rstrip() for e in expected]
    while expected and not expected[-1]:
        expected.pop()
    actual = [a.rstrip() for a in actual]
    while actual and not actual[-1]:
        actual.pop()
    patterns = [None if is_gap(e) else line_pattern(e) for e in expected]  # None: a gap

    # Lines in order; a wildcard may take none or many. Memoised over (pattern, line) positions.
    seen = {}

    def match(p, a):
        if (p, a) in seen:
            return seen[(p, a)]
        if p == len(patterns):
            ok = a == len(actual)
        elif patterns[p] is None:
            ok = match(p + 1, a) or (a < len(actual) and match(p, a + 1))
        else:
            ok = a < len(actual) and bool(patterns[p].match(actual[a])) and match(p + 1, a + 1)
        seen[(p, a)] = ok
        return ok

    return match(0, 0)


def run(zerodp, command, cwd, env):
    """The command as a shell runs it (a doc may pipe it to grep), with this zerodp."""
    line = shlex.quote(zerodp) + command[len("zerodp"):]
    result = subprocess.run(["bash", "-c", line], cwd=cwd, env=env, capture_output=True,
                            text=True, timeout=120)
    return result.returncode, (result.stderr + result.stdout).split("\n")


def first_difference(expected, actual):
    for k, e in enumerate(expected):
        if k >= len(actual):
            return f"    expected: {e}\n    printed:  (nothing more)"
        if is_gap(e):
            return "    (after a left-out part; the printed output follows)\n" + "\n".join(
                "    | " + a for a in actual[:40])
        if not line_pattern(e).match(actual[k].rstrip()):
            return f"    expected: {e}\n    printed:  {actual[k]}"
    return "    printed more lines than shown:\n" + "\n".join(
        "    | " + a for a in actual[len(expected):len(expected) + 10])


def main():
    sys.setrecursionlimit(100000)  # matches() recurses once per line of a block
    zerodp, repo = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    docs = ["README.md"] + sorted(
        os.path.join("docs", f) for f in os.listdir(os.path.join(repo, "docs")) if f.endswith(".md"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("ZERODP_")}
    failures, commands, configs = [], 0, 0
    with tempfile.TemporaryDirectory() as work:
        os.symlink(os.path.join(repo, "examples"), os.path.join(work, "examples"))
        for doc in docs:
            text = open(os.path.join(repo, doc), encoding="utf-8").read()
            for line_no, lang, body, before in fenced_blocks(text):
                where = f"{doc}:{line_no}"
                named = re.findall(r"`(examples/[\w./-]+\.json)`", before)
                if lang == "json" and named:
                    configs += 1
                    with open(os.path.join(repo, named[-1]), encoding="utf-8") as f:
                        if json.load(f) != json.loads("\n".join(body)):
                            failures.append(f"{where}: the block is not {named[-1]}")
                    continue
                if doc == "README.md" and lang == "sh":
                    for command in " ".join(body).replace("\\ ", " ").split("zerodp ")[1:]:
                        command = "zerodp " + command
                        if not is_checked(command):
                            continue
                        commands += 1
                        status, out = run(zerodp, command.split(" #")[0], work, env)
                        if status != 0:
                            failures.append(f"{where}: `{command.split(' #')[0].strip()}` "
                                            f"exited {status}: {out[0]}")
                    continue
                opening = next((b for b in body if b.strip()), "")
                if not (opening.startswith("$ ") and is_checked(opening[2:])):
                    continue
                k = 0
                while k < len(body):
                    if not body[k].startswith("$ ") or not is_checked(body[k][2:]):
                        k += 1
                        continue
                    command, expected = body[k][2:], []
                    k += 1
                    while k < len(body) and not body[k].startswith("$ "):
                        expected.append(body[k])
                        k += 1
                    commands += 1
                    status, actual = run(zerodp, command, work, env)
                    if not any(e.strip() for e in expected):  # shown without its output
                        if status != 0:
                            failures.append(f"{where}: `{command}` exited {status}: {actual[0]}")
                    elif not matches(expected, actual):
                        failures.append(f"{where}: `{command}` prints otherwise than shown:\n" +
                                        first_difference(expected, actual))
    for f in failures:
        print("FAIL " + f)
    print(f"{commands} commands and {configs} example configs checked; {len(failures)} differ")
    return 1 if failures or commands == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
