// Fuzz target: `zerodp plan` with any command line. The input is the words after "plan", one
// per line. The real command is registered (the library zerodp_cli_planner: CLI11, the plan
// flags' parsers and zerodp/common/units.h, make_plan() and the table or JSON it prints).
//
// Properties: the command either prints a plan or ends with CLI11's parse error or a
// UsageError of one line naming a flag, which main.cc turns into exit status 2; nothing else
// escapes, nothing crashes, no undefined behaviour. A plan printed with --json is valid JSON
// with four stages; a table is not empty.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "app.h"
#include "command.h"
#include "zerodp/common/error.h"

namespace {

[[noreturn]] void fail(const char* what, std::string_view detail) {
  std::fprintf(stderr, "plan_flags fuzzer: %s: %.*s\n", what, static_cast<int>(detail.size()),
               detail.data());
  std::abort();
}

// Collects what is printed on stdout while it lives.
class CapturedStdout {
 public:
  CapturedStdout() : memory_(open_memstream(&buffer_, &size_)), saved_(stdout) {
    if (memory_ == nullptr) std::abort();
    stdout = memory_;
  }
  ~CapturedStdout() {
    std::fclose(memory_);
    stdout = saved_;
    std::free(buffer_);
  }
  std::string text() {
    std::fflush(memory_);
    return std::string(buffer_, size_);
  }

 private:
  char* buffer_ = nullptr;
  std::size_t size_ = 0;
  FILE* memory_;
  FILE* saved_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> words = {"zerodp", "plan"};
  bool json = false;
  for (std::size_t start = 0; start <= text.size();) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    words.emplace_back(text.substr(start, end - start));
    json |= words.back() == "--json";
    start = end + 1;
  }
  if (words.size() > 66) return -1;  // a command line, not a file
  std::vector<const char*> argv;
  for (const std::string& w : words) argv.push_back(w.c_str());

  CLI::App app{"zerodp"};
  app.require_subcommand(1);
  for (const auto& command : zerodp::cli::command_registry()) command.add(app);

  bool planned = false;
  std::string out;
  try {
    CapturedStdout captured;
    app.parse(static_cast<int>(argv.size()), argv.data());
    out = captured.text();
    planned = true;
  } catch (const CLI::ParseError&) {
    // CLI11's own message: an unknown flag, a flag without its value, --help.
  } catch (const zerodp::UsageError& e) {
    const std::string message = zerodp::cli::flag_message(e);
    if (message.rfind("--", 0) != 0) fail("UsageError that does not start with a flag", message);
    if (message.find('\n') != std::string_view::npos) fail("UsageError of several lines", message);
  }
  if (planned) {
    if (out.empty()) fail("a plan printed nothing", text);
    // With --json the plan is one JSON object (a "--json" word may also be a flag's value,
    // and then a table is printed: it never starts with '{').
    if (json && out[0] == '{') {
      const auto parsed = nlohmann::json::parse(out, nullptr, false);
      if (parsed.is_discarded() || parsed["stages"].size() != 4) fail("JSON plan", out);
    }
  }
  return 0;
}
