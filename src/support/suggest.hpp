// "Did you mean ...?": the known name nearest to a misspelt one.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace emmy {

// Edit distance, case-insensitive, where swapping two neighbours counts once
// (f23 -> f32, inptu -> input).
size_t edit_distance(std::string_view a, std::string_view b);

// The candidate nearest to `word` when it is a likely typo, else "". Ties go to a
// candidate that contains `word`'s letters in order (rng -> ring, not reg).
std::string closest_name(std::string_view word, const std::vector<std::string_view>& candidates);
std::string closest_name(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace emmy
