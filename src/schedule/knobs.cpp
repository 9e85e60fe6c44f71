// The schedule-knob codec: knob, field, atom and legality tables, and the code that reads them.
#include "schedule/knobs.hpp"
#include "schedule/knob_tables.hpp"
#include "support/suggest.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <span>
#include <utility>

namespace emmy {
namespace {

using namespace knob_tables;

// ---------------------------------------------------------------------------------------
// Text helpers

// A sub-range of a larger text: its characters and where they start in that text.
struct Piece {
  std::string_view text;
  size_t offset = 0;
};

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }

Piece sub(Piece p, size_t from, size_t count = std::string_view::npos) {
  return {p.text.substr(from, count), p.offset + from};
}

Piece trim(Piece p) {
  size_t b = 0;
  size_t e = p.text.size();
  while (b < e && is_blank(p.text[b])) ++b;
  while (e > b && is_blank(p.text[e - 1])) --e;
  return sub(p, b, e - b);
}

std::vector<Piece> split(Piece p, char sep) {
  std::vector<Piece> out;
  size_t start = 0;
  for (size_t i = 0; i <= p.text.size(); ++i) {
    if (i == p.text.size() || p.text[i] == sep) {
      out.push_back(sub(p, start, i - start));
      start = i + 1;
    }
  }
  return out;
}

size_t leading_digits(std::string_view s) {
  size_t n = 0;
  while (n < s.size() && is_digit(s[n])) ++n;
  return n;
}

bool is_identifier(std::string_view s) {
  if (s.empty() || !is_ident_start(s[0])) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return is_ident_start(c) || is_digit(c); });
}

// The candidate nearest to `word`, if it is near enough to be a likely typo.
std::optional<std::string> closest(std::string_view word, const std::vector<std::string_view>& candidates) {
  std::string guess = closest_name(word, candidates);
  if (guess.empty()) return std::nullopt;
  return guess;
}

std::string join(const std::vector<std::string_view>& items, std::string_view sep) {
  return fmt::format("{}", fmt::join(items, sep));
}

KnobError make_error(std::string_view code, Piece at, std::string message, std::string help) {
  return {std::string(code), at.offset, at.text.size(), std::move(message), std::move(help)};
}

// ---------------------------------------------------------------------------------------
// Table lookups (the tables: knob_tables.hpp)

std::string range_text(const NumRange& r) {
  if (r.pow2) return fmt::format("a power of two in {}..{}", r.lo, r.hi);
  return r.step > 1 ? fmt::format("{}..{}, a multiple of {}", r.lo, r.hi, r.step) : fmt::format("{}..{}", r.lo, r.hi);
}

const KnobSpec& knob_spec(Knob knob) {
  return *std::find_if(std::begin(kKnobs), std::end(kKnobs), [&](const KnobSpec& k) { return k.knob == knob; });
}

const TierRule& tier_rule(unsigned tier_bit) {
  return *std::find_if(std::begin(kTierRules), std::end(kTierRules),
                       [&](const TierRule& r) { return r.tier_bit == tier_bit; });
}

// ---------------------------------------------------------------------------------------
// Reading numbers and atoms

// E054 for a leading zero, a number too large or out of its range.
std::variant<int, KnobError> read_number(Piece digits, const NumRange& r, std::string_view knob,
                                         std::string_view grammar) {
  if (digits.text.size() > 1 && digits.text[0] == '0') {
    size_t nz = digits.text.find_first_not_of('0');
    std::string help = nz == std::string_view::npos ? fmt::format("{} takes {}", grammar, range_text(r))
                                                    : fmt::format("drop the leading zero: {}", digits.text.substr(nz));
    return make_error("E054", digits, fmt::format("{} {} '{}' has a leading zero", knob, r.what, digits.text), help);
  }
  long long n = 0;
  for (char c : digits.text) n = std::min(n * 10 + (c - '0'), 1LL << 40);
  if (n < r.lo || n > r.hi || n % r.step != 0 || (r.pow2 && (n & (n - 1)) != 0))
    return make_error(
        "E054", digits,
        fmt::format("{} {} {} is out of range: {} takes {}", knob, r.what, digits.text, grammar, range_text(r)),
        r.pow2 ? fmt::format("use a {} that is {}", r.what, range_text(r))
               : fmt::format("use a {} in {}", r.what, range_text(r)));
  return static_cast<int>(n);
}

struct AtomMatch {
  const AtomSpec* spec = nullptr;
  Piece param;  // the digits standing for <N>, if the pattern has one
};

std::optional<AtomMatch> match_atom(Piece name) {
  for (const AtomSpec& a : kAtoms) {
    size_t at = a.pattern.find(kParam);
    if (at == std::string_view::npos) {
      if (name.text == a.pattern) return AtomMatch{&a, {}};
      continue;
    }
    std::string_view prefix = a.pattern.substr(0, at);
    std::string_view suffix = a.pattern.substr(at + kParam.size());
    if (name.text.size() <= prefix.size() + suffix.size() || !name.text.starts_with(prefix) ||
        !name.text.ends_with(suffix))
      continue;
    Piece param = sub(name, prefix.size(), name.text.size() - prefix.size() - suffix.size());
    if (leading_digits(param.text) == param.text.size()) return AtomMatch{&a, param};
  }
  return std::nullopt;
}

const AtomSpec* atom_spec(std::string_view name) {
  auto m = match_atom({name, 0});
  return m ? m->spec : nullptr;
}

// ---------------------------------------------------------------------------------------
// Field classification and reading

struct Token {
  Piece piece;
  const FieldSpec* spec = nullptr;
  int head = 0;
};

bool head_matches(const FieldSpec& f, std::string_view head, std::string_view tok) {
  switch (f.shape) {
    case Shape::Word: return tok == head;
    case Shape::Atom: return tok.starts_with(head);
    case Shape::Number:
    case Shape::Pair: return tok.size() > head.size() && tok.starts_with(head) && is_digit(tok[head.size()]);
  }
  return false;
}

// Two specs may share a prefix (f<M>x<N> and f<N>): the 'x' tells them apart.
bool fits_shape(const FieldSpec& f, std::string_view tok) {
  if (f.shape != Shape::Pair && f.shape != Shape::Number) return true;
  return (f.shape == Shape::Pair) == (tok.find('x') != std::string_view::npos);
}

std::optional<Token> classify(const KnobSpec& k, Piece p) {
  std::optional<Token> pick;
  for (const FieldSpec& f : k.fields)
    for (size_t h = 0; h < f.heads.size(); ++h)
      if (head_matches(f, f.heads[h].text, p.text) &&
          (!pick || (fits_shape(f, p.text) && !fits_shape(*pick->spec, p.text))))
        pick = Token{p, &f, static_cast<int>(h)};
  return pick;
}

bool single_field(const KnobSpec& k) {
  return std::all_of(k.fields.begin(), k.fields.end(), [](const FieldSpec& f) { return f.slot == 0; });
}

// The fields in order, merged per slot: "d<depth>, cp|tma|reg, ring".
std::string field_order(const KnobSpec& k, bool annotate) {
  bool any_required = std::any_of(k.fields.begin(), k.fields.end(), [](const FieldSpec& f) { return f.required; });
  std::vector<std::string> slots;
  int last_slot = -1;
  for (const FieldSpec& f : k.fields) {
    std::string text(f.grammar);
    if (annotate && f.shape == Shape::Number) text += fmt::format(" ({})", range_text(f.r1));
    if (annotate && f.shape == Shape::Pair)
      text += f.max_product > 0
                  ? fmt::format(" ({} each, at most {} {})", range_text(f.r1), f.max_product, f.product_what)
                  : fmt::format(" ({} each)", range_text(f.r1));
    if (annotate && any_required && !f.required) text += " (optional)";
    if (f.slot == last_slot)
      slots.back() += " or " + text;
    else
      slots.push_back(std::move(text));
    last_slot = f.slot;
  }
  return fmt::format("{}", fmt::join(slots, ", "));
}

KnobError unknown_field(const KnobSpec& k, Piece tok) {
  std::vector<std::string_view> words;
  for (const FieldSpec& f : k.fields)
    if (f.shape == Shape::Word)
      for (const Choice& c : f.heads) words.push_back(c.text);
  auto guess = closest(tok.text, words);
  std::string help =
      guess ? fmt::format("did you mean '{}'?", *guess) : fmt::format("write e.g. {}={}", k.name, k.example);
  if (single_field(k))
    return make_error("E051", tok,
                      fmt::format("unknown {} value '{}': {} takes {}", k.name, tok.text, k.name, field_order(k, true)),
                      help);
  return make_error(
      "E051", tok,
      fmt::format("unknown {} field '{}': {} takes, in order, {}", k.name, tok.text, k.name, field_order(k, true)),
      help);
}

KnobError malformed_field(const KnobSpec& k, const FieldSpec& f, Piece tok) {
  std::string help;
  if (f.tails.empty()) {
    help = fmt::format("write it as {}, e.g. {}", f.grammar, f.example);
  } else {
    std::vector<std::string_view> tails;
    for (const Choice& c : f.tails) tails.push_back(c.text);
    help = fmt::format("end it with one of {}, e.g. {}", join(tails, ", "), f.example);
  }
  return make_error("E051", tok,
                    fmt::format("{} {} '{}' is malformed: expected {}", k.name, f.name, tok.text, f.grammar), help);
}

std::variant<FieldRead, KnobError> read_atom_field(const KnobSpec& k, const Token& t) {
  Piece name = sub(t.piece, t.spec->heads[0].text.size());
  std::vector<std::string_view> names;
  for (const AtomSpec& a : kAtoms) names.push_back(a.pattern);
  if (name.text.empty())
    return make_error("E051", t.piece, fmt::format("{} atom is missing after 'a:'", k.name),
                      fmt::format("name one: {}", join(names, ", ")));
  auto m = match_atom(name);
  if (!m) {
    auto guess = closest(name.text, names);
    return make_error("E051", name,
                      fmt::format("unknown {} atom '{}'; atoms are {}", k.name, name.text, join(names, ", ")),
                      guess ? fmt::format("did you mean '{}'?", *guess) : std::string("pick one of the atoms listed"));
  }
  if (m->spec->pattern.find(kParam) != std::string_view::npos) {
    auto n = read_number(m->param, m->spec->n_range, k.name, m->spec->pattern);
    if (auto* e = std::get_if<KnobError>(&n)) return *e;
  }
  return FieldRead{.atom = name.text};
}

std::variant<FieldRead, KnobError> read_number_field(const KnobSpec& k, const Token& t) {
  const FieldSpec& f = *t.spec;
  Piece rest = sub(t.piece, f.heads[t.head].text.size());
  Piece digits = sub(rest, 0, leading_digits(rest.text));
  Piece after = sub(rest, digits.text.size());
  int tail = 0;
  if (!f.tails.empty()) tail = index_of(f.tails, after.text);
  if (f.tails.empty() ? !after.text.empty() : tail < 0) return malformed_field(k, f, t.piece);
  auto n = read_number(digits, f.r1, k.name, f.grammar);
  if (auto* e = std::get_if<KnobError>(&n)) return *e;
  return FieldRead{.head = t.head, .tail = tail, .n1 = std::get<int>(n)};
}

std::variant<FieldRead, KnobError> read_pair_field(const KnobSpec& k, const Token& t) {
  const FieldSpec& f = *t.spec;
  Piece rest = sub(t.piece, f.heads[t.head].text.size());
  Piece d1 = sub(rest, 0, leading_digits(rest.text));
  Piece after1 = sub(rest, d1.text.size());
  if (!after1.text.starts_with('x')) return malformed_field(k, f, t.piece);
  Piece d2 = sub(after1, 1, leading_digits(after1.text.substr(1)));
  if (d2.text.empty() || 1 + d2.text.size() != after1.text.size()) return malformed_field(k, f, t.piece);
  auto n1 = read_number(d1, f.r1, k.name, f.grammar);
  if (auto* e = std::get_if<KnobError>(&n1)) return *e;
  auto n2 = read_number(d2, f.r2, k.name, f.grammar);
  if (auto* e = std::get_if<KnobError>(&n2)) return *e;
  FieldRead r{.head = t.head, .n1 = std::get<int>(n1), .n2 = std::get<int>(n2)};
  if (f.max_product > 0 && r.n1 * r.n2 > f.max_product)
    return make_error("E054", t.piece,
                      fmt::format("{} {} '{}' has {} {}; at most {}", k.name, f.name, t.piece.text, r.n1 * r.n2,
                                  f.product_what, f.max_product),
                      fmt::format("use at most {} {} (M x N), e.g. {}", f.max_product, f.product_what, f.example));
  return r;
}

std::variant<FieldRead, KnobError> read_field(const KnobSpec& k, const Token& t) {
  switch (t.spec->shape) {
    case Shape::Word: return FieldRead{.head = t.head};
    case Shape::Atom: return read_atom_field(k, t);
    case Shape::Number: return read_number_field(k, t);
    case Shape::Pair: return read_pair_field(k, t);
  }
  return FieldRead{};
}

std::string format_field(const FieldSpec& f, const FieldRead& r) {
  switch (f.shape) {
    case Shape::Word: return std::string(f.heads[r.head].text);
    case Shape::Atom: return fmt::format("{}{}", f.heads[0].text, r.atom);
    case Shape::Number:
      return fmt::format("{}{}{}", f.heads[r.head].text, r.n1,
                         f.tails.empty() ? std::string_view() : f.tails[r.tail].text);
    case Shape::Pair: return fmt::format("{}{}x{}", f.heads[r.head].text, r.n1, r.n2);
  }
  return {};
}

// An empty field: point at the '/' before it (after it, for a leading '/').
KnobError empty_field(const KnobSpec& k, Piece value, Piece tok) {
  size_t at = tok.offset > value.offset ? tok.offset - 1 : tok.offset;
  return KnobError{"E051", at, 1, fmt::format("empty {} field: '/' must stand between two fields", k.name),
                   "remove the extra '/'"};
}

// ---------------------------------------------------------------------------------------
// The phases of parse_knob_value; each returns the first error it finds.

std::variant<std::vector<Token>, KnobError> classify_all(const KnobSpec& k, Piece value) {
  std::vector<Token> tokens;
  for (Piece p : split(value, '/')) {
    if (p.text.empty()) return empty_field(k, value, p);
    auto t = classify(k, p);
    if (!t) return unknown_field(k, p);
    tokens.push_back(*t);
  }
  return tokens;
}

std::optional<KnobError> check_order(const KnobSpec& k, const std::vector<Token>& tokens) {
  std::array<const Token*, 8> seen{};
  int max_slot = -1;
  for (const Token& t : tokens) {
    const Token*& first = seen.at(static_cast<size_t>(t.spec->slot));
    if (first)
      return make_error("E053", t.piece,
                        fmt::format("{} field '{}' repeats '{}': each field appears at most once", k.name, t.piece.text,
                                    first->piece.text),
                        first->piece.text == t.piece.text
                            ? fmt::format("remove the second '{}'", t.piece.text)
                            : fmt::format("keep one of '{}' and '{}'", first->piece.text, t.piece.text));
    if (t.spec->slot < max_slot) {
      std::vector<Token> sorted = tokens;
      std::stable_sort(sorted.begin(), sorted.end(),
                       [](const Token& a, const Token& b) { return a.spec->slot < b.spec->slot; });
      std::vector<std::string_view> texts;
      for (const Token& s : sorted) texts.push_back(s.piece.text);
      return make_error("E052", t.piece,
                        fmt::format("{} field '{}' is out of order: {} fields go {}", k.name, t.piece.text, k.name,
                                    field_order(k, false)),
                        fmt::format("write {}={}", k.name, join(texts, "/")));
    }
    first = &t;
    max_slot = t.spec->slot;
  }
  return std::nullopt;
}

std::optional<KnobError> check_tiers(const KnobSpec& k, const std::vector<Token>& tokens, unsigned tier) {
  for (const Token& t : tokens) {
    if (t.spec->tiers & tier) continue;
    const TierRule& rule = tier_rule(tier);
    return make_error("E051", t.piece, fmt::format("{} field '{}' {}", k.name, t.piece.text, rule.rule),
                      std::string(rule.help));
  }
  return std::nullopt;
}

std::optional<KnobError> check_required(const KnobSpec& k, Piece value, const std::vector<Token>& tokens) {
  for (const FieldSpec& f : k.fields) {
    bool present = std::any_of(tokens.begin(), tokens.end(), [&](const Token& t) { return t.spec->slot == f.slot; });
    if (!f.required || present) continue;
    return make_error(
        "E051", value,
        fmt::format("{} value '{}' is missing its {}: {} takes {}", k.name, value.text, f.name, k.name, k.grammar),
        fmt::format("add a {} ({}), e.g. {}={}", f.name, f.grammar, k.name, k.example));
  }
  return std::nullopt;
}

// ---------------------------------------------------------------------------------------
// Printing and legality

// A present field of a setting, as printed, and where it starts in the printed value.
struct Located {
  const FieldSpec* spec;
  FieldRead read;
  std::string text;
  size_t offset;
};

std::vector<Located> printed_fields(const KnobSetting& s) {
  std::vector<Located> out;
  if (s.off) return out;
  size_t offset = 0;
  for (const FieldSpec& f : knob_spec(s.knob).fields) {
    auto r = f.load(s.value);
    if (!r) continue;
    std::string text = format_field(f, *r);
    size_t len = text.size();
    out.push_back({&f, *r, std::move(text), offset});
    offset += len + 1;
  }
  return out;
}

const Located* find_field(const std::vector<Located>& fields, std::string_view grammar) {
  auto it = std::find_if(fields.begin(), fields.end(), [&](const Located& l) { return l.spec->grammar == grammar; });
  return it == fields.end() ? nullptr : &*it;
}

KnobError legality_error(const Located* at, std::string message, std::string help) {
  return KnobError{"E055", at ? at->offset : 0, at ? at->text.size() : 0, std::move(message), std::move(help)};
}

struct LegalityInput {
  const KnobSetting& setting;
  const KnobSpec& knob;
  const std::vector<Located>& fields;
  const TargetInfo& target;
};

// Fields that need a feature whatever their value (WSPEC r<R> needs setmaxnreg).
void rule_field_features(const LegalityInput& in, std::vector<KnobError>& errors) {
  for (const Located& l : in.fields) {
    Feature need = l.spec->needs;
    if (target_has(in.target, need)) continue;
    errors.push_back(legality_error(&l,
                                    fmt::format("{} {} '{}' needs {}; target {} has no {}", in.knob.name, l.spec->name,
                                                l.text, feature_requirement(need), in.target.name, feature_name(need)),
                                    fmt::format("drop '{}', or compile for {}", l.text, feature_requirement(need))));
  }
}

// Word choices that need a feature (STAGE transport tma needs TMA).
void rule_word_features(const LegalityInput& in, std::vector<KnobError>& errors) {
  for (const Located& l : in.fields) {
    if (l.spec->shape != Shape::Word) continue;
    Feature need = l.spec->heads[l.read.head].needs;
    if (target_has(in.target, need)) continue;
    std::vector<std::string_view> supported;
    int alternative = -1;
    for (size_t i = 0; i < l.spec->heads.size(); ++i) {
      if (!target_has(in.target, l.spec->heads[i].needs)) continue;
      supported.push_back(l.spec->heads[i].text);
      if (alternative < 0) alternative = static_cast<int>(i);
    }
    std::string help = fmt::format("compile for {}", feature_requirement(need));
    if (alternative >= 0) {
      KnobSetting alt = in.setting;
      l.spec->store(alt.value, FieldRead{.head = alternative});
      help = fmt::format("write {} for {}, or {}", print_knob(alt), in.target.name, help);
    }
    errors.push_back(
        legality_error(&l,
                       fmt::format("{} {} '{}' needs {}; target {} supports: {}", in.knob.name, l.spec->name, l.text,
                                   feature_requirement(need), in.target.name, join(supported, ", ")),
                       help));
  }
}

// The atom must exist on the target (mma.sync sm_80+, wgmma sm_90a).
void rule_atom_target(const LegalityInput& in, std::vector<KnobError>& errors) {
  const Located* at = find_field(in.fields, "a:<atom>");
  const AtomSpec* atom = at ? atom_spec(at->read.atom) : nullptr;
  if (!atom || target_has(in.target, atom->needs)) return;
  std::vector<std::string_view> supported;
  const AtomSpec* alternative = nullptr;
  for (const AtomSpec& a : kAtoms) {
    if (!target_has(in.target, a.needs)) continue;
    supported.push_back(a.pattern);
    if (!alternative && a.dtype == atom->dtype) alternative = &a;
  }
  std::string help = fmt::format("compile for {}", feature_requirement(atom->needs));
  if (alternative) help = fmt::format("use a:{} for {}, or {}", alternative->pattern, in.target.name, help);
  errors.push_back(
      legality_error(at,
                     fmt::format("{} atom '{}' needs {}; target {} supports: {}", in.knob.name, at->read.atom,
                                 feature_requirement(atom->needs), in.target.name, join(supported, ", ")),
                     help));
}

// wgmma atoms run on whole warpgroups: the warp grid must hold a multiple of 4 warps.
void rule_atom_warpgroups(const LegalityInput& in, std::vector<KnobError>& errors) {
  const Located* at = find_field(in.fields, "a:<atom>");
  const Located* w = find_field(in.fields, "w<M>x<N>");
  const AtomSpec* atom = at ? atom_spec(at->read.atom) : nullptr;
  if (!atom || !w || (w->read.n1 * w->read.n2) % atom->warp_multiple == 0) return;
  errors.push_back(
      legality_error(w,
                     fmt::format("{} atom '{}' runs on whole warpgroups of {} warps; warp grid {} has {}", in.knob.name,
                                 at->read.atom, atom->warp_multiple, w->text, w->read.n1 * w->read.n2),
                     fmt::format("use a warp grid of {} warps or a multiple of it, e.g. w{}x1", atom->warp_multiple,
                                 atom->warp_multiple)));
}

// The warp grid must fit in one block.
void rule_threads(const LegalityInput& in, std::vector<KnobError>& errors) {
  const Located* w = find_field(in.fields, "w<M>x<N>");
  if (!w) return;
  int threads = w->read.n1 * w->read.n2 * 32;
  if (threads <= in.target.max_threads_per_block) return;
  errors.push_back(
      legality_error(w,
                     fmt::format("{} warp grid {} is {} threads; target {} allows at most {} threads per block",
                                 in.knob.name, w->text, threads, in.target.name, in.target.max_threads_per_block),
                     fmt::format("use at most {} warps, e.g. w4x1", in.target.max_threads_per_block / 32)));
}

// COOP's threads of a row run in one block: at most the target's threads per block.
void rule_coop_threads(const LegalityInput& in, std::vector<KnobError>& errors) {
  const Located* t = find_field(in.fields, "t<N>");
  if (!t || t->read.n1 <= in.target.max_threads_per_block) return;
  errors.push_back(
      legality_error(t,
                     fmt::format("{} thread count {} is more than target {} allows in one block ({} threads)",
                                 in.knob.name, t->text, in.target.name, in.target.max_threads_per_block),
                     fmt::format("use at most t{}", in.target.max_threads_per_block)));
}

// COOP's k<K> splits a row between a cluster's CTAs: each CTA holds that one row (a block of N
// threads), so N is at least the 128 threads a block has.
void rule_coop_cluster(const LegalityInput& in, std::vector<KnobError>& errors) {
  const Located* k = find_field(in.fields, "k<K>");
  const Located* t = find_field(in.fields, "t<N>");
  if (!k || !t || t->read.n1 >= kCoopClusterMinThreads) return;
  errors.push_back(legality_error(
      k,
      fmt::format("{} {} splits a row between {} CTAs, but {} puts {} rows in each CTA: a split row needs a CTA "
                  "of its own",
                  in.knob.name, k->text, k->read.n1, t->text, kCoopClusterMinThreads / t->read.n1),
      fmt::format("use t{} or more threads a row with {}, or drop {}", kCoopClusterMinThreads, k->text, k->text)));
}

using LegalityRule = void (*)(const LegalityInput&, std::vector<KnobError>&);

constexpr LegalityRule kLegalityRules[] = {
    rule_field_features, rule_word_features, rule_atom_target,  rule_atom_warpgroups,
    rule_threads,        rule_coop_threads,  rule_coop_cluster,
};

}  // namespace

// ---------------------------------------------------------------------------------------
// Public API

std::optional<Knob> find_knob(std::string_view name) {
  for (const KnobSpec& k : kKnobs)
    if (k.name == name) return k.knob;
  return std::nullopt;
}

std::string_view knob_name(Knob knob) { return knob_spec(knob).name; }

std::string_view knob_grammar(Knob knob) { return knob_spec(knob).grammar; }
std::string_view knob_example(Knob knob) { return knob_spec(knob).example; }

std::vector<std::string_view> knob_names() {
  std::vector<std::string_view> names;
  for (const KnobSpec& k : kKnobs) names.push_back(k.name);
  return names;
}

std::variant<Knob, KnobError> lookup_knob(std::string_view name) {
  if (auto k = find_knob(name)) return *k;
  auto guess = closest(name, knob_names());
  std::string help = guess ? fmt::format("did you mean {}?", *guess)
                           : std::string("use one of the knobs listed (docs/knobs.md describes each)");
  return make_error("E050", {name, 0}, fmt::format("unknown knob '{}'; knobs are {}", name, join(knob_names(), ", ")),
                    help);
}

std::vector<std::string_view> atom_names() {
  std::vector<std::string_view> names;
  for (const AtomSpec& a : kAtoms) names.push_back(a.pattern);
  return names;
}

void check_knob_list(SourceManager& sources, Diagnostics& diags, const std::string& origin, const std::string& text,
                     const TargetInfo* target) {
  if (text.empty()) return;
  const uint32_t id = sources.add(origin, text);
  for (const KnobError& e : parse_knob_list(text, target).errors) {
    const uint32_t b = static_cast<uint32_t>(std::min(e.offset, text.size()));
    const uint32_t end = static_cast<uint32_t>(std::min(text.size(), b + std::max<size_t>(e.length, 1)));
    diags.error(e.code, {id, b, end}, e.message).hint(e.help);
  }
}

std::vector<std::string_view> knob_value_words() {
  std::vector<std::string_view> words;
  for (const KnobSpec& k : kKnobs)
    for (const FieldSpec& f : k.fields)
      if (f.shape == Shape::Word)
        for (const Choice& c : f.heads)
          if (is_ident_start(c.text[0]) && std::find(words.begin(), words.end(), c.text) == words.end())
            words.push_back(c.text);
  return words;
}

std::optional<AtomInfo> find_atom(std::string_view name) {
  auto m = match_atom({name, 0});
  if (!m) return std::nullopt;
  AtomInfo info{m->spec->tier, m->spec->m, m->spec->n, m->spec->k, m->spec->dtype};
  if (m->spec->pattern.find(kParam) != std::string_view::npos) {
    auto n = read_number(m->param, m->spec->n_range, "", "");
    if (std::holds_alternative<KnobError>(n)) return std::nullopt;
    info.n = std::get<int>(n);
  }
  return info;
}

std::variant<KnobSetting, KnobError> parse_knob_value(Knob knob, std::string_view site, std::string_view value) {
  Piece v = trim({value, 0});
  KnobSetting setting{knob, std::string(site), false, std::monostate{}};
  if (v.text.empty()) {
    setting.off = true;
    return setting;
  }
  const KnobSpec& k = knob_spec(knob);
  auto classified = classify_all(k, v);
  if (auto* e = std::get_if<KnobError>(&classified)) return *e;
  const auto& tokens = std::get<std::vector<Token>>(classified);
  if (auto e = check_order(k, tokens)) return *e;

  setting.value = k.init();
  unsigned tier = kNoAtom;
  for (const Token& t : tokens) {
    auto read = read_field(k, t);
    if (auto* e = std::get_if<KnobError>(&read)) return *e;
    const FieldRead& r = std::get<FieldRead>(read);
    t.spec->store(setting.value, r);
    if (t.spec->shape == Shape::Atom) tier = atom_spec(r.atom)->tier_bit;
  }
  if (auto e = check_tiers(k, tokens, tier)) return *e;
  if (auto e = check_required(k, v, tokens)) return *e;
  // The atom is the op's tier: a site (a statement or an axis) takes a register tile alone.
  if (!site.empty() && tier == kTensorTier) {
    const Token& atom =
        *std::find_if(tokens.begin(), tokens.end(), [](const Token& t) { return t.spec->shape == Shape::Atom; });
    return make_error("E051", atom.piece,
                      fmt::format("{}@{} field '{}': a tensor-core atom applies to the whole op, not to one "
                                  "statement or axis; a site takes only a register tile (f<N>)",
                                  k.name, site, atom.piece.text),
                      fmt::format("write the atom without a site ({}={}) and a register tile at an axis "
                                  "apart ({}@<axis>=f<N>)",
                                  k.name, v.text, k.name));
  }
  return setting;
}

std::string print_knob_value(const KnobSetting& setting) {
  std::vector<std::string> texts;
  for (Located& l : printed_fields(setting)) texts.push_back(std::move(l.text));
  return fmt::format("{}", fmt::join(texts, "/"));
}

std::string print_knob(const KnobSetting& setting) {
  return fmt::format("{}{}{}={}", knob_name(setting.knob), setting.site.empty() ? "" : "@", setting.site,
                     print_knob_value(setting));
}

std::string print_knob_list(const std::vector<KnobSetting>& settings) {
  std::vector<std::string> texts;
  for (const KnobSetting& s : settings) texts.push_back(print_knob(s));
  return fmt::format("{}", fmt::join(texts, ","));
}

std::vector<KnobError> check_knob_legal(const KnobSetting& setting, const TargetInfo& target) {
  std::vector<KnobError> errors;
  if (setting.off) return errors;
  std::vector<Located> fields = printed_fields(setting);
  LegalityInput in{setting, knob_spec(setting.knob), fields, target};
  for (LegalityRule rule : kLegalityRules) rule(in, errors);
  return errors;
}

namespace {

KnobError shifted(KnobError e, size_t by) {
  e.offset += by;
  return e;
}

// The '=' and the name/site split of one entry; E050/E056 on a bad left-hand side.
struct EntryHead {
  Knob knob;
  Piece name, site, value;
};

std::variant<EntryHead, KnobError> parse_entry_head(Piece e) {
  size_t eq = e.text.find('=');
  if (eq == std::string_view::npos) {
    std::string help = find_knob(e.text) ? fmt::format("write {}=<value> ({}), or {}= to turn it off", e.text,
                                                       knob_grammar(*find_knob(e.text)), e.text)
                                         : std::string(
                                               "write KNOB=value, e.g. STAGE=d2/tma/ring; an empty value "
                                               "(STAGE=) turns a knob off");
    return make_error("E056", e, fmt::format("knob entry '{}' has no '='", e.text), help);
  }
  Piece lhs = trim(sub(e, 0, eq));
  size_t at = lhs.text.find('@');
  Piece name = trim(sub(lhs, 0, at));
  Piece site = at == std::string_view::npos ? Piece{{}, lhs.offset + lhs.text.size()} : sub(lhs, at + 1);
  if (name.text.empty())
    return make_error("E056", lhs.text.empty() ? sub(e, eq, 1) : lhs,
                      fmt::format("knob entry '{}' has no knob name", e.text),
                      fmt::format("write KNOB=value with KNOB one of {}", join(knob_names(), ", ")));
  if (at != std::string_view::npos && site.text.empty())
    return make_error("E056", sub(lhs, at, 1), fmt::format("knob entry '{}' has no site after '@'", e.text),
                      fmt::format("name a statement or axis, e.g. {}@m=..., or drop the '@'", name.text));
  if (at != std::string_view::npos && !is_identifier(site.text))
    return make_error("E056", site,
                      fmt::format("bad site '{}': a site is a statement or axis name (a letter or "
                                  "'_', then letters, digits or '_')",
                                  site.text),
                      fmt::format("write e.g. {}@m=...", name.text));
  auto knob = lookup_knob(name.text);
  if (auto* err = std::get_if<KnobError>(&knob)) return shifted(*err, name.offset);
  return EntryHead{std::get<Knob>(knob), name, site, sub(e, eq + 1)};
}

// An empty entry: point at the ',' before it (after it, for a leading ',').
KnobError empty_entry(Piece raw) {
  if (!raw.text.empty()) return make_error("E056", raw, "empty knob entry", "remove the extra ','");
  size_t at = raw.offset > 0 ? raw.offset - 1 : raw.offset;
  return KnobError{"E056", at, 1, "empty knob entry", "remove the extra ','"};
}

}  // namespace

KnobListResult parse_knob_list(std::string_view text, const TargetInfo* target) {
  KnobListResult out;
  if (trim({text, 0}).text.empty()) return out;
  std::vector<std::pair<Knob, std::string_view>> seen;
  for (Piece raw : split({text, 0}, ',')) {
    Piece e = trim(raw);
    if (e.text.empty()) {
      out.errors.push_back(empty_entry(raw));
      continue;
    }
    auto head = parse_entry_head(e);
    if (auto* err = std::get_if<KnobError>(&head)) {
      out.errors.push_back(*err);
      continue;
    }
    const EntryHead& h = std::get<EntryHead>(head);
    std::pair<Knob, std::string_view> key{h.knob, h.site.text};
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
      std::string who = fmt::format("{}{}{}", knob_name(h.knob), h.site.text.empty() ? "" : "@", h.site.text);
      out.errors.push_back(make_error("E056", e, fmt::format("{} is given twice", who),
                                      fmt::format("remove one of the two {} entries", who)));
      continue;
    }
    seen.push_back(key);
    auto parsed = parse_knob_value(h.knob, h.site.text, h.value.text);
    if (auto* err = std::get_if<KnobError>(&parsed)) {
      out.errors.push_back(shifted(*err, h.value.offset));
      continue;
    }
    KnobSetting& s = std::get<KnobSetting>(parsed);
    if (target)
      for (const KnobError& err : check_knob_legal(s, *target))
        out.errors.push_back(shifted(err, trim(h.value).offset));
    out.settings.push_back(std::move(s));
  }
  return out;
}

}  // namespace emmy
