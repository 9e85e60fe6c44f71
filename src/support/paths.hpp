// Files and search paths: whole-file reads, colon-separated lists, where the stdlib lives.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace emmy {

// The bytes of a file, or nullopt when it cannot be read.
std::optional<std::string> read_file(const std::filesystem::path& path);

// "a:b::c" -> {"a", "b", "c"}: empty entries are dropped.
std::vector<std::string> split_path_list(std::string_view list);

// Where `import std.X` looks: $EMMY_STDLIB (colon-separated), then <prefix>/share/emmy/stdlib
// for the installed binary or library at <prefix>/bin|lib/NAME (none when that path is empty),
// then the source tree's stdlib.
std::vector<std::string> stdlib_search_path(const std::filesystem::path& installed_file, const std::string& source_stdlib);

}  // namespace emmy
