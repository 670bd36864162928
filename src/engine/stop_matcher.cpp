#include "engine/stop_matcher.h"

#include <algorithm>
#include <utility>

namespace opchain {

StopMatcher::StopMatcher(std::vector<std::string> stops) {
  for (size_t i = 0; i < stops.size(); ++i) {
    if (stops[i].empty()) continue;
    max_len_ = std::max(max_len_, stops[i].size());
    stops_.push_back(std::move(stops[i]));
    index_.push_back(i);
  }
}

StopMatcher::Result StopMatcher::push(std::string_view piece) {
  if (matched_) return {"", true};
  held_.append(piece);

  // held_ is at most max_held() bytes, so each push scans only the held tail plus the new piece.
  size_t best = std::string::npos;
  size_t best_stop = 0;
  for (size_t s = 0; s < stops_.size(); ++s) {
    const size_t pos = held_.find(stops_[s]);
    if (pos < best) {  // the earliest start wins: text after it was generated after the stop
      best = pos;
      best_stop = s;
    }
  }
  if (best != std::string::npos) {
    matched_ = index_[best_stop];
    Result r{held_.substr(0, best), true};
    held_.clear();
    return r;
  }

  // Hold back the longest suffix that is a proper prefix of some stop string.
  size_t hold = 0;
  for (const std::string& s : stops_) {
    for (size_t k = std::min(s.size() - 1, held_.size()); k > hold; --k) {
      if (std::string_view(held_).substr(held_.size() - k) == std::string_view(s).substr(0, k)) {
        hold = k;
        break;
      }
    }
  }
  Result r{held_.substr(0, held_.size() - hold), false};
  held_.erase(0, held_.size() - hold);
  return r;
}

std::string StopMatcher::flush() {
  std::string out = std::move(held_);
  held_.clear();
  return out;
}

}  // namespace opchain
