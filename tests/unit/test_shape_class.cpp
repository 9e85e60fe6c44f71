// Unit tests of the tuning database's shape classes: rounding, text round trips, distance, the
// guards of a set of classes (checked by evaluating them at sizes around the midpoints), and the
// nearest tuned class in a database.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "tune/database.hpp"
#include "tune/shape_class.hpp"

namespace fs = std::filesystem;
using namespace emmy::tune;

namespace {

// A guard of class_guards: "S >= 2897 && S < 5793 && D == 64" at `sizes` (every name bound).
bool holds(const std::string& guard, const std::map<std::string, int64_t>& sizes) {
  if (guard.empty()) return true;
  size_t at = 0;
  while (at < guard.size()) {
    size_t end = guard.find(" && ", at);
    if (end == std::string::npos) end = guard.size();
    const std::string term = guard.substr(at, end - at);
    const size_t sp = term.find(' '), sp2 = term.find(' ', sp + 1);
    const std::string name = term.substr(0, sp), op = term.substr(sp + 1, sp2 - sp - 1);
    const int64_t v = sizes.at(name), bound = std::stoll(term.substr(sp2 + 1));
    const bool ok = op == "==" ? v == bound : op == ">=" ? v >= bound : op == "<" ? v < bound : false;
    REQUIRE((op == "==" || op == ">=" || op == "<"));
    if (!ok) return false;
    at = end == guard.size() ? end : end + 4;
  }
  return true;
}

}  // namespace

TEST_CASE("shape class: small sizes exact, large ones to the nearest power of two") {
  CHECK(shape_class({{"B", 1}, {"H", 8}, {"S", 4096}, {"D", 64}}).text() == "B=1,D=64,H=8,S~4096");
  CHECK(shape_class({{"S", 4097}}).text() == "S~4096");
  CHECK(shape_class({{"S", 5792}}).text() == "S~4096");  // log2 5792 = 12.4997
  CHECK(shape_class({{"S", 5793}}).text() == "S~8192");
  CHECK(shape_class({{"C", 50257}, {"N", 8192}}).text() == "C~65536,N~8192");
  CHECK(shape_class({{"K", 256}, {"M", 257}}).text() == "K=256,M~256");
  CHECK(shape_class({}).text().empty());
}

TEST_CASE("shape class: text round trip and refusals") {
  for (std::string text : {"B=1,D=64,H=8,S~4096", "C~65536,N~8192", "K=256"}) {
    std::optional<ShapeClass> c = parse_shape_class(text);
    REQUIRE(c);
    CHECK(c->text() == text);
  }
  for (std::string bad : {"S", "=4", "S~", "S~x", "S=-1", "S~4,"}) CHECK_FALSE(parse_shape_class(bad));
}

TEST_CASE("shape class: distance over rounded sizes; exact sizes must agree") {
  const ShapeClass a = *parse_shape_class("D=64,S~4096"), b = *parse_shape_class("D=64,S~1024"),
                   c = *parse_shape_class("D=128,S~4096"), d = *parse_shape_class("S~4096");
  CHECK(*class_distance(a, b) == doctest::Approx(2.0));
  CHECK(*class_distance(a, a) == 0.0);
  CHECK_FALSE(class_distance(a, c));
  CHECK_FALSE(class_distance(a, d));
  CHECK(*class_distance(*parse_shape_class("M~1024,N~1024"), *parse_shape_class("M~4096,N~512")) ==
        doctest::Approx(3.0));
}

TEST_CASE("shape class: guards split each rounded size at the midpoints, so the nearest class holds") {
  const std::vector<ShapeClass> classes = {*parse_shape_class("D=64,S~1024"), *parse_shape_class("D=64,S~4096"),
                                           *parse_shape_class("D=64,S~16384"), *parse_shape_class("D=128,S~4096")};
  const std::vector<std::string> g = class_guards(classes);
  REQUIRE(g.size() == 4);
  CHECK(g[0] == "D == 64 && S < 2048");
  CHECK(g[1] == "D == 64 && S >= 2048 && S < 8192");
  CHECK(g[2] == "D == 64 && S >= 8192");
  CHECK(g[3] == "D == 128");
  // Every size is taken by exactly the class nearest to it in log2 (ties to the larger).
  for (int64_t s : {1, 1000, 1448, 2047, 2048, 4096, 5000, 8191, 8192, 100000}) {
    CAPTURE(s);
    const std::map<std::string, int64_t> at{{"D", 64}, {"S", s}};
    int taken = 0, which = -1;
    for (size_t i = 0; i < g.size(); ++i)
      if (holds(g[i], at)) ++taken, which = static_cast<int>(i);
    CHECK(taken == 1);
    int nearest = 0;  // by |log2 s - log2 S| over S = 1024, 4096, 16384; ties to the larger
    for (int i = 1; i < 3; ++i) {
      const double here = std::abs(std::log2(static_cast<double>(s)) - (10 + 2 * i));
      const double there = std::abs(std::log2(static_cast<double>(s)) - (10 + 2 * nearest));
      if (here <= there) nearest = i;
    }
    CHECK(which == nearest);
  }
  CHECK(holds(g[3], {{"D", 128}, {"S", 7}}));
  CHECK(class_guards({*parse_shape_class("S~4096")}) == std::vector<std::string>{"S >= 2897 && S < 5793"});
  CHECK(class_guards({*parse_shape_class("D=64,S~4096")}) == std::vector<std::string>{"D == 64"});
  CHECK(class_guards({*parse_shape_class("")}) == std::vector<std::string>{"1 == 1"});
  for (int64_t s : {2896, 2897, 4096, 5792, 5793}) {
    CAPTURE(s);
    CHECK(holds("S >= 2897 && S < 5793", {{"S", s}}) == (shape_class({{"S", s}}).text() == "S~4096"));
  }
}

TEST_CASE("shape class: the nearest tuned class in a database") {
  const fs::path dir = fs::temp_directory_path() / ("emmy-shape-class-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  {
    Database db = Database::open((dir / "t.sqlite").string());
    auto key = [](const std::string& cls) {
      return TuneKey{"h1", "sdpa", "nn.emmy", "sm_90a", "NVIDIA H200", cls, "f16"};
    };
    Point p;
    p.knobs = "COOP=t128/v8";
    p.ok = true;
    p.time_us = 12.5;
    db.record(key("D=64,S~1024"), p);
    db.record(key("D=64,S~16384"), p);
    db.record(key("D=128,S~4096"), p);
    Point failed;
    failed.knobs = "COOP=t32";
    db.record(key("D=64,S~8192"), failed);  // no ok point: never the nearest
    TuneKey other = key("D=64,S~4096");
    other.target = "sm_90";
    db.record(other, p);  // another target
    std::optional<NearestClass> n = nearest_class(db, key("D=64,S~4096"));
    REQUIRE(n);
    CHECK(n->entry.key.shape_class == "D=64,S~1024");  // 2 away; S~16384 too, listed later
    CHECK(n->distance == doctest::Approx(2.0));
    CHECK(n->entry.best->knobs == "COOP=t128/v8");
    CHECK_FALSE(nearest_class(db, key("D=96,S~4096")));
    CHECK_FALSE(nearest_class(db, key("D=64,S~4096;W=3")));  // other scalar values
    db.record(key("D=64,S~4096;W=3"), p);
    CHECK(nearest_class(db, key("D=64,S~2048;W=3"))->entry.key.shape_class == "D=64,S~4096;W=3");
  }
  fs::remove_all(dir);
}
