// Source files and byte ranges inside them: the locations every diagnostic points at.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace emmy {

// The largest source the parser takes (E006 past it): parsing holds ~30 bytes of memory per
// byte of source, and offsets are 32-bit. SourceManager::load reads no more than one byte past it.
constexpr size_t kMaxSourceBytes = size_t{16} << 20;

struct LineCol {
  int line = 0;    // 1-based
  int column = 0;  // 1-based, in bytes
};

// One loaded source text. Line starts are computed once, so offset -> line:col is a
// binary search.
class SourceFile {
 public:
  SourceFile(std::string path, std::string text);

  const std::string& path() const { return path_; }
  const std::string& text() const { return text_; }
  LineCol line_col(uint32_t offset) const;
  std::string_view line_text(int line) const;  // without the newline
  int line_count() const { return static_cast<int>(line_starts_.size()); }

 private:
  std::string path_;
  std::string text_;
  std::vector<uint32_t> line_starts_;
};

// A half-open byte range [begin, end) in one file of a SourceManager.
struct SourceRange {
  uint32_t file = 0;
  uint32_t begin = 0;
  uint32_t end = 0;
  bool valid() const { return file != 0; }
};

// Owns every source file of a compilation; file ids start at 1 (0 = no location).
class SourceManager {
 public:
  uint32_t add(std::string path, std::string text);
  // Reads a file from disk (at most kMaxSourceBytes + 1 bytes of it); returns 0 when it cannot be read.
  uint32_t load(const std::string& path);
  const SourceFile& file(uint32_t id) const { return *files_.at(id - 1); }
  std::string_view text(SourceRange r) const;

 private:
  std::vector<std::unique_ptr<SourceFile>> files_;
};

}  // namespace emmy
