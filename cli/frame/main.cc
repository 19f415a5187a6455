// zerodp: the planner's executable. plan and plot run here; the engine's commands (train,
// measure, eval, sample, export) are handed to zerodp-engine (engine_exec.h), so a machine
// that only plans needs neither MPI nor BLAS.
#include <csignal>

#include "app.h"
#include "engine_exec.h"
#include "help.h"

int main(int argc, char** argv) {
  // A file-size limit (ulimit -f) makes a write past it fail with EFBIG, which every write of
  // a checkpoint, an export or a curve handles as it handles a full disk (no half-written file
  // left), instead of SIGXFSZ ending the process in the middle of a save.
  std::signal(SIGXFSZ, SIG_IGN);
  if (argc > 1 && zerodp::cli::is_engine_command(argv[1])) {
    return zerodp::cli::exec_engine(argc, argv);
  }
  return zerodp::cli::run_command_line(argc, argv);
}
