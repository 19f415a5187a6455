// Must not compile: a part's internal headers (src/zero/) belong to it alone.
#include "zero/grad_reducer.h"
