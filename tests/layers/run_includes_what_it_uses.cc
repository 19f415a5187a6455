// Must compile: the run part uses the planner, checkpoints and everything below them.
#include "zerodp/checkpoint.h"
#include "zerodp/comm.h"
#include "zerodp/engine.h"
#include "zerodp/predict/peak.h"
#include "zerodp/run/training.h"
