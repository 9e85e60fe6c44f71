// emmyc repl: definitions and commands, one input at a time, over a Session.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "driver/lowering.hpp"
#include "repl/line_reader.hpp"
#include "repl/session.hpp"

namespace emmy::repl {

struct ReplOptions {
  std::vector<std::string> stdlib_dirs;
  bool color = false;
  bool interactive = false;  // a terminal: a banner and prompts
  std::string target = "sm_90";
  std::string env_knobs;                 // EMMY_KNOBS, under the session's :knobs
  std::string self;                      // emmyc's own path: :tune starts it as the measuring worker
  int error_limit = kDefaultErrorLimit;  // errors shown per input (0: all)
};

class Repl {
 public:
  Repl(ReplOptions options, std::ostream& out, std::ostream& err);

  // One line: a command (`:name args`, when no definition is open) or part of a definition.
  // A definition is checked once its braces balance. False after :quit. Runs on a large stack;
  // an exception that escapes a command is one error line, and the session goes on.
  bool feed(const std::string& line);
  bool in_definition() const { return !pending_.empty(); }
  // The end of input: a definition still open is an error (not added).
  void end_of_input();
  // Words for tab completion: the commands, the session's ops, knob names, targets, IR levels.
  std::vector<std::string> completions() const;
  // 0 when every input so far was accepted, 1 otherwise (the exit status of a script).
  int status() const { return failures_ ? 1 : 0; }

  struct Command;

 private:
  bool feed_line(const std::string& line);
  void define(const std::string& text);
  // Ends the pending definition early (`by`: what ended it): checked as it is when its braces
  // balance, so that the parser says what is missing; else an error. Either way not pending.
  void end_pending(const std::string& by);
  bool run_command(const std::string& line);
  std::unique_ptr<CheckedSession> checked_session();
  bool need_op(const CheckedSession& c, const std::string& op);
  bool need_shape();
  LowerOptions lower_options(const CheckedSession& c, const std::string& op, const std::string& schedule) const;

  bool cmd_help(const std::vector<std::string>& args);
  bool cmd_load(const std::vector<std::string>& args);
  bool cmd_list(const std::vector<std::string>& args);
  bool cmd_check(const std::vector<std::string>& args);
  bool cmd_ir(const std::vector<std::string>& args);
  bool cmd_knobs(const std::vector<std::string>& args);
  std::string knobs_text() const;
  bool cmd_target(const std::vector<std::string>& args);
  bool cmd_shape(const std::vector<std::string>& args);
  bool cmd_set(const std::vector<std::string>& args);
  bool cmd_run(const std::vector<std::string>& args);
  bool cmd_bench(const std::vector<std::string>& args);
  bool cmd_tune(const std::vector<std::string>& args);
  bool cmd_save(const std::vector<std::string>& args);
  bool run_op_command(const std::vector<std::string>& args, bool bench);

  static const std::vector<Command>& commands();

  ReplOptions options_;
  std::ostream& out_;
  std::ostream& err_;
  Session session_;
  std::string pending_;           // the lines of a definition whose braces are still open
  int pending_braces_ = 0;        // braces open in pending_
  bool pending_started_ = false;  // pending_ has more than blank lines and doc comments
  int inputs_ = 0;                // definitions entered, for their names "<input N>"
  int failures_ = 0;
  std::string knobs_, shape_, set_;  // set_: :set, values of scalar parameters
  bool knobs_merge_ = false;         // :knobs --merge: the knobs go over the schedule block
  bool quit_ = false;
};

// Feeds `repl` from `reader` until :quit or the end of input (the prompts "emmy> " and
// "  ...> " go to the reader, which shows them on a terminal); returns repl.status().
int run_repl(Repl& repl, LineReader& reader);

// $XDG_CONFIG_HOME/emmy/repl_history, else ~/.config/emmy/repl_history (the folder created);
// empty when neither is known.
std::string history_path();

}  // namespace emmy::repl
