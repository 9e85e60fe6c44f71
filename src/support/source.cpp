#include "support/source.hpp"

#include <algorithm>

#include "support/paths.hpp"

namespace emmy {

SourceFile::SourceFile(std::string path, std::string text) : path_(std::move(path)), text_(std::move(text)) {
  line_starts_.push_back(0);
  for (uint32_t i = 0; i < text_.size(); ++i)
    if (text_[i] == '\n') line_starts_.push_back(i + 1);
}

LineCol SourceFile::line_col(uint32_t offset) const {
  auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
  int line = static_cast<int>(it - line_starts_.begin());
  return {line, static_cast<int>(offset - line_starts_[line - 1]) + 1};
}

std::string_view SourceFile::line_text(int line) const {
  if (line < 1 || line > line_count()) return {};
  uint32_t b = line_starts_[line - 1];
  uint32_t e = line < line_count() ? line_starts_[line] - 1 : static_cast<uint32_t>(text_.size());
  std::string_view s(text_.data() + b, e - b);
  if (!s.empty() && s.back() == '\r') s.remove_suffix(1);
  return s;
}

uint32_t SourceManager::add(std::string path, std::string text) {
  files_.push_back(std::make_unique<SourceFile>(std::move(path), std::move(text)));
  return static_cast<uint32_t>(files_.size());
}

uint32_t SourceManager::load(const std::string& path) {
  std::optional<std::string> text = read_file(path, kMaxSourceBytes + 1);
  return text ? add(path, std::move(*text)) : 0;
}

std::string_view SourceManager::text(SourceRange r) const {
  if (!r.valid()) return {};
  const std::string& t = file(r.file).text();
  return std::string_view(t).substr(r.begin, r.end - r.begin);
}

}  // namespace emmy
