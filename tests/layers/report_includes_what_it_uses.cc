// Must compile: the top of the planner sees the seed's planner, DeepSpeed and the catalogue.
#include "zerodp/catalog/models.h"
#include "zerodp/deepspeed/config.h"
#include "zerodp/plan/memory.h"
#include "zerodp/report/report.h"
