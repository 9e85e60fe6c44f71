// Rendering: file:line:col, the source line, a caret under the range, notes, help.
#include <doctest/doctest.h>

#include <fstream>
#include <set>
#include <sstream>

#include "support/diagnostics.hpp"
#include "support/error_codes.hpp"
#include "support/utf8.hpp"

using namespace emmy;

TEST_CASE("an error renders with location, line, caret, note and help") {
  SourceManager sm;
  uint32_t f = sm.add("a.emmy", "line one\n  y[i] = x[j];\n");
  Diagnostics d(sm);
  d.error("E021", {f, 18, 19}, "index variable 'j' is neither on the left side nor reduced")
      .note({f, 2, 5}, "see here")
      .hint("reduce it");
  CHECK(d.error_count() == 1);
  CHECK(d.render_one(d.all()[0]) ==
        "a.emmy:2:10: error[E021]: index variable 'j' is neither on the left side nor reduced\n"
        " 2 |   y[i] = x[j];\n"
        "   |          ^\n"
        "a.emmy:1:3: note: see here\n"
        " 1 | line one\n"
        "   |   ^~~\n"
        "  help: reduce it\n");
}

TEST_CASE("ranges past the end of a line and empty ranges still render one caret") {
  SourceManager sm;
  uint32_t f = sm.add("b.emmy", "abc");
  Diagnostics d(sm);
  d.error("E002", {f, 3, 3}, "unexpected end of file");
  d.warning("E043", {f, 0, 100}, "w");
  CHECK(d.error_count() == 1);
  std::ostringstream out;
  d.render(out);
  CHECK(out.str() ==
        "b.emmy:1:4: error[E002]: unexpected end of file\n 1 | abc\n   |    ^\n"
        "b.emmy:1:1: warning[E043]: w\n 1 | abc\n   | ^~~\n");
}

TEST_CASE("line and column of offsets") {
  SourceFile f("x", "a\nbc\r\n\nd");
  CHECK(f.line_count() == 4);
  CHECK(f.line_col(0).line == 1);
  CHECK(f.line_col(3).line == 2);
  CHECK(f.line_col(3).column == 2);
  CHECK(f.line_text(2) == "bc");
  CHECK(f.line_col(7).line == 4);
  CHECK(f.line_text(5) == "");
}

TEST_CASE("every error code is unique and documented in docs/errors.md") {
  std::ifstream in(std::string(EMMY_SOURCE_DIR) + "/docs/errors.md");
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  std::string doc = ss.str();
  std::set<std::string_view> seen;
  for (const ErrorCodeInfo& e : error_codes()) {
    CAPTURE(e.code);
    CHECK(seen.insert(e.code).second);
    CHECK(doc.find(std::string(e.code)) != std::string::npos);
    CHECK(find_error_code(e.code) == &e);
  }
  CHECK(find_error_code("E999") == nullptr);
}

TEST_CASE("carets align by characters; invalid bytes show as '?'") {
  SourceManager sm;
  uint32_t f = sm.add("u.emmy", "// é\nx = \xc3\xa9\xc3\xa9 + \xff y;\n");
  Diagnostics d(sm);
  d.error("E001", {f, 10, 14}, "two letters");  // "éé": 4 bytes, 2 characters
  d.error("E001", {f, 17, 18}, "bad byte");
  d.error("E001", {f, 19, 20}, "after it");
  std::ostringstream out;
  d.render(out);
  CHECK(out.str() ==
        "u.emmy:2:5: error[E001]: two letters\n 2 | x = \xc3\xa9\xc3\xa9 + ? y;\n   |     ^~\n"
        "u.emmy:2:12: error[E001]: bad byte\n 2 | x = \xc3\xa9\xc3\xa9 + ? y;\n   |          ^\n"
        "u.emmy:2:14: error[E001]: after it\n 2 | x = \xc3\xa9\xc3\xa9 + ? y;\n   |            ^\n");
}

TEST_CASE("strict UTF-8: overlong forms, surrogates and out-of-range code points are invalid") {
  CHECK(utf8_sequence_length("a", 0) == 1);
  CHECK(utf8_sequence_length("\xc3\xa9", 0) == 2);
  CHECK(utf8_sequence_length("\xe2\x88\x91", 0) == 3);      // U+2211
  CHECK(utf8_sequence_length("\xf0\x9f\x98\x80", 0) == 4);  // U+1F600
  CHECK(utf8_sequence_length("\xc0\xaf", 0) == 0);          // overlong '/'
  CHECK(utf8_sequence_length("\xe0\x80\xaf", 0) == 0);      // overlong, 3 bytes
  CHECK(utf8_sequence_length("\xf0\x8c\x9c\x97", 0) == 0);  // overlong, 4 bytes (a fuzzer find)
  CHECK(utf8_sequence_length("\xed\xa0\x80", 0) == 0);      // surrogate U+D800
  CHECK(utf8_sequence_length("\xf4\x90\x80\x80", 0) == 0);  // > U+10FFFF
  CHECK(utf8_sequence_length("\x80", 0) == 0);              // stray continuation
  CHECK(utf8_sequence_length("\xe2\x88", 0) == 0);          // truncated
  CHECK(first_invalid_utf8("ok \xc3\xa9 \xf0\x8c\x9c\x97") == 6);
  CHECK(first_invalid_utf8("fine") == std::string_view::npos);
}

TEST_CASE("an error limit keeps the first errors, counts the rest, and says so once") {
  SourceManager sm;
  uint32_t f = sm.add("l.emmy", "let s = 1;\n");
  Diagnostics d(sm, 3);
  for (int i = 0; i < 1000; ++i) d.error("E015", {f, 4, 5}, "'s' is already defined").note({f, 4, 5}, "here");
  d.warning("W001", {f, 0, 3}, "a warning after the limit");
  CHECK(d.error_count() == 1000);
  CHECK(d.has_errors());
  CHECK(d.at_limit());
  CHECK(d.all().size() == 3);
  CHECK(d.left_out() == 998);
  std::ostringstream out;
  d.render(out);
  const std::string text = out.str();
  size_t shown = 0;
  for (size_t at = text.find("error[E015]"); at != std::string::npos; at = text.find("error[E015]", at + 1)) ++shown;
  CHECK(shown == 3);
  CHECK(text.find("a warning after the limit") == std::string::npos);
  CHECK(text.find("error: too many errors emitted, stopping now: 998 more not shown (the limit is 3 errors") !=
        std::string::npos);
  // No limit: every one kept, no closing line.
  Diagnostics all(sm);
  for (int i = 0; i < 50; ++i) all.error("E015", {f, 4, 5}, "again");
  CHECK(all.all().size() == 50);
  std::ostringstream every;
  all.render(every);
  CHECK(every.str().find("too many errors") == std::string::npos);
}

TEST_CASE("control characters show as control pictures in the line and the message, carets aligned") {
  SourceManager sm;
  const char line[] = "y = x \0+ 1;\tz\x1b;\n";
  const char message[] = "unexpected character '\0'";
  uint32_t f = sm.add("n.emmy", std::string(line, sizeof line - 1));
  Diagnostics d(sm);
  d.error("E001", {f, 6, 7}, std::string(message, sizeof message - 1));
  d.error("E001", {f, 9, 10}, "after it");
  std::ostringstream out;
  d.render(out);
  CHECK(out.str() ==
        "n.emmy:1:7: error[E001]: unexpected character '\xe2\x90\x80'\n"
        " 1 | y = x \xe2\x90\x80+ 1;\tz\xe2\x90\x9b;\n"
        "   |       ^\n"
        "n.emmy:1:10: error[E001]: after it\n"
        " 1 | y = x \xe2\x90\x80+ 1;\tz\xe2\x90\x9b;\n"
        "   |          ^\n");
  CHECK(out.str().find('\0') == std::string::npos);
}
