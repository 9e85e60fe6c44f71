#include "support/suggest.hpp"

#include <algorithm>
#include <cctype>

namespace emmy {
namespace {

char lower(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }

bool is_subsequence(std::string_view small, std::string_view big) {
  size_t j = 0;
  for (char c : big)
    if (j < small.size() && lower(small[j]) == lower(c)) ++j;
  return j == small.size();
}

}  // namespace

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (lower(a[i - 1]) != lower(b[j - 1]))});
      if (i > 1 && j > 1 && lower(a[i - 1]) == lower(b[j - 2]) && lower(a[i - 2]) == lower(b[j - 1]))
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

std::string closest_name(std::string_view word, const std::vector<std::string_view>& candidates) {
  // A guess must be close for its length: 'x' for 'z' or 'c' for 'zz' is noise, not help.
  std::string_view best;
  size_t best_d = 3;
  bool best_ordered = false;
  for (std::string_view c : candidates) {
    if (c == word) continue;
    size_t d = edit_distance(word, c);
    if (d > std::max(word.size(), c.size()) / 2) continue;
    bool ordered = is_subsequence(word, c);
    if (d < best_d || (d == best_d && ordered && !best_ordered)) {
      best = c;
      best_d = d;
      best_ordered = ordered;
    }
  }
  return std::string(best);
}

std::string closest_name(std::string_view word, const std::vector<std::string>& candidates) {
  std::vector<std::string_view> views(candidates.begin(), candidates.end());
  return closest_name(word, views);
}

}  // namespace emmy
