// zerodp: the planner's executable. plan and plot run here; the engine's commands (train,
// measure, eval, sample, export) are handed to zerodp-engine (engine_exec.h), so a machine
// that only plans needs neither MPI nor BLAS.
#include "app.h"
#include "engine_exec.h"
#include "help.h"
#include "process_start.h"

int main(int argc, char** argv) {
  zerodp::cli::start_process();  // standard streams open, file-size limit as EFBIG
  if (argc > 1 && zerodp::cli::is_engine_command(argv[1])) {
    return zerodp::cli::exec_engine(argc, argv);
  }
  return zerodp::cli::run_command_line(argc, argv);
}
