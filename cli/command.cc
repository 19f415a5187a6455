#include "command.h"

namespace zerodp::cli {

std::vector<CommandRegistration>& command_registry() {
  static std::vector<CommandRegistration> registry;
  return registry;
}

bool register_command(int order, std::function<void(CLI::App& root)> add) {
  command_registry().push_back({order, std::move(add)});
  return true;
}

}  // namespace zerodp::cli
