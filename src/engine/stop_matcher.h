#pragma once
// Stop strings over streamed text. Generated text arrives a piece at a time and a stop string may
// straddle pieces, so text that could still turn into a stop string is held back until it either
// completes one (generation stops, and the stop string and everything after it are dropped, as the
// OpenAI API does) or stops being a possible prefix (it is released).
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace opchain {

class StopMatcher {
 public:
  // Empty strings are ignored: they would match before any text and so could never be excluded
  // from the output in a meaningful way.
  explicit StopMatcher(std::vector<std::string> stops);

  struct Result {
    std::string emit;      // text that is now safe to show; never part of a stop string
    bool stopped = false;  // a stop string completed: emit runs up to (not including) it
  };

  // Appends piece. Once stopped, further pushes return {"", true}. With whole UTF-8 characters in and
  // valid UTF-8 stop strings, emit always ends on a character boundary.
  Result push(std::string_view piece);

  // End of generation without a stop: releases whatever was held back (empty after a stop).
  std::string flush();

  bool stopped() const { return matched_.has_value(); }
  // Index (into the constructor's list) of the stop string that ended generation, for stop_reason.
  std::optional<size_t> matched_stop() const { return matched_; }
  const std::vector<std::string>& stops() const { return stops_; }
  // Longest held-back text possible: the longest stop string minus one byte.
  size_t max_held() const { return max_len_ == 0 ? 0 : max_len_ - 1; }

 private:
  std::vector<std::string> stops_;
  std::vector<size_t> index_;  // stops_[i] came from constructor position index_[i]
  size_t max_len_ = 0;
  std::string held_;
  std::optional<size_t> matched_;
};

}  // namespace opchain
