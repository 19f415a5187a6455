// Where a command's words go: out() for its result, err() for its warnings and its one line of
// failure.
//
// Contract: both are the calling thread's, set for the length of one run_command_line() call
// (app.h) and stdout / stderr outside one. A front end that runs several command lines at once
// (the Python module, from several threads) gives each call its own streams, and no call's
// words reach another's, nor the process's file descriptors 1 and 2. Every print of the
// command line goes through them; none writes to stdout or stderr by name.
#pragma once

#include <cstdio>

namespace zerodp::cli {

std::FILE* out();
std::FILE* err();

}  // namespace zerodp::cli
