#include "engine_exec.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "zerodp/common/error.h"

namespace zerodp::cli {

std::vector<std::string> engine_candidates(const std::string& self) {
  const std::filesystem::path dir = std::filesystem::path(self).parent_path();
  return {(dir / "zerodp-engine").string(),
          (dir / ".." / "lib" / "zerodp" / "zerodp-engine").lexically_normal().string()};
}

int exec_engine(int argc, char** argv) {
  std::error_code ec;
  // The executable itself, not argv[0]: a name found on PATH or a link to it says nothing of
  // where its engine is.
  const std::string self = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  std::string tried;
  for (const std::string& engine : engine_candidates(self)) {
    if (::access(engine.c_str(), X_OK) == 0) {
      ::execv(engine.c_str(), argv);
      std::fprintf(stderr, "zerodp: error: cannot run %s: %s\n", quote(engine).c_str(),
                   std::strerror(errno));
      return 1;
    }
    tried += (tried.empty() ? "" : " or ") + quote(engine);
  }
  std::fprintf(stderr,
               "zerodp: error: '%s' is a command of the engine, which is not installed here (no "
               "%s): install the package zerodp-engine, or build it (make); plan and plot "
               "need only zerodp\n",
               escape_controls(argc > 1 ? argv[1] : "").c_str(), tried.c_str());
  return 1;
}

}  // namespace zerodp::cli
