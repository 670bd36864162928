#include "dist/comm_timeout.h"

#include <cctype>
#include <cmath>
#include <cstdlib>

#include "core/error.h"

namespace opchain {

double parse_comm_timeout_seconds(const std::string& text, const std::string& source) {
  const char* begin = text.c_str();
  char* end = nullptr;
  const double seconds = std::strtod(begin, &end);
  // strtod accepts "inf", "nan" and leading blanks; a deadline needs a plain finite number.
  if (text.empty() || end == begin || *end != '\0' || !std::isfinite(seconds) || seconds < 0 ||
      std::isspace(static_cast<unsigned char>(text.front())))
    throw InvalidArgumentError(source + "='" + text +
                               "' is not a number of seconds >= 0 (the collectives' timeout; 0 waits forever)");
  return seconds;
}

double comm_timeout_seconds_from_env() {
  const char* text = std::getenv("OPCHAIN_COMM_TIMEOUT_S");
  if (!text) return kDefaultCommTimeoutSeconds;
  return parse_comm_timeout_seconds(text, "OPCHAIN_COMM_TIMEOUT_S");
}

}  // namespace opchain
