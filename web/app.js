// The zerodp planner page. Every number, table line and error message on it comes from the
// planner compiled to WebAssembly (zerodp.js, web/entry.cc), which runs the same command-line
// code as the native `zerodp plan`; this file only turns fields into an argv and back.
//
// State: the query string, one key per plan flag without its dashes (params=1e9&gpus=8); a
// flag without a value is key=1; a FILE flag (--model-config) carries the file's text. No
// query at all opens the example (EXAMPLE_QUERY).
// `zerodp plan ... --link` prints the same addresses (plan_link.h, the planner's command line).
"use strict";

const ZerodpPage = (() => {
  // Flags that choose how the CLI prints, not what the plan is: the page shows all of it.
  const OUTPUT_FLAGS = new Set(["--help", "--json", "--link", "--link-base", "--list-models",
                                "--list-gpus", "--list-links"]);

  // The fields in groups, each a few fields in view and the less used in a fold ("More"); a
  // flag in no group (one added to the planner later) lands in "Other inputs", so every input
  // of `zerodp plan` has a field without editing this page.
  const GROUPS = [
    ["Model", ["--model", "--params"], ["--model-config", "--largest-layer"]],
    ["Cluster / GPUs", ["--gpu", "--gpus", "--gpu-memory"],
     ["--gpus-per-node", "--nodes", "--host-memory", "--round-to"]],
    ["Batch & activations", ["--seq-len", "--micro-batch", "--checkpointing", "--attention"],
     ["--grad-accum", "--activations", "--layers", "--hidden", "--heads"]],
    ["LoRA / QLoRA", ["--lora-rank", "--lora-targets", "--quantize"],
     ["--double-quant", "--lora-alpha", "--lora-dropout", "--modules-to-save",
      "--adapter-config"]],
    ["DeepSpeed / ZeRO", ["--stage", "--precision", "--optimizer", "--offload-optimizer",
                          "--offload-params"],
     ["--framework", "--zeropp", "--deepspeed-config", "--optimizer-impl", "--bytes-per-param",
      "--buffers", "--cuda-overhead", "--limit-all-gathers", "--estimator"]],
    ["Time & cost", ["--tokens", "--price-per-gpu-hour"],
     ["--efficiency", "--intra-node", "--inter-node"]],
    ["Communication", ["--compute-time", "--bandwidth", "--overlap"],
     ["--intra-bandwidth", "--inter-bandwidth", "--comm-bytes", "--comm-convention",
      "--count-both-directions"]],
    ["Display", ["--binary", "--wide"], []],
  ];

  // Each flag's label in words; the flag itself stands beside it. A flag missing here shows
  // its name alone, and the test web_page_words (tests/web/landing_test.py) fails until it
  // has words.
  const WORDS = {
    "--params": "Parameter count",
    "--model": "Published model",
    "--model-config": "Hugging Face config.json",
    "--largest-layer": "Largest layer's parameters",
    "--gpu": "GPU",
    "--gpus": "Number of GPUs",
    "--gpu-memory": "Memory per GPU",
    "--gpus-per-node": "GPUs per node",
    "--nodes": "Number of nodes",
    "--host-memory": "Host memory per node",
    "--round-to": "Round the least N up to a multiple of",
    "--seq-len": "Sequence length",
    "--micro-batch": "Micro-batch per GPU",
    "--grad-accum": "Gradient accumulation steps",
    "--checkpointing": "Activation checkpointing",
    "--attention": "Attention kernel",
    "--activations": "Activation memory per GPU",
    "--layers": "Transformer layers",
    "--hidden": "Hidden size",
    "--heads": "Attention heads",
    "--lora-rank": "LoRA rank (the base frozen)",
    "--lora-targets": "Linears adapted",
    "--quantize": "Quantize the base (QLoRA)",
    "--double-quant": "NF4 double quantization",
    "--lora-alpha": "LoRA alpha",
    "--lora-dropout": "LoRA dropout",
    "--modules-to-save": "Modules trained whole",
    "--adapter-config": "PEFT adapter_config.json",
    "--stage": "ZeRO stage you will run",
    "--precision": "Precision",
    "--optimizer": "Optimizer",
    "--offload-optimizer": "Offload the optimizer states to",
    "--offload-params": "Offload the parameters to",
    "--framework": "Framework",
    "--zeropp": "ZeRO++",
    "--deepspeed-config": "DeepSpeed config (ds.json)",
    "--optimizer-impl": "Optimizer implementation",
    "--bytes-per-param": "Bytes per parameter",
    "--buffers": "DeepSpeed's buffers",
    "--cuda-overhead": "CUDA context and allocator",
    "--limit-all-gathers": "FSDP's limit_all_gathers",
    "--estimator": "Also DeepSpeed's own estimate",
    "--tokens": "Tokens to train on",
    "--price-per-gpu-hour": "Price of a GPU-hour",
    "--efficiency": "Fraction of the GPU's dense rate reached",
    "--intra-node": "Link inside a node",
    "--inter-node": "Network between nodes",
    "--compute-time": "Compute time per step",
    "--bandwidth": "Bandwidth per GPU",
    "--overlap": "Communication hidden behind compute",
    "--intra-bandwidth": "Bandwidth inside a node",
    "--inter-bandwidth": "Bandwidth across nodes",
    "--comm-bytes": "Communication per step",
    "--comm-convention": "Communication time from",
    "--count-both-directions": "Count bytes sent and received",
    "--binary": "Binary units (GiB, TiB)",
    "--wide": "Tables whole, past 100 columns",
  };

  // What the page opens on without a query: a question with an answer, Llama 3 8B on eight
  // H100 80GB, one sequence of 4096 tokens a GPU (ZeRO-1 fits, tight; ZeRO-2 with room).
  const EXAMPLE_QUERY = "model=llama-3-8b&gpus=8&gpu=h100-80gb&seq-len=4096&micro-batch=1";

  // The presets, by catalogue name: a name the catalogue no longer lists gets no button.
  const MODEL_PRESETS = [["llama-3-8b", "Llama 3 8B"], ["llama-3-70b", "Llama 3 70B"],
                         ["mistral-7b", "Mistral 7B"], ["mixtral-8x7b", "Mixtral 8x7B"],
                         ["qwen2.5-7b", "Qwen2.5 7B"], ["gemma-2-9b", "Gemma 2 9B"],
                         ["gpt2-xl", "GPT-2 XL"]];
  const GPU_PRESETS = [["a100-40gb", "A100 40GB"], ["a100-80gb", "A100 80GB"],
                       ["h100-80gb", "H100 80GB"], ["h200", "H200"], ["l40s", "L40S"],
                       ["rtx-4090", "RTX 4090"]];
  // A preset replaces the fields that give the same thing another way, which the planner
  // refuses beside it ("--params: not with --model").
  const PRESET_CLEARS = { "--model": ["--params", "--model-config"], "--gpu": ["--gpu-memory"] };

  // Choices of the flags that take a word; the planner still checks them (a value from a link
  // that is not among them is kept, so that its error shows).
  const CHOICES = {
    "--checkpointing": ["none", "selective", "full"],
    "--attention": ["sdpa", "flash", "eager"],
    "--precision": ["bf16", "fp16", "fp32"],
    "--optimizer": ["adam", "adamw", "adamw-8bit", "paged-adamw-8bit", "adamw-bf16",
                    "adamw-8bit-bf16", "paged-adamw-8bit-bf16", "adafactor",
                    "adafactor-beta1", "lion", "lion-8bit", "lamb", "adagrad", "rmsprop",
                    "sgd-momentum", "sgd"],
    "--optimizer-impl": ["fused", "foreach", "single"],
    "--framework": ["deepspeed", "fsdp"],
    "--limit-all-gathers": ["on", "off"],
    "--offload-optimizer": ["none", "cpu", "nvme"],
    "--offload-params": ["none", "cpu", "nvme"],
    "--comm-convention": ["ring", "seed"],
    "--intra-node": ["nvlink3", "nvlink4", "nvlink5", "pcie4", "pcie5"],
    "--inter-node": ["ib-hdr", "ib-ndr", "efa-p4d", "efa-p5"],
    "--estimator": ["deepspeed"],
    "--stage": ["0", "1", "2", "3"],
    "--buffers": ["deepspeed", "none"],
    "--quantize": ["nf4"],
    "--double-quant": ["on", "off"],
  };

  // Where a FILE flag's text goes in the in-memory file system (and what the copied command
  // calls it): the planner's messages then name the file the user is told to save.
  const fileName = (flag) =>
    ({ "--model-config": "config.json", "--deepspeed-config": "ds.json",
       "--adapter-config": "adapter_config.json" })[flag] ||
    flag.slice(2) + ".json";

  let wasm = null;
  let options = [];

  // Runs one command line in the planner: {status, stdout, stderr}.
  function run(argv) {
    const reply = wasm.ccall("zerodp_run", "string", ["string"], [JSON.stringify(argv)]);
    return JSON.parse(reply);
  }

  async function load() {
    wasm = await createZerodp();
    wasm.FS.mkdir("/work");
    wasm.FS.chdir("/work");
    options = JSON.parse(wasm.ccall("zerodp_options", "string", ["string"], ["plan"]))
      .filter((o) => !OUTPUT_FLAGS.has(o.name));
    return options;
  }

  const isOn = (value) => value !== null && value !== "0" && value !== "false";

  // The plan's flags and values from a query string, in the planner's own option order;
  // keys that name no flag are passed on too, so the planner reports them.
  function stateFromQuery(query) {
    const params = new URLSearchParams(query);
    const state = [];
    const known = new Set();
    for (const o of options) {
      const key = o.name.slice(2);
      known.add(key);
      // Every value of a key that is given twice, as the command line gets it twice, so
      // that the planner refuses it ("--gpus: At Most 1 required but received 2") rather
      // than the page silently taking one of them.
      for (const value of params.getAll(key)) {
        if (o.flag ? isOn(value) : value !== "") state.push({ option: o, value });
      }
    }
    for (const [key, value] of params) {
      if (!known.has(key)) state.push({ option: { name: "--" + key, flag: false }, value });
    }
    return state;
  }

  // The argv of `zerodp plan` for a state; FILE flags' text is written to MEMFS first.
  function planArgv(state) {
    const argv = ["plan"];
    for (const { option, value } of state) {
      if (option.flag) {
        argv.push(option.name);
      } else if (option.type === "FILE") {
        wasm.FS.writeFile(fileName(option.name), value);
        argv.push(option.name, fileName(option.name));
      } else {
        argv.push(option.name, value);
      }
    }
    return argv;
  }

  function queryFromState(state) {
    const params = new URLSearchParams();
    for (const { option, value } of state) {
      params.append(option.name.slice(2), option.flag ? "1" : value);
    }
    return params.toString();
  }

  // A word for a POSIX shell: as is when it is plainly safe, else in single quotes.
  const shellWord = (word) =>
    /^[A-Za-z0-9_@%+=:,./-]+$/.test(word) ? word : "'" + word.replace(/'/g, "'\\''") + "'";

  function commandLine(state) {
    const words = ["zerodp", "plan"];
    for (const { option, value } of state) {
      if (option.flag) words.push(option.name);
      else words.push(option.name, option.type === "FILE" ? fileName(option.name) : value);
    }
    return words.map(shellWord).join(" ");
  }

  // The seed's figure for the plan's model, by `zerodp plot` itself; null without a count.
  function figure(state, plan) {
    if (!plan || plan.inputs.params === null) return null;
    const given = new Map(state.map((s) => [s.option.name, s.value]));
    const argv = ["plot", "--params", String(plan.inputs.params), "--out", "/tmp/figure.svg"];
    const precision = ["--precision", "--optimizer", "--bytes-per-param"].filter((f) =>
      given.has(f));
    if (precision.length > 0) {
      for (const f of precision) argv.push(f, given.get(f));
    } else {
      const b = plan.bytes_per_param;
      if (b.params !== 2 || b.grads !== 2 || b.optimizer !== 12) {
        argv.push("--bytes-per-param", `${b.params},${b.grads},${b.optimizer}`);
      }
    }
    const gpus = plan.inputs.gpus || 0;
    let maxGpus = 64;
    while (maxGpus < 2 * gpus && maxGpus < (1 << 20)) maxGpus *= 2;
    argv.push("--max-gpus", String(maxGpus));
    if (given.has("--binary")) argv.push("--binary");
    const result = run(argv);
    if (result.status !== 0) return { error: result.stderr.trim() };
    return { svg: new TextDecoder().decode(wasm.FS.readFile("/tmp/figure.svg")) };
  }

  // Each stage's memory at N term by term against the GPU's memory, by `zerodp plot
  // --breakdown` with the plan's own flags; null without N.
  function breakdown(planArgv, plan) {
    if (!plan || plan.inputs.gpus === null) return null;
    const result = run(["plot", "--breakdown"].concat(planArgv.slice(1),
                                                       ["--out", "/tmp/breakdown.svg"]));
    if (result.status !== 0) return { error: result.stderr.trim() };
    return { svg: new TextDecoder().decode(wasm.FS.readFile("/tmp/breakdown.svg")) };
  }

  // A refusal in the planner's own form, for what the page cannot pass on to it.
  const refusal = (message) => ({ status: 2, stdout: "", stderr: "zerodp: " + message + "\n" });

  // Plan and figure for a state: what the page shows, with no DOM involved. A state the
  // planner refuses has errors: [{flag, message}], every wrong value's (wrongValues).
  function evaluate(state) {
    const result = { argv: null, text: null, json: null, plan: null, figure: null,
                     breakdown: null, errors: [] };
    const refuse = (message) => {
      result.text = refusal(message);
      const said = result.text.stderr.trim();
      result.errors = [{ flag: flagOfMessage(said), message: said }];
      return result;
    };
    // A key of an output flag (help=1 in the address) would make the planner print its help
    // or a link where the page expects a plan: it is refused like any other bad input.
    const output = state.find((s) => OUTPUT_FLAGS.has(s.option.name));
    if (output) {
      const key = output.option.name.slice(2);
      return refuse(`${output.option.name}: chooses how the command line prints, not ` +
                    `what the plan is, and the page shows all of it; remove '${key}' ` +
                    "from the address");
    }
    result.argv = planArgv(state);
    result.text = run(result.argv);
    if (result.text.status !== 0) {
      result.errors = wrongValues(state, result.text.stderr.trim());
      return result;
    }
    result.json = run(result.argv.concat(["--json"]));
    try {
      result.plan = JSON.parse(result.json.stdout);
    } catch (e) {
      // Not expected of the planner; if it happens, the page says so instead of stopping.
      const first = (result.json.stderr || result.json.stdout).trim().split("\n")[0];
      return refuse("the plan could not be read as JSON: " + first);
    }
    result.figure = figure(state, result.plan);
    result.breakdown = breakdown(result.argv, result.plan);
    return result;
  }

  // Every wrong value of a state the planner refused with `message`, each with the planner's
  // own words: [{flag, message}], the refusal first (flag null when it names none).
  //
  // The planner stops at its first error, as the command line does, and its rules (which
  // value, which pair of flags) live in its C++ alone. So the page asks it again rather than
  // judging values itself: without the flag it named, which flag does it stop on next, and so
  // on until it plans or names no flag that is left. Such a flag may only be missing what was
  // taken out (--framework fsdp without the --model that was wrong), so each is asked once
  // more on its own: with every other wrong flag given the example's value (EXAMPLE_QUERY) or
  // left out, it is wrong if the planner still names it.
  function wrongValues(state, message) {
    const errors = [{ flag: flagOfMessage(message), message }];
    const wrong = new Set();
    if (errors[0].flag) {
      wrong.add(errors[0].flag);
    } else {
      // A key that names no flag ("unknown flag '--foo'") is refused before any value is
      // read; without such keys the planner still reads the others.
      const unknown = state.filter((s) => !options.includes(s.option));
      if (unknown.length === 0) return errors;
      for (const s of unknown) wrong.add(s.option.name);
    }
    const suspects = [];
    let rest = state.filter((s) => !wrong.has(s.option.name));
    while (rest.length > 0) {
      const next = run(planArgv(rest));
      if (next.status === 0) break;
      const flag = flagOfMessage(next.stderr.trim());
      if (!flag || !rest.some((s) => s.option.name === flag)) break;
      suspects.push(flag);
      wrong.add(flag);
      rest = rest.filter((s) => s.option.name !== flag);
    }
    const example = new URLSearchParams(EXAMPLE_QUERY);
    for (const flag of suspects) {
      const context = [];
      for (const s of state) {
        const name = s.option.name;
        if (name === flag || !wrong.has(name)) {
          context.push(s);
        } else if (example.has(name.slice(2)) && !context.some((c) => c.option.name === name)) {
          context.push({ option: s.option, value: example.get(name.slice(2)) });
        }
      }
      const alone = run(planArgv(context));
      const said = alone.stderr.trim();
      if (alone.status !== 0 && flagOfMessage(said) === flag) errors.push({ flag, message: said });
    }
    return errors;
  }

  // The first flag a message names ("zerodp: --seq-len, --micro-batch: ..."), or null.
  function flagOfMessage(message) {
    const m = /^zerodp: (?:error: )?(--[a-z0-9-]+)/.exec(message);
    return m ? m[1] : null;
  }

  // The headline and its colour: the plan's own answer (`answer` in plan --json: the sentence on
  // the stage asked about, else on the cheapest that fits, and the verdict it speaks of), never
  // a sentence read back out of the printed text.
  function headline(plan) {
    return plan && plan.answer ? plan.answer.headline : "";
  }

  function headlineVerdict(plan) {
    const verdict = plan && plan.answer ? plan.answer.verdict : null;
    return verdict ? "verdict-" + verdict.replace(/_/g, "-") : "";
  }

  // The class of a cell of the table's "fits" column: yes, tight or no, each its colour.
  const FITS_CLASS = { "yes": "verdict-fits", "tight": "verdict-tight", "no": "verdict-does-not-fit",
                       "no (host)": "verdict-does-not-fit" };

  // The answer's sentence on the cheapest stage that fits (or that none does), when the
  // headline is another sentence (the stage asked about); "" otherwise.
  function cheapest(plan) {
    if (!plan || !plan.answer || !plan.answer.cheapest) return "";
    return plan.answer.cheapest === plan.answer.headline ? "" : plan.answer.cheapest;
  }

  // ---- The page's DOM: built from the option list, then kept in step with the URL. ----

  const STAGE_ROW = /^(DP|ZeRO-\d)\s/;
  const cells = (line) => line.trim().split(/ {2,}/);

  // The CLI's output as HTML, its words and numbers unchanged: each table (a header line,
  // then one row per stage, columns two spaces apart) as a <table>, which a phone can wrap;
  // aligned text (DeepSpeed's estimate) as <pre>; every other line as a paragraph.
  function renderPlan(text) {
    const lines = text.split("\n");
    const out = document.createDocumentFragment();
    let pre = null;
    for (let i = 0; i < lines.length; ) {
      const line = lines[i];
      let rows = 0;
      while (i + 1 + rows < lines.length && STAGE_ROW.test(lines[i + 1 + rows])) rows++;
      const width = cells(line).length;
      const table = rows > 0 && width > 1 &&
        lines.slice(i + 1, i + 1 + rows).every((row) => cells(row).length === width);
      if (table) {
        const head = el("tr", {}, cells(line).map((c) => el("th", { scope: "col", text: c })));
        const fitsColumn = cells(line).indexOf("fits");
        const body = lines.slice(i + 1, i + 1 + rows).map((row) =>
          el("tr", {}, cells(row).map((c, k) =>
            k === 0 ? el("th", { scope: "row", text: c })
              : el("td", k === fitsColumn && FITS_CLASS[c] ? { text: c, class: FITS_CLASS[c] }
                                                            : { text: c }))));
        out.append(el("div", { class: "table-wrap" }, [
          el("table", {}, [el("thead", {}, [head]), el("tbody", {}, body)])]));
        pre = null;
        i += 1 + rows;
        continue;
      }
      if (line.trim() === "") {
        pre = null;
      } else if (/\S {3,}\S/.test(line)) {
        if (!pre) out.append((pre = el("pre", { class: "aligned" })));
        pre.textContent += line + "\n";
      } else {
        pre = null;
        out.append(el("p", { text: line }));
      }
      i++;
    }
    return out;
  }

  function el(tag, attributes = {}, children = []) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attributes)) {
      if (k === "text") node.textContent = v;
      else node.setAttribute(k, v);
    }
    for (const child of children) node.append(child);
    return node;
  }

  // The catalogues --model and --gpu choose from, as the planner lists them: [value, label].
  function catalogue(flag) {
    const listing = run(["plan", flag, "--json"]);
    if (listing.status !== 0) return [];
    return JSON.parse(listing.stdout).map((entry) =>
      flag === "--list-models"
        ? [entry.name, `${entry.hf_id}, ${entry.params.toLocaleString("en-US")} parameters`]
        : [entry.name, `${entry.device}, sold as ${entry.sold_as}`]);
  }

  // A field's label: the flag in words, the flag itself beside them in small type.
  function fieldLabel(o, id) {
    const words = WORDS[o.name];
    return el("label", { for: id }, [
      words ? el("span", { class: "words", text: words }) : "",
      words ? " " : "",
      el("code", { class: "flag", text: o.name })]);
  }

  function buildField(o, choices) {
    const key = o.name.slice(2);
    const id = "field-" + key;
    const hint = el("small", { id: "hint-" + key, class: "hint", text: o.help });
    // Read with the field (aria-describedby); the summary above the plan announces changes.
    const error = el("p", { id: "error-" + key, class: "error" });
    const described = `hint-${key} error-${key}`;
    let input;
    if (o.flag) {
      input = el("input", { type: "checkbox", id, name: key, "aria-describedby": described });
      return el("div", { class: "field check" }, [input, fieldLabel(o, id), hint, error]);
    }
    if (SEARCHED[o.name]) {
      // A name typed or picked from the catalogue's list (the browser filters it as one
      // types); a name not in it still goes to the planner, which names the nearest.
      const list = el("datalist", { id: "list-" + key });
      for (const [value, label] of SEARCHED[o.name]) {
        list.append(el("option", { value, label, text: label }));
      }
      input = el("input", {
        type: "text", id, name: key, list: "list-" + key, autocomplete: "off",
        spellcheck: "false", "aria-describedby": described, placeholder: "type to search",
      });
      return el("div", { class: "field" }, [fieldLabel(o, id), input, list, hint, error]);
    }
    if (choices) {
      input = el("select", { id, name: key, "aria-describedby": described });
      input.append(el("option", { value: "", text: "(default)" }));
      for (const c of choices) input.append(el("option", { value: c, text: c }));
    } else if (o.type === "FILE") {
      input = el("textarea", {
        id, name: key, rows: "4", spellcheck: "false", "aria-describedby": described,
        placeholder: `paste ${fileName(o.name)} here`,
      });
    } else {
      input = el("input", {
        type: "text", id, name: key, autocomplete: "off", spellcheck: "false",
        "aria-describedby": described, placeholder: o.type,
      });
    }
    return el("div", { class: "field" }, [fieldLabel(o, id), input, hint, error]);
  }

  // Fields chosen from a catalogue, filled by buildForm().
  const SEARCHED = {};

  // One row of preset buttons for a flag: each puts its value in the field, empties the
  // fields it replaces, and the form's input event re-plans.
  function presetRow(form, title, flag, presets) {
    const described = new Map(SEARCHED[flag]);
    const labelId = "presets-" + flag.slice(2);
    const row = el("div", { class: "preset-row", role: "group", "aria-labelledby": labelId },
                   [el("span", { id: labelId, class: "preset-title", text: title })]);
    for (const [value, words] of presets.filter(([value]) => described.has(value))) {
      const button = el("button", {
        type: "button", class: "preset", "data-flag": flag, "data-value": value,
        "aria-pressed": "false", title: `${flag} ${value}: ${described.get(value)}`, text: words,
      });
      button.addEventListener("click", () => {
        form.elements.namedItem(flag.slice(2)).value = value;
        for (const other of PRESET_CLEARS[flag] || []) {
          const input = form.elements.namedItem(other.slice(2));
          if (input) input.value = "";
        }
        form.dispatchEvent(new Event("input"));
      });
      row.append(button);
    }
    return row;
  }

  // A preset shows as pressed while its field holds its value.
  function markPresets(form) {
    for (const button of form.querySelectorAll("button.preset")) {
      const input = form.elements.namedItem(button.dataset.flag.slice(2));
      button.setAttribute("aria-pressed", String(!!input && input.value === button.dataset.value));
    }
  }

  function buildForm(form, state) {
    SEARCHED["--model"] = catalogue("--list-models");
    SEARCHED["--gpu"] = catalogue("--list-gpus");
    const byName = new Map(options.map((o) => [o.name, o]));
    const given = new Set(state.map((s) => s.option.name));
    const present = (names) => names.filter((n) => byName.has(n));
    const grouped = new Set(GROUPS.flatMap(([, shown, more]) => shown.concat(more)));
    const groups = GROUPS.map(([title, shown, more]) => [title, present(shown), present(more)]);
    groups.push(["Other inputs", [], options.map((o) => o.name).filter((n) => !grouped.has(n))]);
    form.prepend(el("div", { id: "presets" }, [
      presetRow(form, "Model", "--model", MODEL_PRESETS),
      presetRow(form, "GPU", "--gpu", GPU_PRESETS)]));
    for (const [title, shown, more] of groups) {
      if (shown.length + more.length === 0) continue;
      const fieldset = el("fieldset", { class: "group" }, [el("legend", { text: title })]);
      for (const name of shown) fieldset.append(buildField(byName.get(name), CHOICES[name]));
      if (more.length > 0) {
        // The less used inputs fold away, named in the fold's summary so that they are
        // found; open when one of them holds a value.
        const names = more.map((n) => WORDS[n] || n).join(", ");
        const details = el("details", { class: "more" }, [
          el("summary", { text: shown.length > 0 ? "More: " + names : names })]);
        details.open = more.some((n) => given.has(n));
        for (const name of more) details.append(buildField(byName.get(name), CHOICES[name]));
        fieldset.append(details);
      }
      form.append(fieldset);
    }
  }

  function readForm(form) {
    const state = [];
    for (const o of options) {
      const input = form.elements.namedItem(o.name.slice(2));
      if (!input) continue;
      if (o.flag ? input.checked : input.value !== "") {
        state.push({ option: o, value: o.flag ? "1" : input.value });
      }
    }
    return state;
  }

  function fillForm(form, state) {
    for (const { option, value } of state) {
      const input = form.elements.namedItem(option.name.slice(2));
      if (!input) continue;
      if (option.flag) {
        input.checked = true;
      } else {
        if (input.tagName === "SELECT" && ![...input.options].some((x) => x.value === value)) {
          input.append(el("option", { value, text: value }));
        }
        input.value = value;
      }
    }
  }

  // Whether a valid plan has been shown since the page opened: while a value is being typed
  // (and is wrong on the way), that plan stays, marked as the last valid one.
  let shownValid = false;

  function show(form, state, unknown) {
    const result = evaluate(state.concat(unknown));
    const $ = (id) => document.getElementById(id);
    for (const node of form.querySelectorAll(".error")) node.textContent = "";
    for (const node of form.querySelectorAll("[aria-invalid]")) node.removeAttribute("aria-invalid");
    $("message").textContent = "";
    $("command").textContent = commandLine(state.concat(unknown));
    $("file-note").hidden = !state.some((s) => s.option.type === "FILE");
    const ok = result.text.status === 0;
    const keep = !ok && shownValid;
    $("results").classList.toggle("failed", !ok && !keep);
    $("results").classList.toggle("stale", keep);
    $("stale-note").hidden = !keep;
    if (!ok) {
      // Each wrong value beside its field, its group's fold opened; all of them above the plan.
      for (const { flag, message } of result.errors) {
        const slot = flag && $("error-" + flag.slice(2));
        if (!slot) continue;
        slot.textContent = message;
        const field = $("field-" + flag.slice(2));
        field.setAttribute("aria-invalid", "true");
        let fold = field.closest("details");
        for (; fold; fold = fold.parentElement.closest("details")) fold.open = true;
      }
      $("message").textContent = result.errors.map((e) => e.message).join("\n");
      if (keep) return result;
      $("plan-text").textContent = "";
      $("plan-html").replaceChildren();
      $("stage-table").replaceChildren();
      $("warnings").textContent = "";
      $("headline").textContent = "";
      $("headline").className = "";
      $("cheapest").textContent = "";
      $("figure").replaceChildren();
      $("figure-note").textContent = "";
      $("breakdown").replaceChildren();
      $("breakdown-note").textContent = "";
      return result;
    }
    shownValid = true;
    $("plan-text").textContent = result.text.stdout;
    // The stages' table (model state, peak, fits, least N ...) right under the verdict and the
    // bars; the lines that explain it below.
    const rendered = renderPlan(result.text.stdout);
    $("stage-table").replaceChildren(rendered.querySelector(".table-wrap") || "");
    $("plan-html").replaceChildren(rendered);
    $("warnings").textContent = result.text.stderr ? result.text.stderr.trim() : "";
    $("headline").textContent = headline(result.plan);
    $("headline").className = headlineVerdict(result.plan);
    $("cheapest").textContent = cheapest(result.plan);
    const bars = result.breakdown;
    $("breakdown").innerHTML = bars && bars.svg ? bars.svg.replace(/^<\?xml[^>]*>\s*/, "") : "";
    $("breakdown-note").textContent = !bars
      ? "Give the number of GPUs to see each stage's memory at N, term by term."
      : bars.error || "";
    const fig = result.figure;
    $("figure").innerHTML = fig && fig.svg ? fig.svg.replace(/^<\?xml[^>]*>\s*/, "") : "";
    $("figure-note").textContent = !fig
      ? "The figure needs a parameter count (--params or --model)."
      : fig.error || "";
    return result;
  }

  async function start() {
    const form = document.getElementById("plan-form");
    const status = document.getElementById("loading");
    try {
      await load();
    } catch (e) {
      status.textContent = "The planner could not start in this browser: " + e;
      return;
    }
    // Without a query the page opens on the example, a plan rather than a request for input;
    // the address stays empty until a field changes.
    const initial = stateFromQuery(location.search || EXAMPLE_QUERY);
    buildForm(form, initial);
    const unknown = initial.filter((s) => !options.includes(s.option));
    fillForm(form, initial);
    status.hidden = true;
    form.hidden = false;
    let pending = false;
    const update = () => {
      pending = false;
      const state = readForm(form);
      const query = queryFromState(state.concat(unknown));
      history.replaceState(null, "", query ? "?" + query : location.pathname);
      show(form, state, unknown);
      markPresets(form);
    };
    // Events of one keystroke or click (input, change) run the planner once. A timer, not
    // requestAnimationFrame, which a hidden tab or a headless browser may never call.
    const schedule = () => {
      if (!pending) setTimeout(update, 0);
      pending = true;
    };
    form.addEventListener("input", schedule);
    form.addEventListener("change", schedule);
    form.addEventListener("submit", (e) => e.preventDefault());
    document.getElementById("reset").addEventListener("click", () => {
      unknown.length = 0;
      form.reset();
      schedule();
    });
    const copy = async (text, button) => {
      try {
        await navigator.clipboard.writeText(text);
        button.dataset.done = "copied";
      } catch (e) {
        button.dataset.done = "select and copy it by hand";
      }
      setTimeout(() => delete button.dataset.done, 2000);
    };
    document.getElementById("copy-command").addEventListener("click", (e) =>
      copy(document.getElementById("command").textContent, e.currentTarget));
    document.getElementById("copy-link").addEventListener("click", (e) =>
      copy(location.href, e.currentTarget));
    document.getElementById("example").addEventListener("click", () => {
      unknown.length = 0;
      form.reset();
      fillForm(form, stateFromQuery(EXAMPLE_QUERY));
      schedule();
    });
    show(form, initial.filter((s) => options.includes(s.option)), unknown);
    markPresets(form);
    document.body.dataset.ready = "true";
  }

  return { load, run, stateFromQuery, planArgv, queryFromState, commandLine, evaluate, start };
})();

if (document.getElementById("plan-form")) ZerodpPage.start();
