// Must compile: the run part uses the planner, checkpoints and everything below them.
#include "zerodp/checkpoint/checkpoint.h"
#include "zerodp/comm/communicator.h"
#include "zerodp/predict/peak.h"
#include "zerodp/run/training.h"
#include "zerodp/zero/engine.h"
