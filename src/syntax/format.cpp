// Formats from the token stream, so comments survive; the layout depends only on the
// tokens and on where the author broke lines, which makes fmt(fmt(x)) == fmt(x).
#include "syntax/format.hpp"

#include <algorithm>
#include <set>

#include "syntax/parse.hpp"

namespace emmy {
namespace {

constexpr int kIndent = 2;

const std::set<std::string, std::less<>> kOpenBrackets = {"(", "["};
const std::set<std::string, std::less<>> kCloseBrackets = {")", "]"};

bool is(const Token* t, std::string_view s) { return t && t->text == s; }

// A '-' or '!' is unary when it cannot end an operand on its left.
bool starts_operand(const Token* prev) {
  if (!prev) return true;
  if (prev->kind == TokenKind::Word) return prev->text == "yield" || prev->text == "where";
  if (prev->kind == TokenKind::Number || prev->kind == TokenKind::String) return false;
  return !kCloseBrackets.count(prev->text);
}

struct Line {
  int indent = 0;
  std::string code;
  std::string trailing_comment;  // a `//` comment after code on the same line
};

class Formatter {
 public:
  explicit Formatter(std::string_view text) : text_(text) {}

  std::string run(const std::vector<Token>& toks) {
    for (size_t i = 0; i < toks.size(); ++i) emit(toks, i);
    return render();
  }

 private:
  int newlines_between(const Token* prev, const Token& cur) const {
    if (!prev) return 0;
    std::string_view gap = text_.substr(prev->end, cur.begin - prev->end);
    return static_cast<int>(std::count(gap.begin(), gap.end(), '\n'));
  }

  void new_line(int blank_lines) {
    if (!lines_.empty() && lines_.back().code.empty() && lines_.back().trailing_comment.empty()) lines_.pop_back();
    for (int i = 0; i < blank_lines; ++i) lines_.push_back({});
    lines_.push_back({indent_now(), "", ""});
  }

  // Inside brackets each level indents once; a statement continued on the next line
  // outside brackets indents twice.
  int indent_now() const {
    return kIndent * (braces_ + brackets_) + (open_statement_ && brackets_ == 0 ? 2 * kIndent : 0);
  }

  bool space_before(const Token* p, const Token& c) const {
    if (!p) return false;
    if (in_knob_value_ && !is(p, "=")) return false;
    if (c.text == "@" || is(p, "@")) return false;
    if (c.text == "-" && is(p, "-")) return true;  // `- -x`, never `--x`
    if (c.text == "," || c.text == ";" || c.text == "." || is(p, ".")) return c.text == ";" && is(p, "=");
    if (kCloseBrackets.count(c.text)) return false;
    if (is(p, "(") || is(p, "[")) return false;
    if (unary_operand_) return false;
    if (c.text == "(" || c.text == "[") {
      if (p->kind == TokenKind::Word) return keyword_before_paren(*p);  // f(x), t[i] vs yield (a, b)
      return !kCloseBrackets.count(p->text) && p->kind != TokenKind::Number;
    }
    if (c.text == ":") return is(p, ",");
    if (is(p, ":")) return c.text != "]" && c.text != ",";
    return true;
  }

  // Keywords followed by an expression keep a space before '(': `yield (n, d)`.
  // (`combine(a, b)` and `lift(x)` read as calls and take none.)
  static bool keyword_before_paren(const Token& t) {
    static const std::set<std::string, std::less<>> spaced = {"where",  "yield",    "identity", "op",
                                                              "monoid", "schedule", "as",       "for"};
    return spaced.count(t.text) > 0;
  }

  void emit(const std::vector<Token>& toks, size_t i) {
    const Token& c = toks[i];
    const Token* p = i > 0 ? &toks[i - 1] : nullptr;
    int nl = newlines_between(p, c);

    if (c.text == "}" && c.kind == TokenKind::Punct) braces_ = std::max(0, braces_ - 1);
    if (kCloseBrackets.count(c.text) && c.kind == TokenKind::Punct) brackets_ = std::max(0, brackets_ - 1);

    bool force_break = p && ((p->kind == TokenKind::Punct && (p->text == "{" || p->text == ";" || p->text == "}")) ||
                             p->kind == TokenKind::LineComment || p->kind == TokenKind::DocComment ||
                             (c.kind == TokenKind::Punct && c.text == "}") || c.kind == TokenKind::DocComment);
    // A comment after code that ends its line trails it; a block comment followed by
    // more code on the same line stays inline.
    const Token* next = i + 1 < toks.size() ? &toks[i + 1] : nullptr;
    bool ends_line = !next || newlines_between(&c, *next) > 0 || c.kind == TokenKind::LineComment;
    bool is_comment = c.kind == TokenKind::LineComment || c.kind == TokenKind::BlockComment;
    bool trailing = is_comment && ends_line && nl == 0 && p && !lines_.empty() && !lines_.back().code.empty();
    if (trailing) {
      lines_.back().trailing_comment = c.text;
    } else if (lines_.empty()) {
      lines_.push_back({indent_now(), "", ""});
      lines_.back().code = c.text;
    } else if (nl > 0 || force_break) {
      bool after_open = p && p->kind == TokenKind::Punct && p->text == "{";
      bool before_close = c.kind == TokenKind::Punct && c.text == "}";
      new_line(nl >= 2 && !after_open && !before_close ? 1 : 0);
      lines_.back().code = c.text;
    } else {
      unary_operand_ = prev_unary_;
      if (space_before(p, c)) lines_.back().code += ' ';
      lines_.back().code += c.text;
    }

    track_context(p, c);
  }

  void track_context(const Token* p, const Token& c) {
    bool comment =
        c.kind == TokenKind::LineComment || c.kind == TokenKind::BlockComment || c.kind == TokenKind::DocComment;
    if (!comment) open_statement_ = !(c.kind == TokenKind::Punct && (c.text == ";" || c.text == "{" || c.text == "}"));
    if (c.kind != TokenKind::Punct && c.kind != TokenKind::Word) {
      prev_unary_ = false;
      return;
    }
    prev_unary_ = (c.text == "-" || c.text == "!") && starts_operand(p);
    if (c.kind == TokenKind::Word && c.text == "schedule" && braces_ == 0) in_schedule_ = true;
    if (c.text == "{") ++braces_;
    if (kOpenBrackets.count(c.text)) ++brackets_;
    if ((c.text == "}" || c.text == ";") && braces_ == 0) in_schedule_ = false;  // `{ ... }` or `auto;`
    if (in_schedule_ && braces_ == 1 && c.text == "=") in_knob_value_ = true;
    if (c.text == ";") in_knob_value_ = false;
  }

  // Aligns runs of consecutive trailing comments, like gofmt.
  std::string render() {
    while (!lines_.empty() && lines_.back().code.empty() && lines_.back().trailing_comment.empty()) lines_.pop_back();
    std::string out;
    size_t i = 0;
    while (i < lines_.size()) {
      size_t j = i;
      size_t width = 0;
      while (j < lines_.size() && !lines_[j].trailing_comment.empty() && !lines_[j].code.empty()) {
        width = std::max(width, lines_[j].indent + lines_[j].code.size());
        ++j;
      }
      if (j == i) {
        out += line_text(lines_[i], 0);
        ++i;
        continue;
      }
      for (size_t k = i; k < j; ++k) out += line_text(lines_[k], width);
      i = j;
    }
    return out;
  }

  static std::string line_text(const Line& l, size_t comment_col) {
    if (l.code.empty() && l.trailing_comment.empty()) return "\n";
    std::string s(static_cast<size_t>(l.indent), ' ');
    s += l.code;
    if (!l.trailing_comment.empty()) {
      size_t w = std::max(comment_col, s.size());
      s += std::string(w - s.size() + 2, ' ') + l.trailing_comment;
    }
    return s + "\n";
  }

  std::string_view text_;
  std::vector<Line> lines_;
  int braces_ = 0;
  int brackets_ = 0;
  bool in_schedule_ = false;
  bool open_statement_ = false;  // the last code token did not end a statement
  bool in_knob_value_ = false;
  bool prev_unary_ = false;
  bool unary_operand_ = false;
};

}  // namespace

std::optional<std::string> format_source(std::string_view text) {
  std::vector<Token> toks;
  if (!lex_all(text, toks)) return std::nullopt;
  if (toks.empty()) return std::string();
  return Formatter(text).run(toks);
}

}  // namespace emmy
