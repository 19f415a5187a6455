// Must not compile: the model is below the engine (it never knows it is sharded).
#include "zerodp/zero/engine.h"
