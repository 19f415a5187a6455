// The planner's WebAssembly entry points, called by the page (web/app.js).
//
// zerodp_run(argv_json) runs one command line exactly as the native executable does, through
// the same run_command_line() (app.h), and returns {"status", "stdout", "stderr"} as JSON:
// the page's numbers and messages are the CLI's by construction. argv_json is a JSON array of
// strings without the program name, e.g. ["plan", "--params", "1e9", "--json"].
//
// zerodp_options(command) lists a command's options ({"name", "help", "type", "flag"}), so the
// page builds a field for every flag the command has, including ones added after the page.
//
// Both return a pointer to a string that stays valid until the next call of either.
#include <emscripten/emscripten.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "app.h"

namespace {

std::string reply;

std::string take_file(const char* path) {
  std::ifstream file(path, std::ios::binary);
  std::ostringstream all;
  all << file.rdbuf();
  std::remove(path);
  return all.str();
}

const char* answer(const nlohmann::json& j) {
  // A message may quote bytes of the user's that are not UTF-8: replace them, do not throw.
  reply = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return reply.c_str();
}

}  // namespace

extern "C" {

EMSCRIPTEN_KEEPALIVE const char* zerodp_run(const char* argv_json) {
  std::vector<std::string> args{"zerodp"};
  try {
    for (const auto& arg : nlohmann::json::parse(argv_json)) args.push_back(arg.get<std::string>());
  } catch (const nlohmann::json::exception& e) {
    return answer({{"status", 2}, {"stdout", ""}, {"stderr", std::string("zerodp: ") + e.what()}});
  }
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);

  // The commands print with stdio and iostreams: send both streams to files in the in-memory
  // file system for the length of the run, and read them back byte for byte.
  std::fflush(stdout);
  std::fflush(stderr);
  if (!std::freopen("/tmp/zerodp.stdout", "w", stdout) ||
      !std::freopen("/tmp/zerodp.stderr", "w", stderr)) {
    return answer({{"status", 1}, {"stdout", ""}, {"stderr", "zerodp: cannot capture output"}});
  }
  const int status = zerodp::cli::run_command_line(int(args.size()), argv.data());
  std::cout.flush();
  std::cerr.flush();
  std::fflush(stdout);
  std::fflush(stderr);
  return answer({{"status", status},
                 {"stdout", take_file("/tmp/zerodp.stdout")},
                 {"stderr", take_file("/tmp/zerodp.stderr")}});
}

EMSCRIPTEN_KEEPALIVE const char* zerodp_options(const char* command) {
  CLI::App app;
  zerodp::cli::build_app(app);
  nlohmann::json options = nlohmann::json::array();
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (sub->get_name() != command) continue;
    for (const CLI::Option* option : sub->get_options()) {
      if (option->get_name() == "--help") continue;
      options.push_back({{"name", option->get_name()},
                         {"help", option->get_description()},
                         {"type", option->get_type_name()},
                         {"flag", option->get_expected_min() == 0}});
    }
  }
  return answer(options);
}

}  // extern "C"
