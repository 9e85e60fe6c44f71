// Tokens for tools (formatter, editors, REPL) and the keyword list, from the ANTLR lexer.
#include <cctype>

#include "EmmyLexer.h"
#include "antlr4-runtime.h"
#include "support/utf8.hpp"
#include "syntax/parse.hpp"

namespace emmy {
namespace {

bool is_word(const std::string& s) {
  return !s.empty() && (std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_');
}

// The grammar's literal tokens, without quotes ("'op'" -> "op").
std::vector<std::string> literal_tokens() {
  antlr4::ANTLRInputStream input("");
  EmmyLexer lexer(&input);
  const antlr4::dfa::Vocabulary& vocab = lexer.getVocabulary();
  std::vector<std::string> out;
  for (size_t t = 1; t <= vocab.getMaxTokenType(); ++t) {
    std::string lit = vocab.getLiteralName(t);
    if (lit.size() >= 2 && lit.front() == '\'') out.push_back(lit.substr(1, lit.size() - 2));
  }
  return out;
}

}  // namespace

const std::vector<std::string>& keywords() {
  static const std::vector<std::string> words = [] {
    std::vector<std::string> w;
    for (std::string& s : literal_tokens())
      if (is_word(s)) w.push_back(std::move(s));
    return w;
  }();
  return words;
}

bool lex_all(std::string_view text, std::vector<Token>& out) {
  if (first_invalid_utf8(text) != std::string_view::npos) return false;  // ANTLR's decoder would throw
  // ANTLR positions are code points; map them back to bytes.
  std::vector<uint32_t> starts;
  for (uint32_t i = 0; i < text.size(); ++i)
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) starts.push_back(i);
  starts.push_back(static_cast<uint32_t>(text.size()));
  auto byte = [&](size_t cp) { return starts[std::min(cp, starts.size() - 1)]; };

  antlr4::ANTLRInputStream input(std::string{text});
  EmmyLexer lexer(&input);
  lexer.removeErrorListeners();
  bool ok = true;
  for (auto t = lexer.nextToken(); t->getType() != antlr4::Token::EOF; t = lexer.nextToken()) {
    Token tok;
    tok.text = t->getText();
    tok.begin = byte(t->getStartIndex());
    tok.end = byte(t->getStopIndex() + 1);
    switch (t->getType()) {
      case EmmyLexer::WS: continue;
      case EmmyLexer::ID: tok.kind = TokenKind::Word; break;
      case EmmyLexer::INT:
      case EmmyLexer::FLOAT: tok.kind = TokenKind::Number; break;
      case EmmyLexer::STRING: tok.kind = TokenKind::String; break;
      case EmmyLexer::DOC: tok.kind = TokenKind::DocComment; break;
      case EmmyLexer::LINE_COMMENT: tok.kind = TokenKind::LineComment; break;
      case EmmyLexer::BLOCK_COMMENT: tok.kind = TokenKind::BlockComment; break;
      case EmmyLexer::UNTERMINATED_COMMENT:
      case EmmyLexer::ERRCHAR:
        tok.kind = TokenKind::Error;
        ok = false;
        break;
      default: tok.kind = is_word(tok.text) ? TokenKind::Word : TokenKind::Punct; break;
    }
    out.push_back(std::move(tok));
  }
  return ok;
}

}  // namespace emmy
