// Paths for a test's files, under the temporary folder of the test process's own (temp_dir.cc
// sets it before main), named by the test and this process's id.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace zerodp::testing {

// A path with nothing at it: whatever an earlier test left there is removed.
inline std::string fresh_path(const std::string& name) {
  const std::string path = ::testing::TempDir() + "/" + name + "_" + std::to_string(::getpid());
  std::filesystem::remove_all(path);
  return path;
}

// The same path as an empty folder.
inline std::string fresh_folder(const std::string& name) {
  const std::string dir = fresh_path(name);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace zerodp::testing
