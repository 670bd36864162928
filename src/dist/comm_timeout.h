#pragma once
// How long a collective of the MPI world waits for its peers (Communicator::timeout_seconds).
#include <string>

namespace opchain {

inline constexpr double kDefaultCommTimeoutSeconds = 300;

// OPCHAIN_COMM_TIMEOUT_S when set (seconds, >= 0; 0 waits forever), else kDefaultCommTimeoutSeconds.
// A value that is not a number of seconds is an InvalidArgumentError quoting it.
double comm_timeout_seconds_from_env();

// The same rule applied to `text`; `source` names where it came from in the error.
double parse_comm_timeout_seconds(const std::string& text, const std::string& source);

}  // namespace opchain
