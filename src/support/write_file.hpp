// Replacing a user's file safely: a temporary file beside it, written and checked, renamed over it.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace emmy {

struct WriteOptions {
  // fsync the temporary file (and the directory after the rename) so the new content survives a
  // crash; a cache that checks its entries on every read can skip it.
  bool sync = true;
};

// Writes `content` to `path` as a whole or not at all, and returns "" on success or one line
// saying what failed ("cannot write 'x.emmy': No space left on device; the file is left as it was").
// A symlink is followed to its final target, which is replaced (the link stays a link). The new
// file gets the old one's mode (and owner, where permitted); a new file gets 0666 less the umask.
// Refused, with the file untouched: a target that is read-only (no write bit, even for root), a
// directory or not a regular file, a symlink loop. On any failure (a short write, EFBIG under
// `ulimit -f`, ENOSPC, a failed rename) the temporary file is removed and the original is left
// byte for byte. SIGXFSZ is blocked on the calling thread while it writes, so a file-size limit
// is an error, not a signal that kills the process. Thread-safe.
std::string write_file(const std::filesystem::path& path, std::string_view content, const WriteOptions& options = {});

// The final target of `path` after following every symlink (at most 40), which need not exist;
// "" with `error` set on a loop or an unreadable link.
std::filesystem::path resolve_symlinks(const std::filesystem::path& path, std::string* error);

}  // namespace emmy
