// How lowering names the statements of an op call it inlines (lower/to_tensor.cpp), and how a
// schedule block's site reads such a name back (sema/check_schedule.cpp): <callee><k>_<name>,
// k counting the calling op's calls from 1 as lowering meets them (sdpa_causal1_o).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace emmy {

// "sdpa_causal1_": the prefix of the k-th call's statements, calling `callee`.
std::string inlined_prefix(std::string_view callee, int k);

// The statement an inlined name of `callee` names ("o" of "sdpa_causal1_o"), where `name` is
// one: the callee, a call number from 1 without a leading zero, '_', a statement.
std::optional<std::string_view> inlined_statement(std::string_view name, std::string_view callee);

}  // namespace emmy
