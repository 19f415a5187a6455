// What both executables (zerodp and zerodp-engine) settle before anything else runs, so that
// no later write can go astray.
//
// Contract: start_process() is called first in main(). After it:
//  - descriptors 0, 1 and 2 are open. A program started with one of them closed would hand
//    that number to the next file it opens (a checkpoint folder's .zerodp-lock, a shard), and
//    its progress and summary would be written into that file. A closed stdin is /dev/null;
//    a closed stdout or stderr is /dev/null opened for reading only, so every write to it fails
//    (EBADF) and the write checks report the output as lost (exit 1) instead of writing it
//    anywhere. When /dev/null cannot be opened the process exits with status 1.
//  - SIGXFSZ is ignored: a write past a file-size limit (ulimit -f) fails with EFBIG, which
//    every write of a checkpoint, an export or a curve handles as it handles a full disk (no
//    half-written file left), instead of the signal ending the process in the middle of a save.
#pragma once

namespace zerodp::cli {

void start_process();

}  // namespace zerodp::cli
