#pragma once
// The error contract of every parser of outside input: whatever goes wrong is an opchain::Error
// naming the input. A std::out_of_range, a nlohmann type error or a std::bad_alloc that escaped
// reached the CLI as "internal error" and the server as a 500.
#include <new>
#include <stdexcept>
#include <string>

#include "core/error.h"

namespace opchain {

// Runs `parse` and passes opchain errors through; any other exception becomes a FormatError that
// names `source` (bad_alloc included: the input asked for more memory than there is).
template <class Fn>
auto guard_input(const std::string& source, Fn&& parse) -> decltype(parse()) {
  try {
    return parse();
  } catch (const Error&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw FormatError(source + ": reading it needs more memory than is available");
  } catch (const std::exception& e) {
    throw FormatError(source + ": cannot be read (" + e.what() + ")");
  }
}

}  // namespace opchain
