// Must not compile: the run part is below the command line (it knows no flags' parsing).
#include "engine_flags.h"
