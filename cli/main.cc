// zerodp: the ZeRO planner and engine, one executable with a subcommand per job.
#include <algorithm>
#include <cstdio>
#include <exception>

#include "command.h"
#include "zerodp/error.h"

int main(int argc, char** argv) {
  CLI::App app{
      "zerodp: ZeRO data parallelism. Plan the memory and communication of each stage, then "
      "train with stages 0-3 and measure them."};
  app.require_subcommand(1);
  app.set_version_flag("--version", "zerodp 0.1.0");
  auto& registry = zerodp::cli::command_registry();
  std::sort(registry.begin(), registry.end(),
            [](const auto& a, const auto& b) { return a.order < b.order; });
  for (const auto& command : registry) command.add(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "zerodp: %s (see 'zerodp --help')\n", e.what());
    return 2;
  } catch (const zerodp::UsageError& e) {
    std::fprintf(stderr, "zerodp: %s\n", e.what());
    return 2;
  } catch (const zerodp::Error& e) {
    std::fprintf(stderr, "zerodp: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "zerodp: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
