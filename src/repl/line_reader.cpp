// Where the REPL's lines come from: a terminal through libedit (history, completion), or any
// stream (a script piped in, a test).
#include "repl/line_reader.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <istream>

#include <editline/readline.h>

namespace emmy::repl {
namespace {

class StreamReader : public LineReader {
 public:
  explicit StreamReader(std::istream& in) : in_(in) {}
  std::optional<std::string> read(const std::string&) override {
    std::string line;
    if (!std::getline(in_, line)) return std::nullopt;
    return line;
  }

 private:
  std::istream& in_;
};

// libedit's readline interface calls back through plain functions, so the completion source
// lives in this one pointer while a TerminalReader exists (there is one terminal).
std::function<std::vector<std::string>()>* g_completions = nullptr;

char* next_completion(const char* text, int state) {
  static std::vector<std::string> matches;
  static size_t next = 0;
  if (state == 0) {
    matches.clear();
    next = 0;
    const size_t n = std::strlen(text);
    if (g_completions)
      for (const std::string& w : (*g_completions)())
        if (w.compare(0, n, text) == 0) matches.push_back(w);
  }
  return next < matches.size() ? strdup(matches[next++].c_str()) : nullptr;
}

char** complete(const char* text, int, int) {
  rl_attempted_completion_over = 1;  // no file-name completion when nothing matches
  return rl_completion_matches(text, next_completion);
}

class TerminalReader : public LineReader {
 public:
  TerminalReader(std::string history_file, std::function<std::vector<std::string>()> completions)
      : history_file_(std::move(history_file)), completions_(std::move(completions)) {
    g_completions = &completions_;
    rl_readline_name = "emmy";
    rl_attempted_completion_function = complete;
    rl_basic_word_break_characters = const_cast<char*>(" \t\n,;()[]{}=/");
    using_history();
    if (!history_file_.empty()) read_history(history_file_.c_str());
  }
  ~TerminalReader() override {
    if (!history_file_.empty()) write_history(history_file_.c_str());
    g_completions = nullptr;
  }
  std::optional<std::string> read(const std::string& prompt) override {
    char* line = readline(prompt.c_str());
    if (!line) return std::nullopt;
    std::string out = line;
    std::free(line);
    if (out.find_first_not_of(" \t") != std::string::npos) add_history(out.c_str());
    return out;
  }

 private:
  std::string history_file_;
  std::function<std::vector<std::string>()> completions_;
};

}  // namespace

std::unique_ptr<LineReader> stream_reader(std::istream& in) { return std::make_unique<StreamReader>(in); }

std::unique_ptr<LineReader> terminal_reader(const std::string& history_file,
                                            std::function<std::vector<std::string>()> completions) {
  return std::make_unique<TerminalReader>(history_file, std::move(completions));
}

}  // namespace emmy::repl
