// Must not compile: the seed's planner is the formulas of ZeRO; DeepSpeed's reading of them
// sits a floor above it.
#include "zerodp/deepspeed/config.h"
