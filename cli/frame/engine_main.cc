// zerodp-engine: every command, the engine's with the planner's. The executable zerodp runs it
// for the engine's commands with the command line it was given (engine_exec.h); it is also
// the program the Python module's and the tests' in-process calls match.
#include <csignal>

#include "app.h"

int main(int argc, char** argv) {
  // A file-size limit (ulimit -f) makes a write past it fail with EFBIG, which every write of
  // a checkpoint, an export or a curve handles as it handles a full disk (no half-written file
  // left), instead of SIGXFSZ ending the process in the middle of a save.
  std::signal(SIGXFSZ, SIG_IGN);
  return zerodp::cli::run_command_line(argc, argv);
}
