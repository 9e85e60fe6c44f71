// Warp specialization: the producers run the slice of the kernel its copies need, the consumers
// the kernel without them.
#include "lower/kernel/specialize_warps.hpp"

#include <iterator>
#include <set>
#include <vector>

#include <fmt/format.h>

#include "ir/intrinsics.hpp"
#include "ir/print_kernel.hpp"

namespace emmy::lower {
namespace {

using kir::Expr;
using kir::Stmt;

// `if threadIdx.x == issuer { ... }`: a statement only the producers' first thread runs.
bool producer_only(const Stmt& s, int issuer) {
  if (s.kind != Stmt::Kind::If || !s.orelse.empty()) return false;
  const Expr& c = s.args[0];
  return c.kind == Expr::Kind::Binary && c.bin == kir::BinOp::Eq && c.args[0].kind == Expr::Kind::Special &&
         c.args[0].special == kir::Special::ThreadIdx && c.args[1].kind == Expr::Kind::Const &&
         c.args[1].ival == issuer;
}

// Two statement lists that print the same, line by line and block by block.
bool same(const std::vector<Stmt>& a, const std::vector<Stmt>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (print_stmt_line(a[i]) != print_stmt_line(b[i]) || !same(a[i].body, b[i].body) ||
        !same(a[i].orelse, b[i].orelse))
      return false;
  return true;
}

void registers_read(const std::vector<Stmt>& body, std::set<std::string>& regs) {
  kir::visit_exprs(body, [&](const Expr& e) {
    if (e.kind == Expr::Kind::Var) regs.insert(e.reg.name);
  });
}

// A statement list with only the statements that hold a producer's statement or define a
// register in `need`, and the loops and branches around them.
std::vector<Stmt> slice(const std::vector<Stmt>& body, const std::set<std::string>& need, int issuer) {
  std::vector<Stmt> out;
  for (const Stmt& s : body) {
    switch (s.kind) {
      case Stmt::Kind::If: {
        if (producer_only(s, issuer)) {
          out.push_back(s);
          break;
        }
        Stmt kept = kir::without_children(s);
        kept.body = slice(s.body, need, issuer);
        kept.orelse = slice(s.orelse, need, issuer);
        // Both sides the same copies (a masked and an unmasked block issue alike): the
        // condition, which may differ by thread, does not matter (a block of its own).
        if (!kept.body.empty() && same(kept.body, kept.orelse)) {
          kept.args[0] = kir::ci(1, kir::ScalarType::Pred);
          kept.orelse.clear();
        }
        if (!kept.body.empty() || !kept.orelse.empty()) out.push_back(std::move(kept));
        break;
      }
      case Stmt::Kind::For: {
        Stmt kept = kir::without_children(s);
        kept.body = slice(s.body, need, issuer);
        if (!kept.body.empty()) out.push_back(std::move(kept));
        break;
      }
      case Stmt::Kind::Decl:
      case Stmt::Kind::Assign:
        if (need.contains(s.reg.name)) out.push_back(s);
        break;
      default: break;  // stores, barriers, intrinsics, vector accesses, comments: the consumers'
    }
  }
  // A loop or branch left with declarations alone does nothing the copies see.
  std::erase_if(out, [](const Stmt& s) {
    auto decls_only = [](const std::vector<Stmt>& b) {
      return std::all_of(b.begin(), b.end(), [](const Stmt& x) { return x.kind == Stmt::Kind::Decl; });
    };
    return (s.kind == Stmt::Kind::For || s.kind == Stmt::Kind::If) && decls_only(s.body) && decls_only(s.orelse);
  });
  return out;
}

bool per_thread(const Expr& e, const std::set<std::string>& varying) {
  bool found = false;
  kir::visit(e, [&](const Expr& x) {
    found =
        found ||
        (x.kind == Expr::Kind::Special && (x.special == kir::Special::ThreadIdx || x.special == kir::Special::LaneId ||
                                           x.special == kir::Special::WarpId)) ||
        (x.kind == Expr::Kind::Var && varying.contains(x.reg.name));
  });
  return found;
}

// Why the producers' slice cannot run apart from the consumers, or "".
std::string impure(const std::vector<Stmt>& setup, const std::vector<Stmt>& producer, int issuer) {
  std::set<std::string> defined, read, varying;  // varying: the setup's registers that differ by thread
  for (const Stmt& s : setup)
    if (s.kind == Stmt::Kind::Decl && !s.args.empty() && per_thread(s.args[0], varying)) varying.insert(s.reg.name);
  std::string why;
  auto define = [&](const std::vector<Stmt>& body) {
    kir::visit(body, [&](const Stmt& s) {
      if (s.kind == Stmt::Kind::Decl || s.kind == Stmt::Kind::For) defined.insert(s.reg.name);
    });
  };
  define(setup);
  define(producer);
  kir::visit(producer, [&](const Stmt& s) {
    if (!why.empty() || producer_only(s, issuer)) return;
    if (s.kind != Stmt::Kind::Decl && s.kind != Stmt::Kind::Assign && s.kind != Stmt::Kind::For &&
        s.kind != Stmt::Kind::If)
      return;
    for (const Expr& a : s.args)
      kir::visit(a, [&](const Expr& e) {
        if (!why.empty()) return;
        if (e.kind == Expr::Kind::Load)
          why = fmt::format("the copies' control reads {} memory ({})",
                            e.space == kir::Space::Shared ? "shared" : "global", e.name);
        if (e.kind == Expr::Kind::Special && (e.special == kir::Special::ThreadIdx ||
                                              e.special == kir::Special::LaneId || e.special == kir::Special::WarpId))
          why = fmt::format("the copies' control depends on the thread ({})", kir::special_name(e.special));
      });
  });
  registers_read(producer, read);
  for (const std::string& r : read)
    if (why.empty() && !defined.contains(r))
      why = fmt::format("the copies read register {}, which the consumers compute", r);
    else if (why.empty() && varying.contains(r))
      why = fmt::format("the copies read register {}, which differs from thread to thread", r);
  return why;
}

}  // namespace

std::optional<std::string> specialize_warps(kir::Kernel& kernel, size_t setup, const WarpRoles& roles) {
  const int issuer = roles.consumers;
  // (Moved out, not copied: the kernel's body is rebuilt below, or left as it was on a refusal.)
  std::vector<Stmt> rest(std::make_move_iterator(kernel.body.begin() + static_cast<std::ptrdiff_t>(setup)),
                         std::make_move_iterator(kernel.body.end()));
  kernel.body.resize(setup);
  auto refuse = [&](std::string why) {
    std::move(rest.begin(), rest.end(), std::back_inserter(kernel.body));
    return std::optional<std::string>(std::move(why));
  };
  // The producers' statements and, to a fixed point, what they read.
  std::set<std::string> need;
  std::vector<Stmt> producer;
  for (;;) {
    producer = slice(rest, need, issuer);
    std::set<std::string> read = need;
    registers_read(producer, read);
    if (read == need) break;
    need = std::move(read);
  }
  if (producer.empty()) return refuse("no statement issues the ring's copies from the producers' thread");
  if (std::string why = impure(kernel.body, producer, issuer); !why.empty()) return refuse(why);
  std::vector<Stmt> consumer = kir::map_stmts(std::move(rest), [&](Stmt s) -> std::vector<Stmt> {
    if (producer_only(s, issuer)) return {};
    if (s.kind == Stmt::Kind::Barrier)
      return {kir::intrinsic(kir::IntrinsicId::BarSync, {}, {kir::ci(roles.consumer_barrier)}, {roles.consumers})};
    std::vector<Stmt> kept;  // not `return {std::move(s)}`: an initializer list copies the tree
    kept.push_back(std::move(s));
    return kept;
  });
  if (roles.consumer_registers > 0) {
    consumer.insert(consumer.begin(),
                    kir::intrinsic(kir::IntrinsicId::SetmaxnregInc, {}, {}, {roles.consumer_registers}));
    producer.insert(producer.begin(),
                    kir::intrinsic(kir::IntrinsicId::SetmaxnregDec, {}, {}, {roles.producer_registers}));
  }
  consumer.insert(consumer.begin(), kir::comment(fmt::format("consumers: threads 0 .. {}", roles.consumers - 1)));
  producer.insert(producer.begin(),
                  kir::comment(fmt::format("producers: threads {} .. {}, thread {} issuing the ring's copies",
                                           roles.consumers, roles.consumers + roles.producers - 1, issuer)));
  Expr is_consumer = kir::binary(kir::BinOp::Lt, kir::special(kir::Special::WarpId), kir::ci(roles.consumers / 32));
  kernel.body.push_back(kir::if_then(std::move(is_consumer), std::move(consumer), std::move(producer)));
  kernel.block_threads = roles.consumers + roles.producers;
  kernel.min_blocks_per_sm = 1;
  return std::nullopt;
}

}  // namespace emmy::lower
