// The check of a whole number as typed on a command line, without CLI11: whether a value may go
// to strtoull or strtoll (base 0, as CLI11 converts integer options) and mean the number it looks
// like. CheckOptionValues (stoker/program/options.h) applies it to every integer option of an
// app. Its digits are read by ParseDigits (base/digits.h), which reads the job scripts' own
// settings too (job/job_settings.h): one digit parser for every number.
// Thread safe (no state).
#pragma once

#include <string>

namespace stoker {

// "" when `value` is a whole number written in decimal: digits without a leading 0 (0 itself
// aside), a '-' in front only when `is_signed`, within 64 bits (2^64 - 1 unsigned, -2^63 to
// 2^63 - 1 signed), a unit suffix after (8MiB); else why not, starting with the value. Refused:
// white space or a '+' anywhere in front, a minus sign on an unsigned value (strtoull would
// wrap it to 2^64 - N), a leading 0 (octal) or 0x (hexadecimal), digits beyond 64 bits (strtoull
// would give 2^64 - 1). A value that does not start with a digit or '-' ("auto") is left to the
// option's own conversion.
std::string WholeNumberProblem(const std::string& value, bool is_signed = false);

}  // namespace stoker
