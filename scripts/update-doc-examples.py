#!/usr/bin/env python3
"""Rewrites the docs' planner examples that tests/docs/doc_examples.py finds out of date.

For each fenced block whose command prints otherwise than shown: a block shown whole takes the
command's output whole; a block with left-out parts ("..." lines) keeps its shape, and each
shown line that the output no longer holds becomes the printed line most like it. A block that
still differs after that is named, for a hand edit. Run it after a change of the plan's words,
then read the diff: the check, not this script, is what make test runs.

Usage: scripts/update-doc-examples.py path/to/zerodp path/to/repository
"""
import difflib
import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "docs"))
import doc_examples as check  # noqa: E402


def refreshed(expected, actual):
    """The block's lines for this output: whole, or each stale shown line replaced in place."""
    printed = [a.rstrip() for a in actual]
    while printed and not printed[-1]:
        printed.pop()
    if not any(check.is_gap(e) for e in expected):
        return printed
    out, used = [], set()
    # Lines printed before the block's first shown line are new at the top: shown as printed.
    first = next((e for e in expected if e.strip()), "")
    if first and not check.is_gap(first) and printed and \
            not check.line_pattern(first).match(printed[0]):
        top = next((i for i, a in enumerate(printed) if check.line_pattern(first).match(a)), 0)
        out, used = printed[:top], set(range(top))
    for e in expected:
        if check.is_gap(e) or any(check.line_pattern(e).match(a) for a in printed):
            out.append(e)
            continue
        scored = [(difflib.SequenceMatcher(None, e, a).ratio(), i) for i, a in enumerate(printed)
                  if i not in used]
        score, best = max(scored, default=(0, None))
        if best is not None and score > 0.5:
            used.add(best)
            out.append(printed[best])
        else:
            out.append(e)
    return out


def main():
    zerodp, repo = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    docs = ["README.md"] + sorted(
        os.path.join("docs", f) for f in os.listdir(os.path.join(repo, "docs")) if f.endswith(".md"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("ZERODP_")}
    sys.setrecursionlimit(100000)
    left = 0
    with tempfile.TemporaryDirectory() as work:
        os.symlink(os.path.join(repo, "examples"), os.path.join(work, "examples"))
        for doc in docs:
            path = os.path.join(repo, doc)
            lines = open(path, encoding="utf-8").read().split("\n")
            changed = False
            # Blocks from the last, so that a rewritten block leaves the earlier ones' lines.
            for line_no, lang, body, _ in reversed(check.fenced_blocks("\n".join(lines))):
                opening = next((b for b in body if b.strip()), "")
                if not (opening.startswith("$ ") and check.is_checked(opening[2:])):
                    continue
                new_body, k = [], 0
                while k < len(body):
                    if not body[k].startswith("$ ") or not check.is_checked(body[k][2:]):
                        new_body.append(body[k])
                        k += 1
                        continue
                    command, expected = body[k][2:], []
                    new_body.append(body[k])
                    k += 1
                    while k < len(body) and not body[k].startswith("$ "):
                        expected.append(body[k])
                        k += 1
                    _, actual = check.run(zerodp, command, work, env)
                    if not any(e.strip() for e in expected) or check.matches(expected, actual):
                        new_body.extend(expected)
                        continue
                    # The blank lines between this command's output and the next command.
                    trailing = len(expected) - len("\n".join(expected).rstrip("\n").split("\n"))
                    update = refreshed(expected, actual) + [""] * trailing
                    if not check.matches(update, actual):
                        print(f"{doc}:{line_no}: `{command}`: edit by hand")
                        left += 1
                    new_body.extend(update)
                if new_body != body:
                    lines[line_no:line_no + len(body)] = new_body
                    changed = True
            if changed:
                open(path, "w", encoding="utf-8").write("\n".join(lines))
                print(f"{doc}: updated")
    return 1 if left else 0


if __name__ == "__main__":
    sys.exit(main())
