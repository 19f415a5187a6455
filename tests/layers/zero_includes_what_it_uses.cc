// Must compile: the engine uses comm, optim, model, data and common, and its own internals.
#include "zero/grad_reducer.h"
#include "zerodp/comm.h"
#include "zerodp/dtype.h"
#include "zerodp/engine.h"
#include "zerodp/model.h"
#include "zerodp/optim.h"
#include "zerodp/samples.h"
