// The command line shared by every front end: build_app() and run_command_line() (app.h).
#include "app.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <memory>
#include <mutex>
#include <new>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>

#include "command.h"
#include "help.h"
#include "output.h"
#include "zerodp/common/error.h"

namespace {

using zerodp::cli::err;

// This thread's streams during a call (output.h); nullptr outside one, read as stdout, stderr.
thread_local std::FILE* call_out = nullptr;
thread_local std::FILE* call_err = nullptr;
// The most of a parser's message printed: its sentence and the start of what it quotes.
constexpr std::size_t kParseErrorChars = 200;

// The texts lent for file flags on this thread (output.h), innermost first.
thread_local const zerodp::cli::InlineFiles* inline_files = nullptr;

// The exception being handled, as one line on err() and an exit status: 2 for bad input,
// 1 for a failed run. No library's words (std::bad_alloc, a parser's) reach the user alone.
int report_failure() {
  try {
    throw;
  } catch (const zerodp::UsageError& e) {
    // Every message as one line that cannot drive the terminal, whatever part of it came from
    // the user or a file (a path, a manifest field): messages that quote() already hold none.
    std::fprintf(err(), "zerodp: %s\n",
                 zerodp::escape_controls(zerodp::cli::flag_message(e)).c_str());
    return 2;
  } catch (const zerodp::Error& e) {
    std::fprintf(err(), "zerodp: error: %s\n",
                 zerodp::escape_controls(zerodp::cli::flag_message(e)).c_str());
  } catch (const std::filesystem::filesystem_error& e) {
    std::fprintf(err(), "zerodp: error: %s: %s\n", zerodp::quote(e.path1().string()).c_str(),
                 e.code().message().c_str());
  } catch (const std::bad_alloc&) {
    // check_memory() refuses the runs it can foresee; this is one it could not.
    std::fprintf(err(),
                 "zerodp: error: out of memory: this machine cannot hold the run; try a smaller "
                 "--micro-batch or model, or fewer --ranks\n");
  } catch (const std::length_error&) {
    std::fprintf(err(),
                 "zerodp: error: out of memory: a buffer of the run is larger than memory can "
                 "hold; try a smaller --micro-batch or model\n");
  } catch (const std::exception& e) {
    std::fprintf(err(), "zerodp: error: unexpected failure, please report it (%s)\n",
                 zerodp::quote(e.what()).c_str());
  }
  return 1;
}

}  // namespace

namespace zerodp::cli {

std::FILE* out() {
  return call_out ? call_out : stdout;
}
std::FILE* err() {
  return call_err ? call_err : stderr;
}

InlineFiles::InlineFiles(std::map<std::string, std::string> text_by_flag)
    : text_by_flag_(std::move(text_by_flag)), outer_(inline_files) {
  inline_files = this;
}

InlineFiles::~InlineFiles() {
  inline_files = outer_;
}

const std::string* InlineFiles::text_for(std::string_view flag) {
  for (const InlineFiles* lent = inline_files; lent; lent = lent->outer_) {
    const auto found = lent->text_by_flag_.find(std::string(flag));
    if (found != lent->text_by_flag_.end()) return &found->second;
  }
  return nullptr;
}

std::string flag_of_field(std::string_view field) {
  // The fields whose flag is not their name with dashes.
  static constexpr std::pair<std::string_view, std::string_view> kRenamed[] = {
      {"clip_norm", "--clip"},
  };
  for (const auto& [name, flag] : kRenamed) {
    if (name == field) return std::string(flag);
  }
  std::string flag = "--";
  for (const char c : field) flag += c == '_' ? '-' : c;
  return flag;
}

std::string flag_message(const Failure& failure) {
  return failure.message(flag_of_field);
}

void build_app(CLI::App& app) {
  app.formatter(std::make_shared<HelpFormatter>());
  app.description(
      "zerodp: ZeRO data parallelism. Plan the memory and traffic of each GPU under DP and "
      "ZeRO-1/2/3 before you rent the cluster, then train with stages 0-3 and measure them.");
  app.footer(
      "Examples:\n"
      "  zerodp plan --params 7.5B --gpus 64 --gpu-memory 80GB\n"
      "  zerodp plan --model llama-3-8b --gpus 8 --gpu a100-40gb --seq-len 4096\n"
      "  zerodp train --stage 3 --ranks 4 --rank-memory 40MB --dry-run\n\n"
      "Each command has its own --help; 'man zerodp' has them all.");
  app.require_subcommand(1);
  app.set_version_flag("-V,--version", version_line());
  auto& registry = zerodp::cli::command_registry();
  // Sorted once: several threads may build apps at once (the Python module's calls).
  static std::once_flag sorted;
  std::call_once(sorted, [&registry] {
    std::sort(registry.begin(), registry.end(),
              [](const auto& a, const auto& b) { return a.order < b.order; });
  });
  for (const auto& command : registry) command.add(app);
  // A front end without the engine (the executable zerodp, the web page) still lists the
  // engine's commands, and says where they run when one is called.
  for (const std::string_view name : kEngineCommands) {
    const auto subs =
        app.get_subcommands([name](const CLI::App* sub) { return sub->get_name() == name; });
    if (!subs.empty()) continue;
    CLI::App* stand_in = app.add_subcommand(std::string(name));
    describe_command(*stand_in);
    stand_in->allow_extras();
    stand_in->callback([name] {
      throw Error("'" + std::string(name) +
                  "' is the engine's command, which this program does not hold: it runs in "
                  "zerodp-engine (the package zerodp-engine; docs/install.md)");
    });
  }
  zerodp::cli::refuse_empty_values(app);
  zerodp::cli::name_values(app);
}

int run_command_line(int argc, char** argv) {
  return run_command_line(argc, argv, stdout, stderr);
}

int run_command_line(int argc, char** argv, std::FILE* out_stream, std::FILE* err_stream) {
  // This thread's streams for the call, put back however it ends.
  struct Streams {
    std::FILE *out, *err;
    ~Streams() {
      call_out = out;
      call_err = err;
    }
  } restore{call_out, call_err};
  call_out = out_stream;
  call_err = err_stream;
  CLI::App app;
  build_app(app);
  // CLI11 prints help and the version to C++ streams: taken as text, written to this call's.
  auto exit_with = [&app](const CLI::Error& e) {
    std::ostringstream help, error;
    const int status = app.exit(e, help, error);
    std::fputs(help.str().c_str(), out());
    std::fputs(error.str().c_str(), err());
    return status;
  };
  if (argc <= 1) {  // `zerodp` alone: what it does and how to ask
    std::fputs(short_usage().c_str(), err());
    return 2;
  }
  try {
    zerodp::cli::check_command_name(app, argc, argv);
    zerodp::cli::check_flag_names(app, argc, argv);
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return exit_with(e);
  } catch (const CLI::CallForAllHelp& e) {
    return exit_with(e);
  } catch (const CLI::CallForVersion& e) {
    return exit_with(e);
  } catch (const CLI::ParseError& e) {
    // The parser's words quote what was typed whole (100,000 stray words): cut, as values are.
    std::fprintf(err(), "zerodp: %s (%s)\n",
                 zerodp::escape_controls(zerodp::cut_long(e.what(), kParseErrorChars)).c_str(),
                 zerodp::cli::help_hint(app, argc, argv).c_str());
    return 2;
  } catch (...) {
    return report_failure();
  }
  // What the command was asked to print is a promise: a full disk or a closed reader
  // (`plan --json > /dev/full`) is a failed run, said in one line, not an exit 0 with the output
  // lost.
  errno = 0;
  if (std::fflush(out()) != 0 || std::ferror(out())) {
    const int cause = errno;
    std::fprintf(err(), "zerodp: error: cannot write the output: %s\n",
                 cause ? std::strerror(cause) : "a write to it failed");
    return 1;
  }
  return 0;
}

}  // namespace zerodp::cli
