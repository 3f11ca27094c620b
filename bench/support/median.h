#pragma once
// The statistic every benchmark reports: the median of repeated timings,
// which one slow run (a shared machine, a page fault) does not move.
#include <vector>

namespace lockstep::bench {

// The middle value, or the mean of the two middle ones; 0 for no values.
double median(std::vector<double> values);

}  // namespace lockstep::bench
