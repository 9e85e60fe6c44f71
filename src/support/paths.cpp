// Whole-file reads, colon-separated path lists and the stdlib search path.
#include "support/paths.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iterator>

namespace emmy {

std::optional<std::string> read_file(const std::filesystem::path& path, size_t max_bytes) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return std::nullopt;  // opens, then fails (throws) on the first read
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string text;
  try {
    char buffer[1 << 16];
    while (text.size() < max_bytes) {
      in.read(buffer, static_cast<std::streamsize>(std::min(sizeof buffer, max_bytes - text.size())));
      text.append(buffer, static_cast<size_t>(in.gcount()));
      if (!in) break;
    }
  } catch (const std::ios_base::failure&) {  // a read error (EISDIR, EIO) thrown by the stream buffer
    return std::nullopt;
  }
  if (in.bad()) return std::nullopt;
  return text;
}

std::optional<FileId> file_id(const std::string& path, int* error) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    if (error) *error = errno;
    return std::nullopt;
  }
  return FileId{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino), S_ISDIR(st.st_mode),
                static_cast<int64_t>(st.st_size),
                static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + static_cast<int64_t>(st.st_mtim.tv_nsec)};
}

std::vector<std::string_view> split_commas(std::string_view text) {
  std::vector<std::string_view> parts;
  for (size_t b = 0; b <= text.size();) {
    const size_t e = std::min(text.find(',', b), text.size());
    parts.push_back(text.substr(b, e - b));
    b = e + 1;
  }
  return parts;
}

std::vector<std::string> split_path_list(std::string_view list) {
  std::vector<std::string> out;
  for (size_t b = 0; b <= list.size();) {
    size_t e = std::min(list.find(':', b), list.size());
    if (e > b) out.emplace_back(list.substr(b, e - b));
    b = e + 1;
  }
  return out;
}

std::vector<std::string> stdlib_search_path(const std::filesystem::path& installed_file,
                                            const std::string& source_stdlib) {
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("EMMY_STDLIB")) dirs = split_path_list(env);
  if (!installed_file.empty())
    dirs.push_back((installed_file.parent_path().parent_path() / "share" / "emmy" / "stdlib").string());
  dirs.push_back(source_stdlib);
  return dirs;
}

}  // namespace emmy
