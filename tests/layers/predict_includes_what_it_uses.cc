// Must compile: the engine's predictor sees the planner's step model, whose compute over a rate
// its step from kernel rates uses.
#include "zerodp/plan/step_model.h"
#include "zerodp/predict/schedule.h"
