// emmyc repl: definitions and commands, one input at a time, over a Session.
#include "repl/repl.hpp"

#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <ostream>
#include <sstream>

#include <fmt/format.h>

#include "driver/guard.hpp"
#include "driver/lowering.hpp"
#include "driver/run.hpp"
#include "driver/tune.hpp"
#include "interp/reference.hpp"
#include "schedule/knobs.hpp"
#include "schedule/targets.hpp"
#include "sema/print_checked.hpp"
#include "support/paths.hpp"
#include "support/suggest.hpp"
#include "support/write_file.hpp"
#include "syntax/format.hpp"

namespace emmy::repl {

struct Repl::Command {
  std::string_view name, args, help;
  bool (Repl::*run)(const std::vector<std::string>& args);
};

namespace {

constexpr std::string_view kLevels[] = {"ast", "tensor", "loop", "plan", "cost", "kernel", "cuda", "ptx"};

std::vector<std::string> words_of(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// The value after `flag` in args (removed from args with it); nullopt when absent.
std::optional<std::string> take_option(std::vector<std::string>& args, std::string_view flag) {
  for (size_t i = 0; i + 1 < args.size(); ++i)
    if (args[i] == flag) {
      std::string v = args[i + 1];
      args.erase(args.begin() + static_cast<long>(i), args.begin() + static_cast<long>(i) + 2);
      return v;
    }
  return std::nullopt;
}

bool take_flag(std::vector<std::string>& args, std::string_view flag) {
  for (size_t i = 0; i < args.size(); ++i)
    if (args[i] == flag) {
      args.erase(args.begin() + static_cast<long>(i));
      return true;
    }
  return false;
}

// --explain's records of one op: a line "op NAME: ..." and the indented lines under it.
std::string explain_of(const std::string& text, const std::string& op) {
  std::istringstream in(text);
  std::string out;
  bool mine = false;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line[0] != ' ') mine = line.rfind("op " + op + ":", 0) == 0;
    if (mine) out += line + "\n";
  }
  return out;
}

std::string plural(size_t n, std::string_view one, std::string_view many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

}  // namespace

const std::vector<Repl::Command>& Repl::commands() {
  static const std::vector<Command> table = {
      {":help", "", "this list", &Repl::cmd_help},
      {":load", "FILE", "add FILE's imports, ops, monoids and schedules to the session", &Repl::cmd_load},
      {":list", "", "the session's definitions and settings", &Repl::cmd_list},
      {":check", "[OP] [--explain]", "check the session; --explain: each reduction's laws and proofs",
       &Repl::cmd_check},
      {":ir", "LEVEL OP [--schedule NAME]", "print OP at an IR level: ast tensor loop kernel cuda ptx", &Repl::cmd_ir},
      {":knobs", "[--merge] [K=V,...|clear]",
       "the session's knobs: the whole schedule, or with --merge over the op's schedule block", &Repl::cmd_knobs},
      {":target", "[sm_80|sm_90|sm_90a|sm_120]", "the target GPU", &Repl::cmd_target},
      {":shape", "[S=...,...]", "the sizes :run, :bench and :tune use", &Repl::cmd_shape},
      {":set", "[W=3,...|clear]", "values of scalar parameters for :run, :bench and :tune (else random)",
       &Repl::cmd_set},
      {":run", "OP [--schedule NAME] [--interp]",
       "run OP on random inputs, checked against the float64 reference "
       "(the GPU, else the SIMT interpreter)",
       &Repl::cmd_run},
      {":bench", "OP [--schedule NAME]", "time OP on the GPU against the naive schedule", &Repl::cmd_bench},
      {":tune", "OP [--budget 2m] [--dry-run]", "search OP's knobs at the shape (the GPU; --dry-run: the space only)",
       &Repl::cmd_tune},
      {":save", "FILE", "write the session's definitions to FILE, formatted", &Repl::cmd_save},
      {":quit", "", "leave (also :q, or end of input)", nullptr},
  };
  return table;
}

Repl::Repl(ReplOptions options, std::ostream& out, std::ostream& err)
    : options_(std::move(options)), out_(out), err_(err), session_(options_.stdlib_dirs, options_.error_limit) {}

bool Repl::feed(const std::string& line) {
  bool more = true;
  const auto body = [&] {
    more = feed_line(line);
    return 0;
  };
  if (run_guarded(body, err_, "") != 0) {
    ++failures_;
    pending_.clear();
  }
  return more;
}

bool Repl::feed_line(const std::string& line) {
  out_ << std::flush;  // a command's output before the next one's diagnostics, when both go to a pipe
  struct Flush {
    std::ostream& out;
    ~Flush() { out << std::flush; }
  } flush{out_};
  const size_t first = line.find_first_not_of(" \t");
  const bool blank = first == std::string::npos;
  // `:name ...`: a command, even in the middle of a definition (no definition line starts
  // with ':' and a letter).
  const bool command = !blank && line[first] == ':' && first + 1 < line.size() &&
                       std::isalpha(static_cast<unsigned char>(line[first + 1]));
  // Between definitions (nothing pending but doc comments): skip blank lines and plain
  // comments, run commands (doc comments before a command document nothing: dropped).
  if (!pending_started_) {
    if (blank && pending_.empty()) return true;
    if (!blank && line.compare(first, 2, "//") == 0 && line.compare(first, 3, "///") != 0) return true;
    if (command) {
      pending_.clear();
      if (!run_command(line.substr(first))) ++failures_;
      return !quit_;
    }
  } else if (command || (blank && pending_braces_ <= 0)) {
    // A definition left unfinished (a missing ';' or '}') ends here, with the parser's error,
    // instead of swallowing what follows.
    end_pending(command
                    ? fmt::format("a command ({}) came", line.substr(first, line.find_first_of(" \t", first) - first))
                    : "a blank line came");
    if (!command) return true;
    if (!run_command(line.substr(first))) ++failures_;
    return !quit_;
  }
  pending_ += line + "\n";
  pending_braces_ += open_braces(line);  // comments and strings end with their line
  if (!blank && line.compare(first, 3, "///") != 0) pending_started_ = true;
  // A definition ends when its braces balance and it ends a declaration: `}` or `;`.
  const size_t last = line.find_last_not_of(" \t\r");
  const bool complete =
      pending_started_ && pending_braces_ <= 0 && last != std::string::npos && (line[last] == '}' || line[last] == ';');
  if (complete) {
    std::string text;
    std::swap(text, pending_);
    pending_braces_ = 0;
    pending_started_ = false;
    define(text);
  }
  return true;
}

void Repl::end_pending(const std::string& by) {
  std::string text;
  std::swap(text, pending_);
  const int open = pending_braces_;
  pending_braces_ = 0;
  pending_started_ = false;
  if (open > 0) {
    ++failures_;
    err_ << fmt::format("error: {} inside a definition ({} brace{} still open); it was not added\n", by, open,
                        open == 1 ? "" : "s");
    return;
  }
  define(text);  // the parser says what is missing (e.g. expected ';')
}

void Repl::define(const std::string& text) {
  const std::string origin = fmt::format("<input {}>", ++inputs_);
  std::optional<std::vector<Session::Added>> added = session_.define(origin, text, err_, options_.color);
  if (!added) {
    ++failures_;
    err_ << "(not added; the session is unchanged)\n";
    return;
  }
  for (const Session::Added& a : *added) out_ << fmt::format("{} {}\n", a.redefined ? "redefined" : "defined", a.key);
}

bool Repl::run_command(const std::string& line) {
  std::vector<std::string> args = words_of(line);
  const std::string name = args.front() == ":q" ? ":quit" : args.front();
  args.erase(args.begin());
  for (const Command& c : commands()) {
    if (c.name != name) continue;
    if (!c.run) {
      quit_ = true;
      return true;
    }
    return (this->*c.run)(args);
  }
  std::vector<std::string_view> names;
  for (const Command& c : commands()) names.push_back(c.name);
  const std::string guess = closest_name(name, names);
  err_ << fmt::format("error: unknown command '{}'{}; :help lists the commands\n", name,
                      guess.empty() ? "" : fmt::format(" (did you mean '{}'?)", guess));
  return false;
}

bool Repl::cmd_help(const std::vector<std::string>&) {
  out_ << "Enter imports, ops, monoids and schedule blocks as in a .emmy file (a definition may span\n"
          "lines: it ends when its braces balance). Redefining a name replaces it. Commands:\n";
  for (const Command& c : commands())
    out_ << fmt::format("  {:<44} {}\n", fmt::format("{} {}", c.name, c.args), c.help);
  return true;
}

bool Repl::cmd_load(const std::vector<std::string>& args) {
  if (args.size() != 1) {
    err_ << "error: :load takes one file, e.g. :load examples/softmax.emmy\n";
    return false;
  }
  const std::optional<std::string> text = read_file(args[0], kMaxSourceBytes + 1);  // E006 past the limit
  if (!text) {
    std::error_code ec;
    err_ << fmt::format(
        "error: cannot read '{}'{}\n", args[0],
        std::filesystem::is_directory(args[0], ec) ? ": it is a directory; :load takes a .emmy file" : "");
    return false;
  }
  std::optional<std::vector<Session::Added>> keys = session_.define(args[0], *text, err_, options_.color);
  if (!keys) {
    err_ << "(not loaded; the session is unchanged)\n";
    return false;
  }
  out_ << fmt::format("loaded {}: {}\n", args[0], plural(keys->size(), "definition", "definitions"));
  return true;
}

bool Repl::cmd_list(const std::vector<std::string>&) {
  if (session_.definitions().empty()) out_ << "no definitions yet\n";
  for (const Definition& d : session_.definitions()) out_ << fmt::format("{:<56} {}\n", d.key, d.origin);
  out_ << fmt::format("target {}; shape {}; set {}; knobs {}{}\n", options_.target, shape_.empty() ? "(none)" : shape_,
                      set_.empty() ? "(none)" : set_, knobs_.empty() ? "(none)" : knobs_,
                      knobs_merge_ && !knobs_.empty() ? " (merged over the schedule block)" : "");
  return true;
}

std::unique_ptr<CheckedSession> Repl::checked_session() {
  std::unique_ptr<CheckedSession> c = session_.check();
  c->diags->render(err_, options_.color);
  if (c->diags->has_errors()) return nullptr;
  return c;
}

bool Repl::need_op(const CheckedSession& c, const std::string& op) {
  if (c.program->ops.count(op)) return true;
  std::vector<std::string> names;
  for (const auto& [name, _] : c.program->ops) names.push_back(name);
  const std::string guess = closest_name(op, names);
  err_ << fmt::format(
      "error: no op '{}' in the session{}\n", op,
      guess.empty() ? "; define it, :load a file, or import a module" : fmt::format(" (did you mean '{}'?)", guess));
  return false;
}

bool Repl::need_shape() {
  if (!shape_.empty()) return true;
  err_ << "error: no shape yet; set one with :shape, e.g. :shape N=64,C=256\n";
  return false;
}

LowerOptions Repl::lower_options(const CheckedSession& c, const std::string& op, const std::string& schedule) const {
  return {op, schedule, options_.target, options_.env_knobs, knobs_, knobs_merge_, &c.laws.chains, {}};
}

bool Repl::cmd_check(const std::vector<std::string>& given) {
  std::vector<std::string> args = given;
  const bool explain = take_flag(args, "--explain");
  std::unique_ptr<CheckedSession> c = checked_session();
  if (!c) return false;
  if (!args.empty() && !need_op(*c, args[0])) return false;
  if (explain) {
    const std::string text = algebra::explain_program(*c->program, c->laws);
    out_ << (args.empty() ? text : explain_of(text, args[0]));
    return true;
  }
  out_ << fmt::format("ok: {}, {}, {}\n", plural(c->program->ops.size(), "op", "ops"),
                      plural(c->program->monoids.size(), "monoid", "monoids"),
                      plural(c->program->schedules.size(), "schedule block", "schedule blocks"));
  return true;
}

bool Repl::cmd_ir(const std::vector<std::string>& given) {
  std::vector<std::string> args = given;
  const std::string schedule = take_option(args, "--schedule").value_or("");
  if (args.size() != 2 || std::find(std::begin(kLevels), std::end(kLevels), args[0]) == std::end(kLevels)) {
    err_ << "error: :ir takes a level (ast, tensor, loop, plan, cost, kernel, cuda, ptx) and an op, e.g. :ir cuda "
            "softmax\n";
    return false;
  }
  std::unique_ptr<CheckedSession> c = checked_session();
  if (!c || !need_op(*c, args[1])) return false;
  if (args[0] == "ast") {  // the checked AST of the source that defines the op
    out_ << print_checked(*c->program, c->program->ops.at(args[1]).decl_module);
    return true;
  }
  return print_level(*c->program, args[0], lower_options(*c, args[1], schedule), out_, err_) == 0;
}

std::string Repl::knobs_text() const {
  if (knobs_.empty()) return "(none)";
  return knobs_merge_ ? knobs_ + " (merged over the schedule block)" : knobs_ + " (the whole schedule)";
}

bool Repl::cmd_knobs(const std::vector<std::string>& given) {
  std::vector<std::string> args = given;
  const bool merge = take_flag(args, "--merge");
  if (args.empty() && !merge) {
    out_ << fmt::format("knobs {}\n", knobs_text());
    return true;
  }
  if (args.empty()) {
    err_ << "error: :knobs --merge takes a knob list, e.g. :knobs --merge FAST_EXP=0\n";
    return false;
  }
  if (args.size() == 1 && args[0] == "clear") {
    knobs_.clear();
    knobs_merge_ = false;
    out_ << "knobs cleared\n";
    return true;
  }
  std::string text;
  for (const std::string& a : args) text += a;
  SourceManager sources;
  Diagnostics diags(sources);
  check_knob_list(sources, diags, ":knobs", text, find_target(options_.target));
  if (diags.has_errors()) {
    diags.render(err_, options_.color);
    err_ << "(the knobs are unchanged)\n";
    return false;
  }
  knobs_ = text;
  knobs_merge_ = merge;
  out_ << fmt::format("knobs {}\n", knobs_text());
  return true;
}

bool Repl::cmd_target(const std::vector<std::string>& args) {
  if (args.empty()) {
    out_ << fmt::format("target {}\n", options_.target);
    return true;
  }
  if (args.size() != 1 || !find_target(args[0])) {
    std::vector<std::string> names;
    for (std::string_view t : target_names()) names.emplace_back(t);
    err_ << fmt::format("error: unknown target '{}'; the targets: {}\n", fmt::join(args, " "), fmt::join(names, ", "));
    return false;
  }
  options_.target = args[0];
  out_ << fmt::format("target {}\n", options_.target);
  return true;
}

bool Repl::cmd_shape(const std::vector<std::string>& args) {
  if (!args.empty()) {
    const std::string text = fmt::format("{}", fmt::join(args, ""));
    if (std::optional<std::string> why = shape_syntax_error(text)) {
      err_ << fmt::format("error: :shape: {} (the shape is unchanged)\n", *why);
      return false;
    }
    shape_ = text;
  }
  out_ << fmt::format("shape {}\n", shape_.empty() ? "(none)" : shape_);
  return true;
}

bool Repl::cmd_set(const std::vector<std::string>& args) {
  if (args.size() == 1 && args[0] == "clear")
    set_.clear();
  else if (!args.empty())
    set_ = fmt::format("{}", fmt::join(args, ""));
  out_ << fmt::format("set {}\n", set_.empty() ? "(none: scalar parameters get random values)" : set_);
  return true;
}

bool Repl::run_op_command(const std::vector<std::string>& given, bool bench) {
  std::vector<std::string> args = given;
  const std::string schedule = take_option(args, "--schedule").value_or("");
  RunOptions ro;
  ro.interp = take_flag(args, "--interp");
  ro.bench = bench;
  ro.shape = shape_;
  if (!set_.empty()) ro.set = {set_};
  if (args.size() != 1) {
    err_ << fmt::format("error: {} takes one op, e.g. {} softmax\n", bench ? ":bench" : ":run",
                        bench ? ":bench" : ":run");
    return false;
  }
  std::unique_ptr<CheckedSession> c = need_shape() ? checked_session() : nullptr;
  if (!c || !need_op(*c, args[0])) return false;
  return run_op(*c->program, lower_options(*c, args[0], schedule), ro, out_, err_) == 0;
}

bool Repl::cmd_run(const std::vector<std::string>& args) { return run_op_command(args, false); }
bool Repl::cmd_bench(const std::vector<std::string>& args) { return run_op_command(args, true); }

bool Repl::cmd_tune(const std::vector<std::string>& given) {
  std::vector<std::string> args = given;
  TuneOptions t;
  t.dry_run = take_flag(args, "--dry-run");
  const std::string budget = take_option(args, "--budget").value_or("2m");
  const std::optional<double> seconds = parse_duration(budget);
  if (args.size() != 1 || !seconds) {
    err_ << "error: :tune takes one op and optionally --budget (90s, 10m, 1h) and --dry-run, e.g. :tune softmax "
            "--budget 2m\n";
    return false;
  }
  std::unique_ptr<CheckedSession> c = need_shape() ? checked_session() : nullptr;
  if (!c || !need_op(*c, args[0])) return false;
  // The measuring worker reads the op from a file: the session, written out.
  std::error_code ec;
  const std::filesystem::path tmp = std::filesystem::temp_directory_path(ec);
  const std::filesystem::path dir = tmp / fmt::format("emmy-repl-{}", getpid());
  if (!ec) std::filesystem::create_directories(dir, ec);
  t.file = (dir / "session.emmy").string();
  const std::string failed = ec ? ec.message() : write_file(t.file, session_.source(), {false});
  if (!failed.empty()) {
    const char* env = std::getenv("TMPDIR");
    err_ << fmt::format("error: :tune writes the session to a temporary file and cannot: {}{}\n", failed,
                        env ? fmt::format(" (TMPDIR is '{}'; point it at a writable directory)", env) : "");
    return false;
  }
  t.shape = shape_;
  if (!set_.empty()) t.set = {set_};
  t.budget_s = *seconds;
  t.self = options_.self;
  t.stdlib_dirs = options_.stdlib_dirs;
  t.progress = options_.interactive;
  return tune_op(*c->program, lower_options(*c, args[0], ""), t, out_, err_) == 0;
}

bool Repl::cmd_save(const std::vector<std::string>& args) {
  if (args.size() != 1) {
    err_ << "error: :save takes one file, e.g. :save my_ops.emmy\n";
    return false;
  }
  const std::string text = session_.source();
  if (const std::string failed = write_file(args[0], format_source(text).value_or(text)); !failed.empty()) {
    err_ << "error: " << failed << "\n";
    return false;
  }
  out_ << fmt::format("saved {} to {}\n", plural(session_.definitions().size(), "definition", "definitions"), args[0]);
  return true;
}

std::vector<std::string> Repl::completions() const {
  std::vector<std::string> out;
  for (const Command& c : commands()) out.emplace_back(c.name);
  for (const Definition& d : session_.definitions())
    if (d.key.rfind("op ", 0) == 0) out.push_back(d.key.substr(3));
  for (std::string_view k : knob_names()) out.emplace_back(k);
  for (std::string_view w : knob_value_words()) out.emplace_back(w);
  for (std::string_view a : atom_names())  // a pattern's <N> is left for the user to type
    out.push_back("a:" + std::string(a.substr(0, a.find("<N>"))));
  for (std::string_view t : target_names()) out.emplace_back(t);
  for (std::string_view l : kLevels) out.emplace_back(l);
  out.emplace_back("--schedule"), out.emplace_back("--interp"), out.emplace_back("--explain");
  out.emplace_back("--budget"), out.emplace_back("--dry-run"), out.emplace_back("--merge");
  return out;
}

void Repl::end_of_input() {
  if (!pending_started_) {
    pending_.clear();  // doc comments that document nothing
    return;
  }
  end_pending("the input ended");
}

int run_repl(Repl& repl, LineReader& reader) {
  bool more = true;
  while (more) {
    std::optional<std::string> line = reader.read(repl.in_definition() ? "  ...> " : "emmy> ");
    if (!line) break;
    more = repl.feed(*line);
  }
  if (more) repl.end_of_input();
  return repl.status();
}

std::string history_path() {
  namespace fs = std::filesystem;
  fs::path dir;
  if (const char* xdg = std::getenv("XDG_CONFIG_HOME"); xdg && *xdg)
    dir = fs::path(xdg) / "emmy";
  else if (const char* home = std::getenv("HOME"); home && *home)
    dir = fs::path(home) / ".config" / "emmy";
  else
    return "";
  std::error_code ec;
  fs::create_directories(dir, ec);
  return ec ? "" : (dir / "repl_history").string();
}

}  // namespace emmy::repl
