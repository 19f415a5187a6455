#include "command.h"

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

void check_command_name(const CLI::App& root, int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') return;
  std::string names;
  for (const CLI::App* command : root.get_subcommands({})) {
    if (command->get_name() == argv[1]) return;
    names += (names.empty() ? "" : ", ") + command->get_name();
  }
  throw UsageError("unknown command " + quote(argv[1]) + "; the commands are " + names +
                   " (see 'zerodp --help')");
}

void check_output_file(const std::string& path, const std::string& flag,
                       const std::string& expected) {
  if (const std::string why = unreplaceable_because(path); !why.empty()) {
    throw UsageError(flag + ": " + quote(path) + " " + why + "; give the path of " + expected);
  }
}

}  // namespace zerodp::cli
