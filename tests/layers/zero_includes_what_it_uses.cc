// Must compile: the engine uses comm, optim, model, data and common, and its own internals.
#include "zero/grad_reducer.h"
#include "zerodp/comm/communicator.h"
#include "zerodp/common/dtype.h"
#include "zerodp/data/samples.h"
#include "zerodp/model/model.h"
#include "zerodp/optim/loss_scaler.h"
#include "zerodp/optim/rule.h"
#include "zerodp/zero/engine.h"
