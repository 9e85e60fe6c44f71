// Files and search paths: whole-file reads, colon-separated lists, where the stdlib lives.
#pragma once

#include <compare>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace emmy {

// The bytes of a file (its first `max_bytes`), or nullopt when it cannot be read.
std::optional<std::string> read_file(const std::filesystem::path& path, size_t max_bytes = SIZE_MAX);

// A file's identity (device and inode, through symlinks), so that two paths of one file are
// known to be one; nullopt when it cannot be stat'ed
// (`error` then holds the errno: ENOENT when it does not exist, ELOOP for a symlink loop).
struct FileId {
  uint64_t device = 0, inode = 0;
  bool directory = false;
  int64_t size = 0, mtime_ns = 0;  // not part of the identity: whether it changed since it was read
  auto operator<=>(const FileId& o) const { return std::pair(device, inode) <=> std::pair(o.device, o.inode); }
  bool operator==(const FileId& o) const { return device == o.device && inode == o.inode; }
};
std::optional<FileId> file_id(const std::string& path, int* error = nullptr);

// "a:b::c" -> {"a", "b", "c"}: empty entries are dropped.
std::vector<std::string> split_path_list(std::string_view list);
// "a,b,,c" -> {"a", "b", "", "c"}: every comma-separated part, empty ones kept (views of `text`).
std::vector<std::string_view> split_commas(std::string_view text);

// Where `import std.X` looks: $EMMY_STDLIB (colon-separated), then <prefix>/share/emmy/stdlib
// for the installed binary or library at <prefix>/bin|lib/NAME (none when that path is empty),
// then the source tree's stdlib.
std::vector<std::string> stdlib_search_path(const std::filesystem::path& installed_file,
                                            const std::string& source_stdlib);

}  // namespace emmy
