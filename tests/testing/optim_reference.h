// Runs scripts/optim_reference.py, the published optimizers' steps the optim tests compare with
// (reference_test.cc, blockwise8_test.cc), on Debian's /usr/bin/python3, whose python3-torch
// `make setup-test` installs.
#pragma once

#include <cstdio>
#include <string>

namespace zerodp::testing {

inline constexpr const char* kReferencePython = "/usr/bin/python3";

// `first` is the script's first argument (a cases file, or "maps"), `folder` its second. Returns
// what the script printed ("done\n" when it ran), with its exit status when that is not 0.
inline std::string run_optim_reference(const std::string& first, const std::string& folder) {
  const std::string command = std::string(kReferencePython) + " " + ZERODP_SOURCE_DIR +
                              "/scripts/optim_reference.py '" + first + "' '" + folder + "' 2>&1";
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return "popen failed";
  char buffer[4096];
  while (const std::size_t n = fread(buffer, 1, sizeof buffer, pipe)) out.append(buffer, n);
  const int status = pclose(pipe);
  return status == 0 ? out : out + " (exit status " + std::to_string(status) + ")";
}

}  // namespace zerodp::testing
