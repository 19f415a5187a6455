// Must not compile: checkpoints are above the engine (the engine knows no files).
#include "zerodp/checkpoint/checkpoint.h"
