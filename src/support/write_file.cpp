// Atomic replacement of a file: symlinks followed, a unique temporary file in the target's
// directory, every write checked, the old mode kept, then one rename (write_file.hpp).
#include "support/write_file.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <random>
#include <system_error>

#include <fmt/format.h>

namespace emmy {
namespace {

namespace fs = std::filesystem;

constexpr int kMaxSymlinkHops = 40;        // as the kernel's own limit on a path lookup
constexpr size_t kMaxTempStemBytes = 200;  // the temporary name stays under NAME_MAX (255)

std::string errno_text(int error) {
  std::string text = std::error_code(error, std::generic_category()).message();
  if (error == EFBIG) text += " (over the file-size limit: see ulimit -f)";
  return text;
}

std::string failure(const fs::path& path, const std::string& why, bool existed) {
  return fmt::format("cannot write '{}': {}; {}", path.string(), why,
                     existed ? "the file is left as it was" : "nothing was written");
}

// SIGXFSZ blocked on this thread for the object's life, so that going over `ulimit -f` makes
// write() fail with EFBIG instead of killing the process; one raised meanwhile is discarded.
class FileSizeSignalBlocked {
 public:
  FileSizeSignalBlocked() {
    sigemptyset(&signal_);
    sigaddset(&signal_, SIGXFSZ);
    pthread_sigmask(SIG_BLOCK, &signal_, &previous_);
  }
  ~FileSizeSignalBlocked() {
    if (!sigismember(&previous_, SIGXFSZ)) {
      sigset_t pending;
      sigemptyset(&pending);
      const timespec no_wait{0, 0};
      if (sigpending(&pending) == 0 && sigismember(&pending, SIGXFSZ)) sigtimedwait(&signal_, nullptr, &no_wait);
    }
    pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
  }
  FileSizeSignalBlocked(const FileSizeSignalBlocked&) = delete;
  FileSizeSignalBlocked& operator=(const FileSizeSignalBlocked&) = delete;

 private:
  sigset_t signal_{};
  sigset_t previous_{};
};

// "" when every byte reached the file, else why not.
std::string write_all(int fd, std::string_view content) {
  size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno_text(errno);
    if (n == 0) return "the write made no progress";
    done += static_cast<size_t>(n);
  }
  return "";
}

// A new file ".NAME.tmp-XXXXXXXXXXXX" in `dir`, created exclusively (as mkstemp does) with
// `mode` less the umask; -1 with errno set when it cannot be created.
int create_temporary(const fs::path& dir, const std::string& name, mode_t mode, fs::path& created) {
  std::random_device random;
  const std::string stem = name.substr(0, kMaxTempStemBytes);
  for (int attempt = 0; attempt < 64; ++attempt) {
    const uint64_t tag = (static_cast<uint64_t>(random()) << 32) ^ random();
    created = dir / fmt::format(".{}.tmp-{:012x}", stem, tag & 0xffffffffffffull);
    const int fd = ::open(created.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  errno = EEXIST;
  return -1;
}

// The temporary file's content, owner and mode, then its flush; "" or why it failed.
std::string fill_temporary(int fd, std::string_view content, const struct stat* old, const WriteOptions& options) {
  if (std::string why = write_all(fd, content); !why.empty()) return why;
  if (old) {
    if (fchown(fd, old->st_uid, old->st_gid) != 0 && errno != EPERM) return errno_text(errno);
    if (fchmod(fd, old->st_mode & 07777) != 0) return errno_text(errno);
  }
  if (options.sync && fsync(fd) != 0) return errno_text(errno);
  return "";
}

void sync_directory(const fs::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  fsync(fd);  // best effort: the rename is done, a failure here loses nothing now
  ::close(fd);
}

}  // namespace

fs::path resolve_symlinks(const fs::path& path, std::string* error) {
  fs::path p = path;
  for (int hop = 0; hop <= kMaxSymlinkHops; ++hop) {
    struct stat st;
    if (lstat(p.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return p;  // absent or not a link: the target
    std::error_code ec;
    const fs::path next = fs::read_symlink(p, ec);
    if (ec) {
      if (error) *error = "cannot read the symbolic link '" + p.string() + "': " + ec.message();
      return {};
    }
    p = next.is_absolute() ? next : p.parent_path() / next;
  }
  if (error) *error = "too many levels of symbolic links (a symlink loop?)";
  return {};
}

std::string write_file(const fs::path& path, std::string_view content, const WriteOptions& options) {
  std::string why;
  const fs::path target = resolve_symlinks(path, &why);
  if (target.empty()) return failure(path, why, true);
  struct stat old;
  const bool existed = ::stat(target.c_str(), &old) == 0;
  if (!existed && errno != ENOENT) return failure(path, errno_text(errno), false);
  if (existed) {
    if (S_ISDIR(old.st_mode)) return failure(path, "it is a directory", true);
    if (!S_ISREG(old.st_mode)) return failure(path, "it is not a regular file", true);
    if ((old.st_mode & 0222) == 0)
      return failure(path, fmt::format("the file is read-only (chmod u+w '{}' to allow it)", path.string()), true);
    if (::access(target.c_str(), W_OK) != 0) return failure(path, errno_text(errno), true);
  }
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  const FileSizeSignalBlocked blocked;
  fs::path temporary;
  const int fd = create_temporary(dir, target.filename().string(), existed ? 0600 : 0666, temporary);
  if (fd < 0)
    return failure(path, fmt::format("cannot create a temporary file in '{}': {}", dir.string(), errno_text(errno)),
                   existed);
  why = fill_temporary(fd, content, existed ? &old : nullptr, options);
  if (::close(fd) != 0 && why.empty()) why = errno_text(errno);
  if (why.empty() && ::rename(temporary.c_str(), target.c_str()) != 0) why = errno_text(errno);
  if (!why.empty()) {
    ::unlink(temporary.c_str());
    return failure(path, why, existed);
  }
  if (options.sync) sync_directory(dir);
  return "";
}

}  // namespace emmy
