// `import zerodp`: the planner and the engine's peak prediction from Python, as the command line
// gives them, in Python's terms.
//
// Contract:
//  - plan(**keywords) returns what `zerodp plan --json` prints, parsed by Python's json module, and
//    predict_peak(**keywords) what `zerodp train --dry-run --json` prints: each call runs the same
//    run_command_line() as the executable (cli/frame/app.h), so the dict and its numbers are the
//    command line's by construction. list_models(), list_gpus() and list_links() are `plan
//    --list-models --json`, `plan --list-gpus --json` and `plan --list-links --json`.
//  - A keyword is a long flag with underscores for dashes (seq_len is --seq-len); the keywords are
//    the command's flags, read from the command line itself, so inspect.signature() and help()
//    list every one with its type and what it defaults to. Its value: for a switch
//    (count_both_directions) True, False or None; for any other flag a number, a string, a list
//    or tuple (joined with commas) or a path-like object (its path), None leaving it out (a float
//    with no fraction as a whole number: 1e9 is "1000000000"). deepspeed_config, model_config and
//    adapter_config also take a dict, lent to the command line as JSON text in memory
//    (cli/frame/output.h): no file is written, so no TMPDIR is needed.
//  - Errors speak Python: a keyword that is not one (a typo, "list-gpus"), or a value of the wrong
//    type (gpus=True), raises TypeError naming the keyword, with the nearest keyword when there
//    is one; bad text (a NUL, a lone surrogate, a dict nested deeper than the config readers take)
//    raises ValueError naming the keyword; a value the command line refuses raises ValueError
//    with the command line's line in keywords ("zerodp.plan(): seq_len: expected ..."); a run
//    that fails raises RuntimeError. Lines the command line prints as warnings become Python
//    warnings (UserWarning), in keywords too.
//  - Numbers are read and printed in the C locale whatever locale the process has set; a process
//    may fork while another thread plans (the fork waits for that call), and the child plans.
//  - Thread-safety: any thread may call; the command line runs one call at a time with the GIL
//    released (other Python threads run meanwhile), and writes into streams of the call's own
//    (cli/frame/output.h): nothing goes through the process's file descriptors 1 and 2, so no
//    output of another thread is taken into a result, and no result's output reaches them.
#include <pybind11/eval.h>
#include <pybind11/pybind11.h>

#include <locale.h>
#include <pthread.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "app.h"
#include "zerodp/common/json_text.h"

namespace py = pybind11;

namespace {

struct Output {
  int status = 0;
  std::string out, err;
};

// A stream in memory for one call's words (open_memstream), read once the call is done.
class MemoryStream {
 public:
  MemoryStream() {
    file_ = open_memstream(&data_, &size_);
    if (!file_) {
      throw std::runtime_error(std::string("zerodp: cannot open a stream in memory: ") +
                               std::strerror(errno));
    }
  }
  MemoryStream(const MemoryStream&) = delete;
  MemoryStream& operator=(const MemoryStream&) = delete;
  ~MemoryStream() {
    if (file_) std::fclose(file_);
    std::free(data_);
  }
  std::FILE* file() { return file_; }
  std::string take() {
    std::fclose(file_);
    file_ = nullptr;
    return std::string(data_ ? data_ : "", size_);
  }

 private:
  std::FILE* file_ = nullptr;
  char* data_ = nullptr;
  std::size_t size_ = 0;
};

// The command line's globals (the commands' registry, the kernels' caches) are its own: one call
// at a time, the GIL released while it runs.
std::mutex command_line;

// A fork waits for the call in progress, so that the child's copy of the command line is whole
// and its mutex free: a child forked while another thread planned hung on its next call.
void before_fork() {
  command_line.lock();
}
void after_fork() {
  command_line.unlock();
}

// The command line reads and prints numbers in the C locale whatever the process has set
// (Python's locale.setlocale(LC_ALL, "de_DE.UTF-8") made "1.5s" one second and printed
// "41,2 GB"): each call runs with this thread's locale set to "C" (uselocale), the process's
// left as it is.
locale_t c_locale() {
  static const locale_t c = newlocale(LC_ALL_MASK, "C", locale_t(0));
  return c;
}

// One command line, run in this process, its words in streams of its own; `inline_texts` the
// text of each file flag given as a dict (output.h's InlineFiles: no file is written).
Output run_command(std::vector<std::string> args,
                   std::map<std::string, std::string> inline_texts = {}) {
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  Output result;
  MemoryStream out, err;
  {
    py::gil_scoped_release release;
    const std::lock_guard<std::mutex> one_at_a_time(command_line);
    const zerodp::cli::InlineFiles lent(std::move(inline_texts));
    const locale_t caller = uselocale(c_locale());
    result.status =
        zerodp::cli::run_command_line(int(args.size()), argv.data(), out.file(), err.file());
    uselocale(caller);
  }
  result.out = out.take();
  result.err = err.take();
  return result;
}

// A flag of a command, as a keyword: seq_len for --seq-len.
struct Keyword {
  std::string name;  // "seq_len"
  std::string flag;  // "--seq-len"
  bool switch_only;  // a flag without a value (--count-both-directions)
  std::string type;  // the value's name in the help: "N", "BYTES", "FILE"
  std::string help;  // the flag's description
};

// Keywords that the functions set themselves, or that print something other than the dict.
bool reserved(const std::string& key) {
  for (const char* r : {"json", "help", "link", "link_base", "dry_run", "list_models", "list_gpus",
                        "list_links", "version"}) {
    if (key == r) return true;
  }
  return false;
}

// The keywords of `zerodp <command>`, from the command line's own options, in its order.
std::vector<Keyword> keywords_of(const std::string& command) {
  CLI::App app;
  zerodp::cli::build_app(app);
  std::vector<Keyword> keywords;
  for (const CLI::Option* option : app.get_subcommand(command)->get_options()) {
    if (option->get_lnames().empty()) continue;
    std::string name = option->get_lnames().front();
    for (char& c : name) c = c == '-' ? '_' : c;
    if (reserved(name)) continue;
    keywords.push_back({name, "--" + option->get_lnames().front(), option->get_expected_min() == 0,
                        option->get_type_name(), option->get_description()});
  }
  return keywords;
}

// "zerodp.plan()": who speaks in a message.
std::string speaker(const char* function) {
  return std::string("zerodp.") + function + "()";
}

bool is_flag_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

// The length of the flag (--[a-z0-9]+(-[a-z0-9]+)*) that starts at `at`, or 0. A scan, not a
// std::regex: libstdc++'s regex recurses once per character, and a 100 kB value named in a
// message overflowed the stack of the Python process.
std::size_t flag_length(const std::string& text, std::size_t at) {
  if (text.compare(at, 2, "--") != 0) return 0;
  std::size_t end = at + 2;
  if (end >= text.size() || !is_flag_char(text[end])) return 0;
  while (end < text.size()) {
    if (is_flag_char(text[end])) {
      ++end;
    } else if (text[end] == '-' && end + 1 < text.size() && is_flag_char(text[end + 1])) {
      end += 2;
    } else {
      break;
    }
  }
  return end - at;
}

// A line of the command line in keywords: "zerodp: --seq-len: ..." is "zerodp.plan(): seq_len:
// ...", every flag of the command named by its keyword, the hint to --help by help().
std::string in_keywords(const std::string& line, const char* function,
                        const std::vector<Keyword>& keywords) {
  std::string text = line;
  if (text.rfind("zerodp: ", 0) == 0) text = speaker(function) + ": " + text.substr(8);
  // "see 'zerodp plan --help'" is "see help(zerodp.plan)".
  const std::string hint = "see 'zerodp ";
  for (std::size_t at = text.find(hint); at != std::string::npos; at = text.find(hint, at + 1)) {
    std::size_t word = at + hint.size(), end = word;
    while (end < text.size() && text[end] >= 'a' && text[end] <= 'z') ++end;
    if (end > word && text.compare(end, 8, " --help'") == 0) {
      text.replace(at, end + 8 - at, "see help(zerodp." + std::string(function) + ")");
    }
  }
  std::string out;
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t length = flag_length(text, at);
    if (length == 0) {
      out.push_back(text[at++]);
      continue;
    }
    const std::string found = text.substr(at, length);
    const auto known = std::find_if(keywords.begin(), keywords.end(),
                                    [&](const Keyword& k) { return k.flag == found; });
    // The catalogues' flags are functions of the module.
    if (found == "--list-gpus" || found == "--list-models") {
      out += "zerodp." + found.substr(2, 4) + "_" + found.substr(7) + "()";
    } else {
      out += known != keywords.end() ? known->name : found;
    }
    at += length;
  }
  return out;
}

// Text a flag may take: valid UTF-8 (no lone surrogate) and no NUL, else ValueError naming the
// keyword.
std::string checked_text(const char* function, const std::string& key, const py::handle& value) {
  py::object bytes;
  try {
    bytes = value.attr("encode")("utf-8", "strict");
  } catch (const py::error_already_set&) {
    throw py::value_error(speaker(function) + ": " + key +
                          ": expected text, got a string that is not valid Unicode (a lone "
                          "surrogate)");
  }
  std::string text = bytes.cast<std::string>();
  if (text.find('\0') != std::string::npos) {
    throw py::value_error(speaker(function) + ": " + key +
                          ": expected text without a NUL character");
  }
  return text;
}

// A value's text as the flag takes it; TypeError for a type it cannot take.
std::string flag_text(const char* function, const std::string& key, const py::handle& value) {
  if (py::isinstance<py::bool_>(value)) {
    throw py::type_error(speaker(function) + ": " + key +
                         " takes a value (a number or a string), not True or False");
  }
  if (py::isinstance<py::int_>(value)) return py::str(value);
  if (py::isinstance<py::float_>(value)) {
    const double d = value.cast<double>();
    // 1e9 reads as a count, as the command line's "1e9" does; 0.6 stays 0.6.
    if (py::bool_(value.attr("is_integer")()) && d > -9.2e18 && d < 9.2e18) {
      return std::to_string(static_cast<long long>(d));
    }
    return py::repr(value);
  }
  if (py::isinstance<py::str>(value)) return checked_text(function, key, value);
  // An integer of another type (numpy.int64(8)): what its __index__ gives, as Python's own
  // range() and list indices take it.
  if (py::hasattr(value, "__index__")) return py::str(py::int_(value.attr("__index__")()));
  if (py::hasattr(value, "__fspath__")) {
    const py::object path = py::module_::import("os").attr("fspath")(value);
    if (py::isinstance<py::str>(path)) return checked_text(function, key, path);
  }
  if (py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value)) {
    std::string joined;
    for (const py::handle& item : value) {
      joined += (joined.empty() ? "" : ",") + flag_text(function, key, item);
    }
    return joined;
  }
  throw py::type_error(speaker(function) + ": " + key +
                       " takes a number, a string, a list or a path, not " +
                       std::string(py::str(value.get_type().attr("__name__"))));
}

// How deep a dict or list nests (1 for a flat one), counted without recursion, stopping past
// `limit`: a config nested 100,000 deep is refused before Python's json module recurses into it.
int nesting(const py::handle& root, int limit) {
  std::vector<std::pair<py::handle, int>> pending{{root, 1}};
  int deepest = 0;
  while (!pending.empty()) {
    const auto [value, depth] = pending.back();
    pending.pop_back();
    const bool dict = py::isinstance<py::dict>(value);
    if (!dict && !py::isinstance<py::list>(value) && !py::isinstance<py::tuple>(value)) continue;
    deepest = std::max(deepest, depth);
    if (deepest > limit) return deepest;
    if (dict) {
      for (const auto& item : py::reinterpret_borrow<py::dict>(value)) {
        pending.push_back({item.second, depth + 1});
      }
    } else {
      for (const py::handle& item : value) pending.push_back({item, depth + 1});
    }
  }
  return deepest;
}

// The keyword `key` names, or TypeError: not a keyword at all, or not one of this command's (with
// the nearest, as Python's difflib finds it).
const Keyword& keyword_of(const char* function, const py::handle& key_handle,
                          const std::vector<Keyword>& keywords) {
  if (!py::isinstance<py::str>(key_handle)) {
    throw py::type_error(speaker(function) + ": keywords must be strings");
  }
  const std::string key = checked_text(function, "a keyword", key_handle);
  if (reserved(key)) {
    throw py::type_error(speaker(function) + " got the keyword '" + key +
                         "', which it sets itself; leave it out");
  }
  const auto known = std::find_if(keywords.begin(), keywords.end(),
                                  [&](const Keyword& k) { return k.name == key; });
  if (known != keywords.end()) return *known;
  if (!py::bool_(key_handle.attr("isidentifier")())) {
    std::string underscored = key;
    for (char& c : underscored) c = c == '-' ? '_' : c;
    const bool offered = std::any_of(keywords.begin(), keywords.end(),
                                     [&](const Keyword& k) { return k.name == underscored; });
    throw py::type_error(speaker(function) + " got " + std::string(py::repr(key_handle)) +
                         ", which is not a keyword: keywords spell a flag with underscores "
                         "(--seq-len is seq_len" +
                         (offered ? "; " + std::string(py::repr(key_handle)) + " is " + underscored
                                  : std::string()) +
                         ")");
  }
  py::list names;
  for (const Keyword& k : keywords) names.append(k.name);
  const py::list near =
      py::module_::import("difflib").attr("get_close_matches")(key, names, 1, 0.6);
  throw py::type_error(
      speaker(function) + " got an unexpected keyword argument '" + key + "'" +
      (near.empty() ? std::string() : "; did you mean '" + near[0].cast<std::string>() + "'?"));
}

// `zerodp <command> <fixed...> --flag value ...`, run; the JSON it prints, as Python objects.
py::object call(const char* function, std::vector<std::string> args, const py::kwargs& given,
                const std::vector<std::string>& file_keywords,
                const std::vector<Keyword>& keywords) {
  std::map<std::string, std::string> inline_texts;
  for (const auto& [key_handle, value] : given) {
    const Keyword& keyword = keyword_of(function, key_handle, keywords);
    if (value.is_none()) continue;
    if (keyword.switch_only) {
      if (!py::isinstance<py::bool_>(value)) {
        throw py::type_error(speaker(function) + ": " + keyword.name +
                             " is a switch: True, False or None, not " +
                             std::string(py::str(value.get_type().attr("__name__"))));
      }
      if (value.cast<bool>()) args.push_back(keyword.flag);
      continue;
    }
    // One argument, --flag=value: a value that begins with '-' is the flag's value, never read
    // as a flag of its own.
    const bool takes_dict =
        std::find(file_keywords.begin(), file_keywords.end(), keyword.name) != file_keywords.end();
    if (takes_dict && py::isinstance<py::dict>(value)) {
      if (nesting(value, zerodp::kMaxJsonDepth) > zerodp::kMaxJsonDepth) {
        throw py::value_error(speaker(function) + ": " + keyword.name +
                              ": expected a config nested at most " +
                              std::to_string(zerodp::kMaxJsonDepth) + " deep");
      }
      // Lent to the command line as text in memory (output.h), no temporary file.
      inline_texts[keyword.flag] =
          py::str(py::module_::import("json").attr("dumps")(value)).cast<std::string>();
      args.push_back(keyword.flag + "=" + std::string(zerodp::cli::kInlineFile));
    } else {
      args.push_back(keyword.flag + "=" + flag_text(function, keyword.name, value));
    }
  }
  const Output result = run_command(std::move(args), std::move(inline_texts));

  // Lines on stderr of a run that succeeded are warnings; a failure's last line is its message.
  std::vector<std::string> lines;
  for (std::size_t at = 0; at < result.err.size();) {
    std::size_t end = result.err.find('\n', at);
    if (end == std::string::npos) end = result.err.size();
    if (end > at) lines.push_back(in_keywords(result.err.substr(at, end - at), function, keywords));
    at = end + 1;
  }
  if (result.status != 0) {
    const std::string message =
        lines.empty() ? speaker(function) + ": failed with status " + std::to_string(result.status)
                      : lines.back();
    if (result.status == 2) throw py::value_error(message);
    throw std::runtime_error(message);
  }
  const py::object warn = py::module_::import("warnings").attr("warn");
  for (const std::string& line : lines)
    warn(line, py::module_::import("builtins").attr("UserWarning"), 2);
  return py::module_::import("json").attr("loads")(result.out);
}

// The Python face of a command: a function whose signature lists the command's keywords, each
// keyword-only with None (not given) for its default, and whose help says each one's type and
// what the command line takes when it is not given.
constexpr const char* kWrap = R"(
import inspect as _inspect

def _wrap(name, implementation, keywords, summary):
    def function(**keywords_given):
        return implementation(**keywords_given)
    parameters = []
    lines = [summary, "", "Keywords (each a flag of the command line; None leaves it out):"]
    for keyword, switch, type_name, help_text in keywords:
        annotation = "bool" if switch else ("str | int | float" if type_name != "FILE"
                                            else "str | os.PathLike | dict")
        parameters.append(_inspect.Parameter(keyword, _inspect.Parameter.KEYWORD_ONLY,
                                             default=None, annotation=annotation))
        shown = "True/False" if switch else type_name or "VALUE"
        lines.append(f"  {keyword} ({annotation}; {shown}): {help_text}")
    function.__name__ = function.__qualname__ = name
    function.__module__ = "zerodp"
    function.__doc__ = "\n".join(lines)
    function.__signature__ = _inspect.Signature(parameters)
    return function
)";

py::object wrap(py::module_& m, const char* name, const py::cpp_function& implementation,
                const std::vector<Keyword>& keywords, const std::string& summary) {
  py::list table;
  for (const Keyword& k : keywords) {
    // The help in keywords too: "with --model" reads "with model".
    table.append(
        py::make_tuple(k.name, k.switch_only, k.type, in_keywords(k.help, name, keywords)));
  }
  py::dict scope;
  py::exec(kWrap, scope);
  return scope["_wrap"](name, implementation, table, summary);
}

}  // namespace

PYBIND11_MODULE(zerodp, m) {
  pthread_atfork(before_fork, after_fork, after_fork);
  m.doc() =
      "zerodp: ZeRO data parallelism planned and measured. plan() and predict_peak() return what "
      "`zerodp plan --json` and `zerodp train --dry-run --json` print (docs/python.md).";
  // The keywords, read once from the command line's own options (they do not change).
  static const std::vector<Keyword> plan_keywords = keywords_of("plan");
  static const std::vector<Keyword> train_keywords = keywords_of("train");
  m.attr("plan") = wrap(
      m, "plan", py::cpp_function([](const py::kwargs& given) {
        return call("plan", {"zerodp", "plan", "--json"}, given,
                    {"deepspeed_config", "model_config", "adapter_config"}, plan_keywords);
      }),
      plan_keywords,
      "plan(**keywords) -> dict: `zerodp plan --json` with each keyword a flag (seq_len=4096 is "
      "--seq-len 4096); deepspeed_config, model_config and adapter_config take a path or a dict. A "
      "keyword that "
      "is not one, or a value of the wrong type, raises TypeError; a value the planner refuses, "
      "ValueError with its line in keywords.");
  m.attr("predict_peak") = wrap(
      m, "predict_peak", py::cpp_function([](const py::kwargs& given) {
        return call("predict_peak", {"zerodp", "train", "--dry-run", "--json"}, given, {},
                    train_keywords);
      }),
      train_keywords,
      "predict_peak(**keywords) -> dict: the engine's predicted peak per rank, as `zerodp train "
      "--dry-run --json` prints it (nothing is trained).");
  m.def(
      "list_models",
      [] {
        return call("list_models", {"zerodp", "plan", "--list-models", "--json"}, py::kwargs(), {},
                    plan_keywords);
      },
      "list_models() -> list of dict: the published models plan(model=...) knows.");
  m.def(
      "list_gpus",
      [] {
        return call("list_gpus", {"zerodp", "plan", "--list-gpus", "--json"}, py::kwargs(), {},
                    plan_keywords);
      },
      "list_gpus() -> list of dict: the GPUs plan(gpu=...) knows, with the memory each reports.");
  m.def(
      "list_links",
      [] {
        return call("list_links", {"zerodp", "plan", "--list-links", "--json"}, py::kwargs(), {},
                    plan_keywords);
      },
      "list_links() -> list of dict: the links plan(intra_node=..., inter_node=...) knows, with "
      "the rates the step is timed at and their sources.");
}
