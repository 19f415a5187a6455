// zerodp-engine: every command, the engine's with the planner's. The executable zerodp runs it
// for the engine's commands with the command line it was given (engine_exec.h); it is also
// the program the Python module's and the tests' in-process calls match.
#include "app.h"
#include "process_start.h"

int main(int argc, char** argv) {
  zerodp::cli::start_process();  // standard streams open, file-size limit as EFBIG
  return zerodp::cli::run_command_line(argc, argv);
}
