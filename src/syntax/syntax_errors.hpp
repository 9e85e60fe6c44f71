// The parser's error reporting: syntax errors with what was expected and a hint, ANTLR's
// recovery changed so that later errors are found too, and the lexer's errors from its error
// channel. ANTLR types stay in the parser's files (build_ast.cpp, token_checks.*, syntax_errors.*).
#pragma once

#include <memory>
#include <string_view>

#include "EmmyParser.h"
#include "antlr4-runtime.h"
#include "support/diagnostics.hpp"
#include "syntax/token_checks.hpp"

namespace emmy {

inline constexpr size_t kErrorChannel = 3;  // the lexer's channel for characters it cannot take

// Whether `node` is the terminal token `text`.
bool is_token(antlr4::tree::ParseTree* node, std::string_view text);
// Lexical errors ride on the error channel so the parser can go on; reports them.
void report_lexical_errors(antlr4::CommonTokenStream& tokens, const OffsetMap& map, uint32_t file, Diagnostics& diags);
// Gives the parser Emmy's error strategy and a listener that reports its syntax errors into
// `diags`, as long as the returned listener lives.
std::unique_ptr<antlr4::ANTLRErrorListener> report_syntax_errors(EmmyParser& parser, Diagnostics& diags, uint32_t file,
                                                                 const OffsetMap& map,
                                                                 antlr4::CommonTokenStream& tokens);

}  // namespace emmy
