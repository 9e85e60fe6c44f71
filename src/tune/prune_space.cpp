// Lowers every enumerated knob list (on all threads) and keeps those that compile as asked at
// the tuning sizes: legal, lowered without a refusal, within the target's shared memory and the
// kernels' size limits, and not a duplicate of an earlier candidate's CUDA.
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "autosched/cost_model.hpp"
#include "codegen/cuda/print_cuda.hpp"
#include "support/hash.hpp"
#include "support/large_stack.hpp"
#include "tune/space.hpp"

namespace emmy::tune {
namespace {

void replace_all(std::string& text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
}

// The CUDA less what only names it (the header comment with the knobs, the knob hash in kernel
// names), so that two knob lists lowering to the same kernels are one candidate.
uint64_t identity_hash(std::string cuda, const kir::Program& program) {
  if (cuda.rfind("// Emmy: op", 0) == 0) cuda.erase(0, cuda.find('\n'));
  for (size_t i = 0; i < program.kernels.size(); ++i) replace_all(cuda, program.kernels[i].name, fmt::format("k{}", i));
  return fnv1a(cuda);
}

// One point: its candidate, or why it is left out.
struct Outcome {
  std::optional<Candidate> candidate;
  std::string kind, reason;
};

Outcome lower_point(const CheckedProgram& program, const CheckedOp& op, const TargetInfo& target,
                    const SizeBindings& sizes, const Enumerated& point,
                    const std::vector<algebra::DiscoveredChain>* chains, const lower::LawMemo& laws) {
  KnobListResult parsed = parse_knob_list(point.knobs, &target);
  if (!parsed.errors.empty()) return {std::nullopt, "illegal", parsed.errors.front().message};
  lower::Lowered l;
  try {
    lower::PipelineOptions options;
    options.laws = &laws;  // every point asks the prover the same questions
    l = lower::lower_op(program, op, {nullptr, "", point.knobs}, target, chains, options);
  } catch (const lower::SharedMemoryError& e) {
    return {std::nullopt, "shared memory", e.what()};
  } catch (const std::exception& e) {
    return {std::nullopt, "not lowered", e.what()};
  }
  // A hand-written block is measured as written; an enumerated point the lowering could not
  // honour entirely duplicates another point (or is not what it asks for).
  const bool enumerated = point.origin == "enumerated";
  std::vector<Warning> warnings = l.knobs.warnings;
  warnings.insert(warnings.end(), l.kernels.warnings.begin(), l.kernels.warnings.end());
  if (enumerated && !warnings.empty())  // one line: the code and text, not where the knob was written
    return {std::nullopt, "not honoured", render_warning({warnings.front().code, warnings.front().text})};
  if (std::optional<std::string> broken = kir::check_limits(l.kernels, sizes)) return {std::nullopt, "sizes", *broken};
  // A register bound (a K chunk held in registers) of twice the size or more only adds zero
  // padding: the half as deep chunk is in the space too.
  for (const kir::SizeLimit& limit : l.kernels.limits) {
    auto it = sizes.find(limit.size);
    if (enumerated && it != sizes.end() && 2 * it->second <= limit.max)
      return {std::nullopt, "oversized",
              fmt::format("{} = {} fills at most half of the {} it allows", limit.size, it->second, limit.max)};
  }
  // A register tile of output columns wider than the columns (rounded up to 64) repeats one.
  for (const KnobSetting& k : parsed.settings) {
    const auto* tile = std::get_if<TileValue>(&k.value);
    if (!enumerated || k.knob != Knob::Tile || k.site.empty() || !tile || !tile->scalar_f) continue;
    for (const TensorInfo& t : op.tensors) {
      if (t.role != TensorInfo::Role::Output || t.index_vars.empty() || t.index_vars.back() != k.site) continue;
      auto size = sizes.find(t.shape.back().symbol);
      const int64_t extent = size != sizes.end() ? size->second : t.shape.back().literal;
      if (*tile->scalar_f > (extent + 63) / 64 * 64)
        return {std::nullopt, "oversized", fmt::format("{} covers {} of {} columns", print_knob(k), extent, k.site)};
    }
  }
  Candidate c;
  c.knobs = point.knobs;
  c.origin = point.origin;
  c.kernels = static_cast<int>(l.kernels.kernels.size());
  for (const kir::Kernel& k : l.kernels.kernels) {
    c.smem_bytes = std::max(c.smem_bytes, kir::shared_bytes(k));
    c.block_threads = std::max(c.block_threads, k.block_threads);
  }
  c.predicted_us = autosched::estimate_cost(l, sizes, target).us;
  // What a run at these sizes launches: the kernels specialized to their size class.
  const kir::Program runs = lower::specialize_sizes(l.kernels, sizes);
  c.cuda = print_cuda(runs);
  c.cuda_hash = identity_hash(c.cuda, runs);
  return {std::move(c), "", ""};
}

}  // namespace

Space prune_space(const CheckedProgram& program, const CheckedOp& op, const TargetInfo& target,
                  const SizeBindings& sizes, const std::vector<Enumerated>& points,
                  const std::vector<algebra::DiscoveredChain>* chains, int threads) {
  std::vector<Outcome> outcomes(points.size());
  const lower::LawMemo laws;
  // Lowering recurses on expression trees (a fused chain may be far deeper than one statement).
  for_each_on_large_stacks(points.size(), threads, [&](size_t i) {
    outcomes[i] = lower_point(program, op, target, sizes, points[i], chains, laws);
  });

  Space space;
  space.enumerated = static_cast<int>(points.size());
  std::map<uint64_t, std::string> first;  // identity hash -> the candidate that has it
  for (size_t i = 0; i < points.size(); ++i) {
    Outcome& o = outcomes[i];
    if (!o.candidate) {
      space.pruned.push_back({points[i].knobs, o.kind, o.reason});
      continue;
    }
    auto [it, fresh] = first.emplace(o.candidate->cuda_hash, o.candidate->knobs);
    if (!fresh) {
      space.pruned.push_back({points[i].knobs, "duplicate", "the same kernels as " + it->second});
      continue;
    }
    space.candidates.push_back(std::move(*o.candidate));
  }
  return space;
}

}  // namespace emmy::tune
