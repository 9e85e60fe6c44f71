// Source offsets: ANTLR counts characters in code points, diagnostics count bytes.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <vector>

namespace emmy {

// A code point index of the text to its byte offset.
class OffsetMap {
 public:
  explicit OffsetMap(std::string_view text) {
    bool ascii = true;
    for (unsigned char c : text) ascii = ascii && c < 0x80;
    if (ascii) return;
    for (uint32_t i = 0; i < text.size(); ++i)
      if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) starts_.push_back(i);
    starts_.push_back(static_cast<uint32_t>(text.size()));
  }
  uint32_t byte(size_t cp) const {
    if (starts_.empty()) return static_cast<uint32_t>(cp);
    return starts_[std::min(cp, starts_.size() - 1)];
  }

 private:
  std::vector<uint32_t> starts_;
};

}  // namespace emmy
