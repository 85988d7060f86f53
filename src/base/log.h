// Logging is set up through the public stoker/log.h (spdlog with the rank in every line); the
// code of src/ logs with spdlog directly.
#pragma once

#include "stoker/log.h"
