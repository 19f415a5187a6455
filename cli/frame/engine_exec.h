// How the executable zerodp (the planner) runs the engine's commands: it replaces itself with
// zerodp-engine, given the same arguments, so the process, its PID (signals, mpirun), its
// streams and its exit status are the engine's as if zerodp had run the command itself.
//
// Contract: exec_engine() returns only when the engine cannot be run: it then prints one line
// saying where it looked and what to install, and returns 1.
#pragma once

#include <string>
#include <vector>

namespace zerodp::cli {

// This executable's absolute path: /proc/self/exe, else the absolute path it was started by
// (AT_EXECFN; a private mount namespace may hide /proc). Empty when neither tells: never
// argv[0], and never a path relative to the current folder, where anyone may have put a
// program named zerodp-engine.
std::string own_path();

// Where zerodp-engine may be, in order: beside this executable (a build folder), then in
// ../lib/zerodp/ from it (an install under any prefix: /usr/bin/zerodp ->
// /usr/lib/zerodp/zerodp-engine). `self` is this executable's absolute path; none for a
// relative or empty one.
std::vector<std::string> engine_candidates(const std::string& self);

int exec_engine(int argc, char** argv);

}  // namespace zerodp::cli
