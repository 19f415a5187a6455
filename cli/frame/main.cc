// zerodp: the ZeRO planner and engine, one executable with a subcommand per job.
#include "app.h"

int main(int argc, char** argv) {
  return zerodp::cli::run_command_line(argc, argv);
}
