// Checks of the token stream before parsing: bracket and unary nesting (E004), name length (E005).
#include "syntax/token_checks.hpp"

#include <string>
#include <vector>

#include <fmt/format.h>

#include "EmmyLexer.h"

namespace emmy {
namespace {

constexpr int kMaxNesting = 200;  // brackets and unary operators: ANTLR's recursion
constexpr size_t kMaxNameLength = 255;

// Whether a token ends an operand: a '-' after it is binary, not unary.
bool ends_operand(antlr4::Token* t) {
  const size_t type = t->getType();
  const std::string s = t->getText();
  return type == EmmyLexer::ID || type == EmmyLexer::INT || type == EmmyLexer::FLOAT || s == ")" || s == "]" ||
         s == "true" || s == "false" || s == "inf";
}

}  // namespace

// ANTLR's recursive descent has no depth limit: refuse pathological nesting up front. Each open
// bracket is a level, and so is each unary operator until its operand ends (at the next binary
// operator, comma or closing bracket of its level): `- - - x` nests three deep, `a - b - c` none.
bool nesting_ok(antlr4::CommonTokenStream& tokens, const OffsetMap& map, uint32_t file, Diagnostics& diags) {
  std::vector<int> unary{0};  // per open bracket: the unary operators pending at that level
  int depth = 0;
  antlr4::Token* prev = nullptr;
  for (antlr4::Token* t : tokens.getTokens()) {
    if (t->getChannel() != antlr4::Token::DEFAULT_CHANNEL) continue;
    const std::string s = t->getText();
    if (s == "(" || s == "[" || s == "{") {
      ++depth;
      unary.push_back(0);
    } else if (s == ")" || s == "]" || s == "}") {
      if (unary.size() > 1) {
        depth -= unary.back() + 1;
        unary.pop_back();
      }
      depth -= unary.back();  // the bracket closes the operand of the level's unary operators
      unary.back() = 0;
    } else if (s == ";") {
      depth = 0;
      unary.assign(1, 0);
    } else if (s == "!" || (s == "-" && !(prev && ends_operand(prev)))) {
      ++depth;
      ++unary.back();
    } else if (t->getType() != EmmyLexer::ID && t->getType() != EmmyLexer::INT && t->getType() != EmmyLexer::FLOAT &&
               s != "." && s != "true" && s != "false" && s != "inf") {
      depth -= unary.back();  // a binary operator, ',' or ':' ends the operand
      unary.back() = 0;
    }
    prev = t;
    if (depth > kMaxNesting) {
      SourceRange r{file, map.byte(t->getStartIndex()), map.byte(t->getStopIndex() + 1)};
      diags.error("E004", r, fmt::format("expression nested more than {} levels deep", kMaxNesting))
          .hint("split the expression with 'let' bindings");
      return false;
    }
  }
  return true;
}

// Names reach kernel names, file names and NVRTC: refuse the absurd ones up front.
bool names_ok(antlr4::CommonTokenStream& tokens, const OffsetMap& map, uint32_t file, Diagnostics& diags) {
  bool ok = true;
  for (antlr4::Token* t : tokens.getTokens()) {
    if (t->getType() != EmmyLexer::ID || t->getText().size() <= kMaxNameLength) continue;
    SourceRange r{file, map.byte(t->getStartIndex()), map.byte(t->getStartIndex()) + 1};
    diags
        .error("E005", r,
               fmt::format("name '{}...' is {} characters long; names have at most {}", t->getText().substr(0, 16),
                           t->getText().size(), kMaxNameLength))
        .hint("choose a shorter name");
    ok = false;
  }
  return ok;
}

}  // namespace emmy
