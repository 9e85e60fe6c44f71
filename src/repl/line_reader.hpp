// Where the REPL's lines come from: a terminal through libedit (history, completion), or any
// stream (a script piped in, a test).
#pragma once

#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace emmy::repl {

class LineReader {
 public:
  virtual ~LineReader() = default;
  // The next line without its newline; nullopt at the end of input.
  virtual std::optional<std::string> read(const std::string& prompt) = 0;
};

// Lines of a stream; no prompt is shown.
std::unique_ptr<LineReader> stream_reader(std::istream& in);

// libedit on the terminal: `history_file` is read at the start and written at the end (empty:
// no history); `completions` gives the words that complete at the cursor's word.
std::unique_ptr<LineReader> terminal_reader(const std::string& history_file,
                                            std::function<std::vector<std::string>()> completions);

}  // namespace emmy::repl
