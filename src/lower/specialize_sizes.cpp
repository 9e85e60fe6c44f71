// Decides every `if` of a program's kernels whose test reads only sizes and constants at the
// sizes of a launch, keeping the branch taken: the kernels then serve every sizes of that class.
#include "lower/passes.hpp"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string_view>
#include <variant>

#include <fmt/format.h>

#include "ir/launch_expr.hpp"
#include "ir/print_kernel.hpp"

namespace emmy::lower {
namespace {

using Sizes = std::map<std::string, int64_t>;

// The test's value at `sizes` where it reads only constants and the kernel's size parameters
// bound there (integer arithmetic, comparisons, logic: kir::evaluate_launch_expr); else nullopt.
std::optional<bool> decided(const kir::Expr& test, const kir::Kernel& kernel, const Sizes& sizes) {
  bool only_sizes = true;
  kir::visit(test, [&](const kir::Expr& e) {
    switch (e.kind) {
      case kir::Expr::Kind::Const:
      case kir::Expr::Kind::Unary:
      case kir::Expr::Kind::Binary:
      case kir::Expr::Kind::Cast:
      case kir::Expr::Kind::Select: break;
      case kir::Expr::Kind::Param: {
        const kir::Param* p = kernel.find_param(e.name);
        only_sizes &= p && p->kind == kir::Param::Kind::Scalar && sizes.count(e.name) > 0;
        break;
      }
      default: only_sizes = false;
    }
  });
  if (!only_sizes) return std::nullopt;
  const std::variant<int64_t, std::string> value = kir::evaluate_launch_expr(test, sizes);
  if (const int64_t* v = std::get_if<int64_t>(&value)) return *v != 0;
  return std::nullopt;
}

// The branch taken, as `if (true) { ... }`: its declarations keep their own scope.
std::vector<kir::Stmt> decide(std::vector<kir::Stmt> body, const kir::Kernel& kernel, const Sizes& sizes) {
  return kir::map_stmts(std::move(body), [&](kir::Stmt s) -> std::vector<kir::Stmt> {
    if (s.kind != kir::Stmt::Kind::If) return {std::move(s)};
    const std::optional<bool> taken = decided(s.args[0], kernel, sizes);
    if (!taken) return {std::move(s)};
    std::vector<kir::Stmt> branch = *taken ? std::move(s.body) : std::move(s.orelse);
    if (branch.empty()) return {};
    return {kir::if_then(kir::ci(1, kir::ScalarType::Pred), std::move(branch))};
  });
}

}  // namespace

std::string size_class(const kir::Program& program, const Sizes& sizes) {
  std::vector<std::string> tests;  // each decided test once, in the order first met
  for (const kir::Kernel& k : program.kernels)
    kir::visit(k.body, [&](const kir::Stmt& s) {
      if (s.kind != kir::Stmt::Kind::If) return;
      if (const std::optional<bool> taken = decided(s.args[0], k, sizes)) {
        std::string test = (*taken ? "" : "not ") + print_expr(s.args[0]);
        if (std::find(tests.begin(), tests.end(), test) == tests.end()) tests.push_back(std::move(test));
      }
    });
  return fmt::format("{}", fmt::join(tests, "; "));
}

bool specialize_by_env() {
  const char* env = std::getenv("EMMY_SPECIALIZE");
  return !(env && std::string_view(env) == "0");
}

kir::Program specialize_sizes(const kir::Program& program, const Sizes& sizes) {
  kir::Program out = program;
  for (kir::Kernel& k : out.kernels) k.body = decide(std::move(k.body), k, sizes);
  return out;
}

}  // namespace emmy::lower
