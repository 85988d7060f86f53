// The check of a whole number as typed on a command line, without CLI11: whether a value may go
// to strtoull (base 0, as CLI11 converts unsigned options) and mean the number it looks like.
// CheckOptionValues (stoker/program/options.h) applies it to every unsigned option of an app.
// Thread safe (no state).
#pragma once

#include <string>

namespace stoker {

// "" when `value` is a whole number of 0 or more written in decimal (white space and a '+' in
// front allowed, a unit suffix after); else why not, starting with the value: a minus sign
// (strtoull would wrap it to 2^64 - N), a leading 0 (octal) or 0x (hexadecimal).
std::string WholeNumberProblem(const std::string& value);

}  // namespace stoker
