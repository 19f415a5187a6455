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

// Where zerodp-engine may be, in order: beside this executable (a build folder), then in
// ../lib/zerodp/ from it (an install under any prefix: /usr/bin/zerodp ->
// /usr/lib/zerodp/zerodp-engine). `self` is this executable's path.
std::vector<std::string> engine_candidates(const std::string& self);

int exec_engine(int argc, char** argv);

}  // namespace zerodp::cli
