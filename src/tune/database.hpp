// The tuning database of `emmyc tune`: every measured schedule candidate, per op, target, device,
// shape class and dtype, in one SQLite file that several tuner processes may share.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

struct sqlite3;

namespace emmy::tune {

// Identifies one tuning problem. All seven fields are part of the key: two keys that differ in
// any one of them are different problems.
struct TuneKey {
  std::string op_hash;      // hash of the op's checked source, computed by the caller (opaque here)
  std::string op;           // op name, for listing
  std::string file;         // the .emmy path, for listing
  std::string target;       // "sm_90"
  std::string device;       // "NVIDIA H200", or "interpreter"
  std::string shape_class;  // canonical text, e.g. "B=1,D=64,H=8,S=4096" (opaque here)
  std::string dtype;        // "f16"

  friend bool operator==(const TuneKey&, const TuneKey&) = default;
};

// One measured candidate.
struct Point {
  std::string knobs;              // canonical knob list text, unique per key
  bool ok = false;                // compiled, ran, and matched the reference
  bool cut_off = false;           // not ok: its first launch was far slower than the best then
  std::optional<double> time_us;  // median GPU time when ok; the one launch when cut off
  int registers = 0;              // per thread (ptxas), 0 if unknown
  int64_t smem_bytes = 0;
  double occupancy = 0;     // resident warps / max warps, 0..1, 0 if unknown
  std::string error;        // why not ok ("" when ok)
  std::string measured_at;  // UTC "YYYY-MM-DD HH:MM:SS"; filled by record() when empty

  friend bool operator==(const Point&, const Point&) = default;
};

// Any failure of the database: its message names the file, the step that failed and SQLite's
// message.
struct DatabaseError : std::runtime_error {
  using runtime_error::runtime_error;
};

// The schema version this build reads and writes; a file of another version is refused.
inline constexpr int kSchemaVersion = 1;

// One open database file. Movable, not copyable; closes the file when destroyed.
class Database {
 public:
  // Opens PATH, creating its parent directories, the file and the schema as needed.
  static Database open(const std::string& path);
  // $EMMY_TUNE_DB, else $XDG_CACHE_HOME/emmy/tune.sqlite, else $HOME/.cache/emmy/tune.sqlite; "" when none is set.
  static std::string default_path();

  // Inserts P, or replaces the point of KEY with the same knobs. An empty measured_at is stored
  // as the current UTC time.
  void record(const TuneKey& key, const Point& p);
  // record() of every point, in one transaction: all of them land, or none.
  void record_all(const TuneKey& key, const std::vector<Point>& ps);

  // Every point of KEY: the ok ones by time ascending (then knobs), then the failed ones by knobs.
  std::vector<Point> points(const TuneKey& key) const;
  std::optional<Point> lookup(const TuneKey& key, std::string_view knobs) const;

  struct Entry {
    TuneKey key;
    int points = 0;
    int ok_points = 0;
    std::optional<Point> best;  // the fastest ok point, if any
    std::string last_measured;  // the latest measured_at of the key's points
  };
  // One entry per key, ordered by file, op, target, shape_class (then device, dtype, op_hash).
  std::vector<Entry> list() const;

  // Deletes KEY's points; returns how many there were.
  int forget(const TuneKey& key);

  std::string path() const { return path_; }

 private:
  struct Close {
    void operator()(sqlite3* db) const;
  };
  Database(std::string path, sqlite3* db) : path_(std::move(path)), db_(db) {}
  sqlite3* handle() const;  // throws when moved from

  std::string path_;
  std::unique_ptr<sqlite3, Close> db_;
};

}  // namespace emmy::tune
