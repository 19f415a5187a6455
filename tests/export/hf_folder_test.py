"""`zerodp export --out DIR`: a Hugging Face GPT-2 folder, checked against what its loaders read.

Run by ctest as: /usr/bin/python3 hf_folder_test.py BUILD/zerodp REPO. Trains a tiny GPT (2
ranks, 20 steps), exports it as a folder, then checks:
  - the folder holds exactly model.safetensors, config.json, generation_config.json,
    tokenizer.json and tokenizer_config.json;
  - PyTorch (scripts/check_export.py: its own safetensors reader and GPT-2's forward in torch)
    gives zerodp eval's mean loss on the same file within 1e-4 relative: the same fp32 model
    summed in another order, over dot products of at most 4C = 256 terms, differs by ~1e-5;
  - tokenizer.json is the byte-level BPE of Hugging Face's tokenizers format whose vocabulary
    maps GPT-2's printable stand-in of each byte (bytes_to_unicode(), written here from GPT-2's
    published encoder.py) to the byte's value, with no merges and ByteLevel pre-tokenizer and
    decoder, so that text encodes to its UTF-8 bytes, zerodp's tokens;
  - config.json and generation_config.json name no token outside the 256 symbols;
  - a second export replaces the files, a folder holding anything else is refused (exit 2)
    and left as it was, and --out NAME.safetensors still writes the weights with config.json.
Prints "N passed, N failed"; exit status 1 on a failure.
"""
import json
import os
import subprocess
import sys
import tempfile

ZERODP, REPO = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
TEXT = "/usr/share/common-licenses/GPL-3"
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


def bytes_to_unicode():
    """GPT-2's map from each byte to a printable character (openai/gpt-2, src/encoder.py)."""
    bs = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) +
          list(range(ord("®"), ord("ÿ") + 1)))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, (chr(c) for c in cs)))


with tempfile.TemporaryDirectory() as work:
    trained = zerodp("train", "--layers", "2", "--heads", "2", "--hidden", "64", "--seq-len", "32",
                     "--steps", "20", "--ranks", "2", "--save-dir", "ck", "--out", "", "--json",
                     cwd=work)
    assert trained.returncode == 0, trained.stderr
    exported = zerodp("export", "--checkpoint", "ck", "--out", "hf", cwd=work)
    check(exported.returncode == 0, f"export --out hf: {exported.stderr}")
    folder = os.path.join(work, "hf")
    expected = {"model.safetensors", "config.json", "generation_config.json", "tokenizer.json",
                "tokenizer_config.json"}
    check(set(os.listdir(folder)) == expected, f"the folder holds {sorted(os.listdir(folder))}")

    # PyTorch against zerodp eval, on the same windows of the same file.
    ev = zerodp("eval", "--checkpoint", "ck", "--data", TEXT, "--json", cwd=work)
    assert ev.returncode == 0, ev.stderr
    loss = json.loads(ev.stdout)["loss"]
    torch_check = subprocess.run(
        ["/usr/bin/python3", os.path.join(REPO, "scripts", "check_export.py"),
         os.path.join(folder, "model.safetensors"), "--data", TEXT, "--loss", repr(loss),
         "--tolerance", "1e-4"], capture_output=True, text=True)
    check(torch_check.returncode == 0,
          f"PyTorch's loss differs from zerodp eval's {loss}: {torch_check.stdout}{torch_check.stderr}")

    with open(os.path.join(folder, "tokenizer.json"), encoding="utf-8") as f:
        tok = json.load(f)
    symbols = bytes_to_unicode()
    model = tok["model"]
    check(model["type"] == "BPE" and model["merges"] == [], f"tokenizer model {model['type']}")
    check(model["vocab"] == {symbols[b]: b for b in range(256)},
          "the vocabulary is not each byte's GPT-2 symbol mapped to the byte's value")
    for part in ("pre_tokenizer", "decoder"):
        check(tok[part]["type"] == "ByteLevel" and tok[part]["add_prefix_space"] is False,
              f"{part}: {tok[part]}")
    check(tok["added_tokens"] == [] and tok["normalizer"] is None, "special tokens or normalizer")
    # Encoding as a byte-level BPE without merges does it: each byte's symbol, then its id.
    text = "This License \u00fc\u2014\n\t\x00"
    ids = [model["vocab"][symbols[b]] for b in text.encode("utf-8")]
    check(ids == list(text.encode("utf-8")), f"'{text!r}' encodes to {ids}")

    with open(os.path.join(folder, "config.json")) as f:
        config = json.load(f)
    with open(os.path.join(folder, "generation_config.json")) as f:
        generation = json.load(f)
    with open(os.path.join(folder, "tokenizer_config.json")) as f:
        tokenizer_config = json.load(f)
    check(config["vocab_size"] == 256 and config["n_positions"] == 32 and
          config["bos_token_id"] is None and config["eos_token_id"] is None, f"config {config}")
    check(generation["max_length"] == 32 and generation["top_k"] == 40 and
          generation["eos_token_id"] is None, f"generation_config {generation}")
    check(tokenizer_config["tokenizer_class"] == "PreTrainedTokenizerFast" and
          tokenizer_config["model_max_length"] == 32, f"tokenizer_config {tokenizer_config}")

    # Again into the same folder: replaced, the same bytes.
    with open(os.path.join(folder, "model.safetensors"), "rb") as f:
        first = f.read()
    again = zerodp("export", "--checkpoint", "ck", "--out", "hf", cwd=work)
    with open(os.path.join(folder, "model.safetensors"), "rb") as f:
        check(again.returncode == 0 and f.read() == first, f"a second export: {again.stderr}")

    # A folder with anything else in it is refused and left alone.
    other = os.path.join(work, "other")
    os.mkdir(other)
    with open(os.path.join(other, "notes.txt"), "w") as f:
        f.write("mine\n")
    refused = zerodp("export", "--checkpoint", "ck", "--out", "other", cwd=work)
    check(refused.returncode == 2 and refused.stderr ==
          "zerodp: --out: 'other' holds 'notes.txt', which is not an export's file; give a new "
          "or empty folder\n", f"a foreign folder: {refused.returncode} {refused.stderr!r}")
    check(os.listdir(other) == ["notes.txt"], f"the foreign folder now holds {os.listdir(other)}")

    # The weights alone, as before.
    single = zerodp("export", "--checkpoint", "ck", "--out", "m.safetensors", cwd=work)
    check(single.returncode == 0 and os.path.isfile(os.path.join(work, "m.safetensors")) and
          os.path.isfile(os.path.join(work, "config.json")), f"--out m.safetensors: {single.stderr}")

print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
