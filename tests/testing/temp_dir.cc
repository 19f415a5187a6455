// Every test process gets a temporary folder of its own, so tests that name their files
// ("resume_cli_inject", "ckpt_keep", ...) never meet another process's files: ctest runs tests
// in parallel, and several build trees (release, ASan, TSan) may run at once on one machine.
// It is set before main() through TEST_TMPDIR (read by ::testing::TempDir()) and TMPDIR (read
// by std::filesystem::temp_directory_path() and inherited by the programs tests start), and
// removed with everything in it when the process exits.
#include <stdlib.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace {

std::string g_dir;

void remove_dir() {
  std::error_code ignored;
  std::filesystem::remove_all(g_dir, ignored);
}

const bool g_set = [] {
  const char* base = getenv("TMPDIR");
  std::string pattern = std::string(base && *base ? base : "/tmp") + "/zerodp-test-XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) return false;  // tests then use the default folder
  g_dir = pattern;
  setenv("TEST_TMPDIR", g_dir.c_str(), 1);
  setenv("TMPDIR", g_dir.c_str(), 1);
  atexit(remove_dir);
  return true;
}();

}  // namespace
