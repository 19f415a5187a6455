// Runs the real `zerodp` executable as a user would and captures what it printed and its
// exit status. ctest runs tests as parallel processes: each run gets files of its own.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace zerodp::testing {

struct CliResult {
  int status = -1;
  std::string out, err;
  bool has(const std::string& what) const { return out.find(what) != std::string::npos; }
};

inline std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// `args` are shell words, quoted by the caller; `env` is prefixed as "NAME=value ".
inline CliResult run_zerodp(const std::string& args, const std::string& env = "") {
  static std::atomic<int> counter{0};
  const std::string stem = ::testing::TempDir() + "/zerodp_cli_" + std::to_string(getpid()) + "_" +
                           std::to_string(counter++);
  const std::string out = stem + ".out", err = stem + ".err";
  const std::string command =
      "(" + env + "'" + ZERODP_BIN + "' " + args + ") >'" + out + "' 2>'" + err + "'";
  const int raw = std::system(command.c_str());
  CliResult r;
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  std::remove(out.c_str());
  std::remove(err.c_str());
  return r;
}

}  // namespace zerodp::testing
