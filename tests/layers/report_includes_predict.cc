// Must not compile: the plan for GPUs (make_plan) is not zerodp's own engine; its peak is
// predict's, and only the run part puts the two side by side.
#include "zerodp/predict/peak.h"
