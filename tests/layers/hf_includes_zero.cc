// Must not compile: the Hugging Face formats write a model's weights and know no engine.
#include "zerodp/zero/engine.h"
