// `import zerodp`: the planner and the engine's peak prediction from Python, as the command line
// gives them.
//
// Contract:
//  - plan(**flags) returns what `zerodp plan --json` prints, parsed by Python's json module, and
//    predict_peak(**flags) what `zerodp train --dry-run --json` prints: each call runs the same
//    run_command_line() as the executable (cli/planner/app.h), so the dict, its numbers and its
//    refusals are the command line's by construction. list_models() and list_gpus() are
//    `plan --list-models --json` and `plan --list-gpus --json`.
//  - A keyword is a long flag with underscores for dashes (seq_len is --seq-len). Its value:
//    True gives the flag alone and False or None leaves it out; a number or a string is the
//    flag's text (a float with no fraction as a whole number: 1e9 is "1000000000"); a list or
//    tuple is joined with commas; a path-like object is its path. deepspeed_config and
//    model_config also take a dict, written as JSON to a private temporary file (mode 0600)
//    for the length of the call.
//  - Bad input raises ValueError whose text is the command line's one line ("zerodp: --gpus:
//    ..."); a run that fails raises RuntimeError with its line; lines the command line prints
//    as warnings become Python warnings (UserWarning).
//  - Thread-safety: a call sends the process's file descriptors 1 and 2 to private files while
//    it runs, with the GIL held, so calls are serialised and other Python threads do not run
//    meanwhile; output of other native threads during a call is taken into it and dropped.
#include <fcntl.h>
#include <pybind11/pybind11.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "app.h"

namespace py = pybind11;

namespace {

// A file with no name (memfd) that stands in for fd 1 or fd 2 during a call.
class Capture {
 public:
  Capture(int target, const char* name) : target_(target) {
    file_ = memfd_create(name, MFD_CLOEXEC);
    saved_ = file_ < 0 ? -1 : dup(target);
    if (file_ < 0 || saved_ < 0 || dup2(file_, target) < 0) {
      throw std::runtime_error(std::string("zerodp: cannot capture the output: ") +
                               std::strerror(errno));
    }
  }
  Capture(const Capture&) = delete;
  Capture& operator=(const Capture&) = delete;
  ~Capture() {
    restore();
    if (file_ >= 0) close(file_);
  }

  // Puts the original descriptor back and returns everything written meanwhile.
  std::string take() {
    restore();
    std::string all;
    char chunk[65536];
    for (off_t at = 0;;) {
      const ssize_t n = pread(file_, chunk, sizeof chunk, at);
      if (n <= 0) break;
      all.append(chunk, std::size_t(n));
      at += n;
    }
    return all;
  }

 private:
  void restore() {
    if (saved_ < 0) return;
    dup2(saved_, target_);
    close(saved_);
    saved_ = -1;
  }
  int target_;
  int file_ = -1;
  int saved_ = -1;
};

struct Output {
  int status = 0;
  std::string out, err;
};

// One command line, run in this process with its output captured.
Output run_captured(std::vector<std::string> args) {
  // What Python or C++ buffered before the call is written where it was meant to go.
  py::module_::import("sys").attr("stdout").attr("flush")();
  py::module_::import("sys").attr("stderr").attr("flush")();
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);

  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);

  Output result;
  Capture out(STDOUT_FILENO, "zerodp-stdout");
  Capture err(STDERR_FILENO, "zerodp-stderr");
  result.status = zerodp::cli::run_command_line(int(args.size()), argv.data());
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  result.out = out.take();
  result.err = err.take();
  return result;
}

// A dict given for a file flag: JSON in a private temporary file, removed with this object.
class TemporaryJson {
 public:
  explicit TemporaryJson(const py::handle& value) {
    const std::string text = py::str(py::module_::import("json").attr("dumps")(value));
    const char* dir = std::getenv("TMPDIR");
    path_ = std::string(dir && *dir ? dir : "/tmp") + "/zerodp-XXXXXX.json";
    const int fd = mkstemps(path_.data(), 5);  // O_EXCL, mode 0600
    if (fd < 0) {
      throw std::runtime_error("zerodp: cannot write a temporary config: " +
                               std::string(std::strerror(errno)));
    }
    const bool written = write(fd, text.data(), text.size()) == ssize_t(text.size());
    close(fd);
    if (!written) {
      unlink(path_.c_str());
      throw std::runtime_error("zerodp: cannot write a temporary config: " + path_);
    }
  }
  TemporaryJson(const TemporaryJson&) = delete;
  TemporaryJson& operator=(const TemporaryJson&) = delete;
  ~TemporaryJson() { unlink(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A value's text as the flag takes it.
std::string flag_text(const std::string& flag, const py::handle& value) {
  if (py::isinstance<py::int_>(value)) return py::str(value);
  if (py::isinstance<py::float_>(value)) {
    const double d = value.cast<double>();
    // 1e9 reads as a count, as the command line's "1e9" does; 0.6 stays 0.6.
    if (py::bool_(value.attr("is_integer")()) && d > -9.2e18 && d < 9.2e18) {
      return std::to_string(static_cast<long long>(d));
    }
    return py::repr(value);
  }
  if (py::isinstance<py::str>(value)) return value.cast<std::string>();
  if (py::hasattr(value, "__fspath__")) {
    return py::str(py::module_::import("os").attr("fspath")(value));
  }
  if (py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value)) {
    std::string joined;
    for (const py::handle& item : value) {
      joined += (joined.empty() ? "" : ",") + flag_text(flag, item);
    }
    return joined;
  }
  throw py::value_error("zerodp: " + flag +
                        ": expected a number, a string, a list or a path, got " +
                        std::string(py::str(value.get_type().attr("__name__"))));
}

// Keywords that the functions set themselves, or that print something other than the dict.
bool reserved(const std::string& key) {
  for (const char* r : {"json", "help", "link", "dry_run", "list_models", "list_gpus", "version"}) {
    if (key == r) return true;
  }
  return false;
}

// `zerodp <command> <fixed...> --flag value ...`, run; the JSON it prints, as Python objects.
py::object call(const char* function, std::vector<std::string> args, const py::kwargs& flags,
                const std::vector<std::string>& file_flags) {
  std::vector<std::unique_ptr<TemporaryJson>> files;
  for (const auto& [key_handle, value] : flags) {
    const std::string key = py::str(key_handle);
    if (reserved(key)) {
      throw py::value_error(std::string("zerodp: ") + function + "() sets " + key +
                            " itself; leave it out");
    }
    std::string flag = "--" + key;
    for (char& c : flag) c = c == '_' ? '-' : c;
    if (value.is_none()) continue;
    if (py::isinstance<py::bool_>(value)) {
      if (value.cast<bool>()) args.push_back(flag);
      continue;
    }
    args.push_back(flag);
    const bool takes_dict =
        std::find(file_flags.begin(), file_flags.end(), key) != file_flags.end();
    if (takes_dict && py::isinstance<py::dict>(value)) {
      files.push_back(std::make_unique<TemporaryJson>(value));
      args.push_back(files.back()->path());
    } else {
      args.push_back(flag_text(flag, value));
    }
  }
  const Output result = run_captured(std::move(args));

  // Lines on stderr of a run that succeeded are warnings; a failure's last line is its message.
  std::vector<std::string> lines;
  for (std::size_t at = 0; at < result.err.size();) {
    std::size_t end = result.err.find('\n', at);
    if (end == std::string::npos) end = result.err.size();
    if (end > at) lines.push_back(result.err.substr(at, end - at));
    at = end + 1;
  }
  if (result.status != 0) {
    const std::string message = lines.empty()
                                    ? "zerodp: failed with status " + std::to_string(result.status)
                                    : lines.back();
    if (result.status == 2) throw py::value_error(message);
    throw std::runtime_error(message);
  }
  const py::object warn = py::module_::import("warnings").attr("warn");
  for (const std::string& line : lines)
    warn(line, py::module_::import("builtins").attr("UserWarning"), 2);
  return py::module_::import("json").attr("loads")(result.out);
}

}  // namespace

PYBIND11_MODULE(zerodp, m) {
  m.doc() =
      "zerodp: ZeRO data parallelism planned and measured. plan() and predict_peak() return what "
      "`zerodp plan --json` and `zerodp train --dry-run --json` print (docs/python.md).";
  m.def(
      "plan",
      [](const py::kwargs& flags) {
        return call("plan", {"zerodp", "plan", "--json"}, flags,
                    {"deepspeed_config", "model_config"});
      },
      "plan(**flags) -> dict: `zerodp plan --json` with each keyword a flag (seq_len=4096 is "
      "--seq-len 4096); deepspeed_config and model_config take a path or a dict. Bad input "
      "raises ValueError with the command line's message.");
  m.def(
      "predict_peak",
      [](const py::kwargs& flags) {
        return call("predict_peak", {"zerodp", "train", "--dry-run", "--json"}, flags, {});
      },
      "predict_peak(**flags) -> dict: the engine's predicted peak per rank, as `zerodp train "
      "--dry-run --json` prints it (nothing is trained).");
  m.def(
      "list_models",
      [] {
        return call("list_models", {"zerodp", "plan", "--list-models", "--json"}, py::kwargs(), {});
      },
      "list_models() -> list of dict: the published models plan(model=...) knows.");
  m.def(
      "list_gpus",
      [] {
        return call("list_gpus", {"zerodp", "plan", "--list-gpus", "--json"}, py::kwargs(), {});
      },
      "list_gpus() -> list of dict: the GPUs plan(gpu=...) knows, with the memory each reports.");
}
