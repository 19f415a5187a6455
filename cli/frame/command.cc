#include "command.h"

#include <algorithm>
#include <string_view>

#include "zerodp/common/error.h"
#include "zerodp/common/file.h"

namespace zerodp::cli {

std::vector<CommandRegistration>& command_registry() {
  static std::vector<CommandRegistration> registry;
  return registry;
}

bool register_command(int order, std::function<void(CLI::App& root)> add) {
  command_registry().push_back({order, std::move(add)});
  return true;
}

void refuse_empty_values(CLI::App& root) {
  for (CLI::App* command : root.get_subcommands({})) {
    for (CLI::Option* option : command->get_options()) {
      const std::string name = option->get_name();
      if (option->get_expected_min() == 0 || name == "--help" || name == "--prompt" ||
          (name == "--out" && command->get_name() == "train")) {
        continue;
      }
      option->check(CLI::Validator(
          [](std::string& value) {
            return value.empty() ? std::string("expected a value, got an empty one")
                                 : std::string();
          },
          ""));
    }
  }
}

namespace {

// Edits (insert, delete, substitute, swap two neighbours) between a and b: optimal string
// alignment distance, enough to catch the slips people make in a flag.
std::size_t edits(std::string_view a, std::string_view b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

// The candidate nearest to `typed`, if it is near: at most a third of its length in edits (at
// least one, at most three), or one that starts with what was typed (an abbreviation). Ties go
// to the first. Empty when none is.
std::string nearest(std::string_view typed, const std::vector<std::string>& candidates) {
  const std::size_t limit = std::clamp<std::size_t>(typed.size() / 3, 1, 3);
  std::string best;
  std::size_t best_edits = limit + 1;
  for (const std::string& c : candidates) {
    const std::size_t e = edits(typed, c);
    if (e < best_edits) best = c, best_edits = e;
  }
  if (!best.empty()) return best;
  if (typed.size() >= 4) {
    for (const std::string& c : candidates) {
      if (c.rfind(typed, 0) == 0) return c;
    }
  }
  return {};
}

const CLI::App* command_named(const CLI::App& root, int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') return nullptr;
  for (const CLI::App* command : root.get_subcommands({})) {
    if (command->get_name() == argv[1]) return command;
  }
  return nullptr;
}

}  // namespace

void name_values(CLI::App& root) {
  // COUNT is a whole number, written as 200 or 1e3; SIZE a size in bytes such as 2GiB.
  static constexpr std::pair<std::string_view, std::string_view> kNames[] = {
      {"--params", "COUNT"},
      {"--layers", "COUNT"},
      {"--heads", "COUNT"},
      {"--hidden", "COUNT"},
      {"--seq-len", "COUNT"},
      {"--steps", "COUNT"},
      {"--warmup", "COUNT"},
      {"--eval-every", "COUNT"},
      {"--eval-batches", "COUNT"},
      {"--log-every", "COUNT"},
      {"--save-every", "COUNT"},
      {"--keep", "COUNT"},
      {"--ranks", "COUNT"},
      {"--grad-accum", "COUNT"},
      {"--micro-batch", "COUNT"},
      {"--seed", "COUNT"},
      {"--data-seed", "COUNT"},
      {"--length", "COUNT"},
      {"--top-k", "COUNT"},
      {"--batch", "COUNT"},
      {"--bucket-bytes", "SIZE"},
      {"--rank-memory", "SIZE"},
      {"--data", "PATH"},
      {"--out", "PATH"},
      {"--save-dir", "DIR"},
      {"--resume", "PATH"},
      {"--checkpoint", "PATH"},
      {"--lr", "RATE"},
      {"--clip", "NORM"},
      {"--temperature", "T"},
      {"--timeout", "DURATION"},
      {"--link-delay", "DURATION"},
      {"--link-rate", "BANDWIDTH"},
      {"--stage", "S"},
      {"--backend", "KIND"},
      {"--precision", "FORMAT"},
      {"--model", "KIND"},
      {"--prompt", "TEXT"},
      {"--compute", "KIND"},
      {"--zeropp", "LIST"},
      {"--ranks-per-host", "COUNT"},
      {"--qwz-block", "COUNT"},
      {"--threads", "COUNT|auto"},
      {"--lora-rank", "R"},
      {"--lora-alpha", "A"},
      {"--lora-targets", "LIST"},
      {"--base", "PATH"},
      {"--quantize", "KIND"},
      {"--double-quant", "on|off"},
  };
  for (CLI::App* command : root.get_subcommands({})) {
    for (CLI::Option* option : command->get_options()) {
      if (option->get_type_name() != "TEXT") continue;
      for (const auto& [flag, name] : kNames) {
        if (option->check_lname(std::string(flag.substr(2)))) option->type_name(std::string(name));
      }
    }
  }
}

void check_command_name(const CLI::App& root, int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-' || command_named(root, argc, argv)) return;
  std::vector<std::string> names;
  for (const CLI::App* command : root.get_subcommands({})) names.push_back(command->get_name());
  std::string listed;
  for (const std::string& name : names) listed += (listed.empty() ? "" : ", ") + name;
  const std::string near = nearest(argv[1], names);
  throw UsageError("unknown command " + quote(argv[1]) + "; " +
                   (near.empty() ? "" : "did you mean " + quote(near) + "? ") +
                   "the commands are " + listed + " (see 'zerodp --help')");
}

void check_flag_names(const CLI::App& root, int argc, char** argv) {
  const CLI::App* command = command_named(root, argc, argv);
  if (command == nullptr) return;
  std::vector<std::string> flags;
  for (const CLI::Option* option : command->get_options()) {
    for (const std::string& name : option->get_lnames()) flags.push_back("--" + name);
  }
  for (int i = 2; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--") return;  // the rest are values
    if (arg.size() < 3 || arg.substr(0, 2) != "--") continue;
    const std::string flag(arg.substr(0, arg.find('=')));
    if (std::find(flags.begin(), flags.end(), flag) != flags.end()) continue;
    const std::string near = nearest(flag, flags);
    throw UsageError("unknown flag " + shown(flag) + " for " + command->get_name() +
                     (near.empty() ? " " : "; did you mean " + near + "? ") + "(see 'zerodp " +
                     command->get_name() + " --help')");
  }
}

std::string help_hint(const CLI::App& root, int argc, char** argv) {
  const CLI::App* command = command_named(root, argc, argv);
  return command ? "see 'zerodp " + command->get_name() + " --help'" : "see 'zerodp --help'";
}

void check_output_file(const std::string& path, const std::string& flag,
                       const std::string& expected) {
  if (const std::string why = unreplaceable_because(path); !why.empty()) {
    throw UsageError(flag + ": " + quote(path) + " " + why + "; give the path of " + expected);
  }
}

}  // namespace zerodp::cli
