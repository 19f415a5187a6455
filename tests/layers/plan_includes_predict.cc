// Must not compile: the engine's predictor reads the planner's step model, never the reverse.
#include "zerodp/predict/schedule.h"
