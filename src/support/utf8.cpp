#include "support/utf8.hpp"

namespace emmy {
namespace {

bool in(unsigned char c, unsigned char lo, unsigned char hi) { return c >= lo && c <= hi; }

}  // namespace

size_t utf8_sequence_length(std::string_view s, size_t i) {
  auto at = [&](size_t k) { return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0; };
  unsigned char c = at(0);
  if (i >= s.size()) return 0;
  if (c < 0x80) return 1;
  // The second byte's range depends on the first (Unicode 15, table 3-7).
  unsigned char lo = 0x80, hi = 0xBF;
  size_t n = 0;
  if (in(c, 0xC2, 0xDF))
    n = 2;
  else if (c == 0xE0)
    n = 3, lo = 0xA0;
  else if (in(c, 0xE1, 0xEC) || in(c, 0xEE, 0xEF))
    n = 3;
  else if (c == 0xED)
    n = 3, hi = 0x9F;
  else if (c == 0xF0)
    n = 4, lo = 0x90;
  else if (in(c, 0xF1, 0xF3))
    n = 4;
  else if (c == 0xF4)
    n = 4, hi = 0x8F;
  else
    return 0;
  if (i + n > s.size() || !in(at(1), lo, hi)) return 0;
  for (size_t k = 2; k < n; ++k)
    if (!in(at(k), 0x80, 0xBF)) return 0;
  return n;
}

size_t first_invalid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    size_t n = utf8_sequence_length(s, i);
    if (n == 0) return i;
    i += n;
  }
  return std::string_view::npos;
}

}  // namespace emmy
