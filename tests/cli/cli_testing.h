// Runs the real `zerodp` executable as a user would and captures what it printed and its
// exit status. ctest runs tests as parallel processes: each run gets files of its own.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "testing/temp_dir.h"

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

// `program` run with `args`, shell words quoted by the caller; `env` is prefixed as
// "NAME=value ".
inline CliResult run_program(const std::string& program, const std::string& args,
                             const std::string& env = "") {
  static std::atomic<int> counter{0};
  const std::string stem = ::testing::TempDir() + "/zerodp_cli_" + std::to_string(getpid()) + "_" +
                           std::to_string(counter++);
  const std::string out = stem + ".out", err = stem + ".err";
  const std::string command =
      "(" + env + "'" + program + "' " + args + ") >'" + out + "' 2>'" + err + "'";
  const int raw = std::system(command.c_str());
  CliResult r;
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  std::remove(out.c_str());
  std::remove(err.c_str());
  return r;
}

// The built zerodp, as a user runs it.
inline CliResult run_zerodp(const std::string& args, const std::string& env = "") {
  return run_program(ZERODP_BIN, args, env);
}

inline CliResult zerodp(const std::string& args) {
  return run_zerodp(args);
}

// `zerodp plan ARGS --json`, which must succeed, parsed.
inline nlohmann::json plan_json(const std::string& args) {
  const CliResult r = run_zerodp("plan " + args + " --json");
  EXPECT_EQ(r.status, 0) << r.err;
  return nlohmann::json::parse(r.out);
}

inline std::uint64_t u64(const nlohmann::json& v) {
  return v.get<std::uint64_t>();
}

inline bool has(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

// The lines of `text`, without their line ends.
inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The widest line of `text` in bytes: a column each, for zerodp's ASCII output.
inline std::size_t widest_line(const std::string& text) {
  std::size_t most = 0;
  for (const std::string& line : lines_of(text)) most = std::max(most, line.size());
  return most;
}

// The number of lines of `text` (its newlines): an error must be one.
inline std::size_t line_count(const std::string& text) {
  std::size_t n = 0;
  for (const char c : text) n += c == '\n';
  return n;
}

// The "weights_sha256" of a run's --json line.
inline std::string weights_of(const CliResult& r) {
  return nlohmann::json::parse(r.out)["weights_sha256"].get<std::string>();
}

// `zerodp args` exits 2 with one line that holds `message` and no C++ type name.
inline void expect_refused(const std::string& args, const std::string& message) {
  const CliResult r = run_zerodp(args);
  EXPECT_EQ(r.status, 2) << args << ": " << r.err;
  EXPECT_NE(r.err.find(message), std::string::npos) << args << ": " << r.err;
  EXPECT_EQ(line_count(r.err), 1u) << args << ": " << r.err;
  EXPECT_EQ(r.err.find("std::"), std::string::npos) << args << ": " << r.err;
}

}  // namespace zerodp::testing
