// Unit tests of write_file, the one way Emmy replaces a user's file: symlinks followed and kept,
// the mode kept, read-only files refused, and every failure (a file-size limit, a missing
// directory, a loop) leaving the original byte for byte and no temporary file behind.
#include <doctest/doctest.h>

#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "support/paths.hpp"
#include "support/write_file.hpp"

namespace fs = std::filesystem;
using namespace emmy;

namespace {

// A fresh directory under the system's temporary folder, removed at scope exit.
struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name)
      : path(fs::temp_directory_path() / ("emmy-write-file-" + name + "-" + std::to_string(::getpid()))) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::permissions(path, fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(path, ec);
  }
  // The names in the directory, sorted: no temporary file may be left.
  std::string listing() const {
    std::vector<std::string> names;
    for (const fs::directory_entry& e : fs::directory_iterator(path)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    std::string out;
    for (const std::string& n : names) out += (out.empty() ? "" : " ") + n;
    return out;
  }
};

void put(const fs::path& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

unsigned mode_of(const fs::path& path) {
  struct stat st;
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

}  // namespace

TEST_CASE("write_file: a new file is created with 0666 less the umask; an existing one replaced, its mode kept") {
  TempDir dir("basic");
  const mode_t mask = ::umask(027);
  const fs::path fresh = dir.path / "fresh.emmy";
  CHECK(write_file(fresh, "op a() {}\n") == "");
  ::umask(mask);
  CHECK(read_file(fresh) == "op a() {}\n");
  CHECK(mode_of(fresh) == 0640);

  const fs::path old = dir.path / "old.emmy";
  put(old, "old text\n");
  ::chmod(old.c_str(), 0604);
  CHECK(write_file(old, "") == "");  // empty content is content
  CHECK(read_file(old) == "");
  CHECK(mode_of(old) == 0604);
  CHECK(dir.listing() == "fresh.emmy old.emmy");

  // A relative path in the current directory has no parent path: the temporary goes in ".".
  const fs::path cwd = fs::current_path();
  fs::current_path(dir.path);
  CHECK(write_file("here.emmy", "here\n", {false}) == "");
  fs::current_path(cwd);
  CHECK(read_file(dir.path / "here.emmy") == "here\n");
}

TEST_CASE("write_file: a symlink is followed to its final target, which is replaced; the links stay links") {
  TempDir dir("symlink");
  fs::create_directories(dir.path / "real");
  const fs::path target = dir.path / "real" / "ops.emmy";
  put(target, "before\n");
  ::chmod(target.c_str(), 0600);
  fs::create_symlink("real/ops.emmy", dir.path / "first");  // relative, resolved from the link's folder
  fs::create_symlink(dir.path / "first", dir.path / "second");
  CHECK(write_file(dir.path / "second", "after\n") == "");
  CHECK(fs::is_symlink(dir.path / "first"));
  CHECK(fs::is_symlink(dir.path / "second"));
  CHECK(fs::read_symlink(dir.path / "first") == "real/ops.emmy");
  CHECK(read_file(target) == "after\n");
  CHECK(mode_of(target) == 0600);
  CHECK(dir.listing() == "first real second");

  // A dangling link: the file it names is created.
  fs::create_symlink("real/new.emmy", dir.path / "dangling");
  CHECK(write_file(dir.path / "dangling", "new\n") == "");
  CHECK(fs::is_symlink(dir.path / "dangling"));
  CHECK(read_file(dir.path / "real" / "new.emmy") == "new\n");
}

TEST_CASE("write_file: refused with the file untouched: read-only, a directory, a device, a symlink loop") {
  TempDir dir("refused");
  const fs::path locked = dir.path / "locked.emmy";
  put(locked, "keep me\n");
  ::chmod(locked.c_str(), 0444);
  const std::string why = write_file(locked, "overwritten\n");  // refused even for root, who could write it
  CHECK(why.find("cannot write '" + locked.string() + "': the file is read-only") == 0);
  CHECK(why.find("left as it was") != std::string::npos);
  CHECK(read_file(locked) == "keep me\n");
  CHECK(mode_of(locked) == 0444);

  fs::create_directories(dir.path / "folder");
  CHECK(write_file(dir.path / "folder", "x").find("it is a directory") != std::string::npos);
  CHECK(fs::is_directory(dir.path / "folder"));
  CHECK(write_file("/dev/full", "x").find("it is not a regular file") != std::string::npos);

  fs::create_symlink("loop_b", dir.path / "loop_a");
  fs::create_symlink("loop_a", dir.path / "loop_b");
  CHECK(write_file(dir.path / "loop_a", "x").find("too many levels of symbolic links") != std::string::npos);
  CHECK(fs::is_symlink(dir.path / "loop_a"));

  // A missing directory, and a regular file where a directory should be: nothing is created.
  CHECK(write_file(dir.path / "no" / "such" / "x.emmy", "x").find("nothing was written") != std::string::npos);
  CHECK(write_file(locked / "x.emmy", "x").find("cannot write") == 0);
  CHECK(dir.listing() == "folder locked.emmy loop_a loop_b");
}

TEST_CASE("write_file: over the file-size limit (ulimit -f) it fails with EFBIG, not SIGXFSZ; the original is intact") {
  TempDir dir("fsize");
  const fs::path file = dir.path / "big.emmy";
  const std::string original(12120, 'o');
  put(file, original);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    // In the child only: a 4 KiB limit, then a write of 12 KB that must fail and return.
    const rlimit limit{4096, 4096};
    if (setrlimit(RLIMIT_FSIZE, &limit) != 0) _exit(3);
    const std::string why = write_file(file, std::string(12000, 'n'));
    if (why.find("File too large") == std::string::npos || why.find("ulimit -f") == std::string::npos) _exit(1);
    sigset_t now;
    pthread_sigmask(SIG_SETMASK, nullptr, &now);
    _exit(sigismember(&now, SIGXFSZ) ? 2 : 0);  // the signal mask is as it was
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  CHECK_FALSE(WIFSIGNALED(status));
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(read_file(file) == original);
  CHECK(dir.listing() == "big.emmy");
}

TEST_CASE("resolve_symlinks: the final target, relative links from their folder, a path that does not exist as it is") {
  TempDir dir("resolve");
  put(dir.path / "t", "");
  fs::create_symlink("t", dir.path / "l1");
  fs::create_symlink("l1", dir.path / "l2");
  std::string why;
  CHECK(resolve_symlinks(dir.path / "l2", &why) == dir.path / "t");
  CHECK(resolve_symlinks(dir.path / "absent", &why) == dir.path / "absent");
  fs::create_symlink("self", dir.path / "self");
  CHECK(resolve_symlinks(dir.path / "self", &why).empty());
  CHECK(why.find("symbolic links") != std::string::npos);
}
