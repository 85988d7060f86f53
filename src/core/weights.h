// The `--weights` syntax is public API: stoker/weights.h.
#pragma once

#include "stoker/weights.h"
