// Must not compile: the catalogue of published models stands beside DeepSpeed, not on it.
#include "zerodp/deepspeed/runtime.h"
