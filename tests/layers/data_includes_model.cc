// Must not compile: samples are drawn without knowing the model that reads them.
#include "zerodp/model/model.h"
