// A graceful stop on the signals a scheduler sends before it kills: SIGTERM (Slurm, Kubernetes,
// mpirun) and SIGINT (Ctrl-C), and on SIGPIPE, the sign that the reader of the output has gone
// (`train | head -1`). The first one only records a request, which `train` reads at every step
// and the ranks agree on through the engine (Engine::step's stop_requested), so every rank
// stops after the same step, saves and reports. A second SIGTERM or SIGINT ends the process at
// once, with the signal's default action; SIGPIPE, which every later write to the gone reader
// raises again, never does (those writes fail with EPIPE).
//
// Contract: install() once per process, before the ranks start; received() is safe from any
// thread (the threads backend runs every rank in one process, so one request stops them all).
#pragma once

namespace zerodp::run::stop_signal {

// Handles SIGTERM, SIGINT and SIGPIPE as above, from now on; SIGINT stays ignored if it was (a shell's
// background job).
void install();
// The run has stopped and reported: a signal from now on ends the process at once, without
// a word (mpirun sends SIGTERM to the ranks still exiting once one has exited with 143).
void ending();
// The first stop signal received (SIGTERM, SIGINT or SIGPIPE), or 0 while none has been.
int received();
// "SIGTERM", "SIGINT", "SIGPIPE".
const char* name(int signal);
// The exit status of a run stopped by `signal`: 128 + its number, as a shell reports a process
// the signal ended (143 for SIGTERM, 130 for SIGINT, 141 for SIGPIPE), so schedulers read it
// the same way.
int exit_status(int signal);

}  // namespace zerodp::run::stop_signal
