// Must not compile: the planner is pure arithmetic, with no communicator.
#include "zerodp/comm/communicator.h"
