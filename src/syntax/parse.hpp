// The syntax layer's entry: .emmy text -> AST, reporting lexical and syntax errors.
#pragma once

#include "support/diagnostics.hpp"
#include "syntax/ast.hpp"

namespace emmy {

// Parses one file of `sources` (E006 when it is over kMaxSourceBytes). On a syntax error the diagnostics say why and
// the returned module holds no items (the tree is never built from a broken parse).
ast::Module parse_module(const SourceManager& sources, uint32_t file, Diagnostics& diags);

// Token kinds the formatter and editors need, independent of ANTLR.
enum class TokenKind { Word, Number, String, Punct, LineComment, BlockComment, DocComment, Error };
struct Token {
  TokenKind kind;
  std::string text;
  uint32_t begin = 0, end = 0;  // byte offsets
};
// Lexes the whole text, comments included; returns false if it has lexical errors.
bool lex_all(std::string_view text, std::vector<Token>& out);

// The language's reserved words (used by the formatter, editors, the REPL).
const std::vector<std::string>& keywords();

}  // namespace emmy
