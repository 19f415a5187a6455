#include "engine_exec.h"

#include <sys/auxv.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "zerodp/common/error.h"

namespace zerodp::cli {

std::string own_path() {
  std::error_code ec;
  const std::string exe = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  if (!ec && !exe.empty() && exe.front() == '/') return exe;
  // The path execve() was given, which the kernel keeps for the program whether or not /proc
  // is mounted. Relative, it was relative to the folder the program started in, which a later
  // chdir or a hidden /proc leaves unknown: refused, as a name alone would be.
  const auto* execfn = reinterpret_cast<const char*>(::getauxval(AT_EXECFN));
  if (execfn != nullptr && execfn[0] == '/') return execfn;
  return {};
}

std::vector<std::string> engine_candidates(const std::string& self) {
  if (self.empty() || self.front() != '/') return {};
  const std::filesystem::path dir = std::filesystem::path(self).parent_path();
  return {(dir / "zerodp-engine").string(),
          (dir / ".." / "lib" / "zerodp" / "zerodp-engine").lexically_normal().string()};
}

int exec_engine(int argc, char** argv) {
  const std::string self = own_path();
  if (self.empty()) {
    std::fprintf(stderr,
                 "zerodp: error: '%s' is a command of the engine, and where this zerodp is "
                 "cannot be told (/proc/self/exe is unreadable and the program was started by a "
                 "relative path), so neither is its zerodp-engine: run zerodp by its full path, "
                 "or zerodp-engine itself\n",
                 escape_controls(argc > 1 ? argv[1] : "").c_str());
    return 1;
  }
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
