#pragma once
// What a model's tensors must hold to be trained with or saved: finite
// weights and running means, and running variances that are finite and not
// negative (batch norm divides by sqrt(var + eps): a negative variance gives
// NaN, or a huge scale when close to -eps, without any error). Checked where
// weights come in (--init) and where they go out (every checkpoint), so a bad
// file is named where it is, not as a diverged run steps later.
#include <string>
#include <vector>

namespace lockstep {

// True for a batch norm's running variance ("<node>.running_var").
bool is_running_variance(const std::string& name);

// "" when `values` of the tensor `name` may be used; otherwise what is wrong
// with them, e.g. "holds NaN (first at index 3 of 64)" or "holds a negative
// variance, -0.5 (first at index 2 of 64)".
std::string state_value_problem(const std::string& name, const std::vector<float>& values);

}  // namespace lockstep
