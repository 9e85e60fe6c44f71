// Loads the main file and every module it imports (std.X from the stdlib directories,
// a.b from a/b.emmy beside the importing file), each file once.
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>

#include <fmt/format.h>

#include "sema/passes.hpp"
#include "support/paths.hpp"
#include "syntax/parse.hpp"

namespace emmy::sema {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> candidates(const ast::ImportDecl& imp, const std::string& importer, const SemaOptions& opt) {
  std::vector<std::string> out;
  const std::vector<ast::Ident>& p = imp.path;
  if (p.size() >= 2 && p[0].name == "std") {
    std::string rel;
    for (size_t i = 1; i < p.size(); ++i) rel += (i > 1 ? "/" : "") + p[i].name;
    for (const std::string& dir : opt.stdlib_dirs) out.push_back((fs::path(dir) / (rel + ".emmy")).string());
    return out;
  }
  fs::path rel;
  for (const ast::Ident& part : p) rel /= part.name;
  out.push_back((fs::path(importer).parent_path() / rel).string() + ".emmy");
  return out;
}

// A file given by path is still `std.X` when it is the stdlib's X.emmy.
std::string module_name(const std::string& path, const SemaOptions& opt) {
  std::error_code ec;
  for (const std::string& dir : opt.stdlib_dirs) {
    fs::path p(path);
    if (fs::equivalent(p.parent_path().empty() ? "." : p.parent_path(), dir, ec) && p.extension() == ".emmy")
      return "std." + p.stem().string();
  }
  return path;
}

// The modules `import std.X` can load: every X.emmy in the stdlib directories.
std::vector<std::string> std_modules(const SemaOptions& opt) {
  std::set<std::string> names;
  for (const std::string& dir : opt.stdlib_dirs) {
    std::error_code ec;
    for (const fs::directory_entry& e : fs::directory_iterator(dir, ec))
      if (e.path().extension() == ".emmy") names.insert("std." + e.path().stem().string());
  }
  return {names.begin(), names.end()};
}

void report_missing(const ast::ImportDecl& imp, const std::vector<std::string>& paths, const SemaOptions& opt,
                    Diagnostics& diags) {
  std::string name = imp.dotted();
  SourceRange at{imp.range.file, imp.path.front().range.begin, imp.path.back().range.end};
  std::string hint;
  if (imp.path.size() >= 2 && imp.path[0].name == "std") {
    std::vector<std::string> mods = std_modules(opt);
    std::string guess = closest_name(name, mods);
    if (mods.empty())
      hint = "no standard library was found; set EMMY_STDLIB to the stdlib directory";
    else
      hint = fmt::format("{}the standard modules are {}",
                         guess.empty() ? "" : fmt::format("did you mean '{}'? ", guess), fmt::join(mods, ", "));
  } else {
    hint = fmt::format("looked for {}: a module other than std.X is a file beside the importing one", paths.at(0));
  }
  diags.error("E010", at, fmt::format("cannot find module '{}'", name)).hint(hint);
}

std::string lower_first(std::string s) {
  if (!s.empty()) s[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(s[0])));
  return s;
}

// Where one import was found: a loaded source (id), or why not (both empty: no candidate exists).
struct Found {
  uint32_t id = 0;
  std::optional<FileId> file;
  std::string path, why;                // the candidate that exists but cannot be read, and why
  const ast::Module* parsed = nullptr;  // SemaOptions::parsed had it
};

Found find_module(SourceManager& sources, const std::vector<std::string>& paths, const std::set<FileId>& loaded,
                  const std::map<FileId, ParsedFile>* parsed) {
  Found f;
  for (const std::string& path : paths) {
    int error = 0;
    std::optional<FileId> id = file_id(path, &error);
    if (!id && (error == ENOENT || error == ENOTDIR)) continue;
    if (!id || id->directory) {
      if (f.why.empty()) f = {0, std::nullopt, path, id ? "it is a directory" : lower_first(std::strerror(error))};
      continue;
    }
    if (loaded.count(*id)) return {0, id, path, ""};  // loaded already, under any path
    if (parsed)
      if (auto it = parsed->find(*id);
          it != parsed->end() && it->second.file.size == id->size && it->second.file.mtime_ns == id->mtime_ns)
        return {it->second.source, id, path, "", it->second.module};
    if (uint32_t source = sources.load(path)) return {source, id, path, ""};
    if (f.why.empty()) f = {0, std::nullopt, path, "it cannot be read"};
  }
  return f;
}

}  // namespace

void load_modules(SourceManager& sources, uint32_t main_file, const SemaOptions& options, CheckedProgram& program,
                  Diagnostics& diags) {
  // Modules are files: each is loaded once, however it is reached (a diamond, a cycle back to
  // the main file, a self-import, a symlink or a second path to it).
  std::set<FileId> loaded;
  auto remember = [&](uint32_t id) {
    if (std::optional<FileId> f = file_id(sources.file(id).path())) loaded.insert(*f);
  };
  program.modules.push_back(
      {module_name(sources.file(main_file).path(), options), parse_module(sources, main_file, diags), {}});
  remember(main_file);
  for (uint32_t id : options.beside) {
    program.modules.push_back({sources.file(id).path(), parse_module(sources, id, diags), {}});
    remember(id);
  }
  program.own_modules = program.modules.size();
  for (size_t m = 0; m < program.modules.size(); ++m) {
    // Copy what we need: push_back on the deque keeps references, but be explicit.
    const ast::Module& mod = program.modules[m].ast;
    std::string importer = sources.file(mod.file).path();
    for (const ast::Item& item : mod.items) {
      const auto* imp = std::get_if<ast::ImportDecl>(&item);
      if (!imp) continue;
      std::vector<std::string> paths = candidates(*imp, importer, options);
      Found found = find_module(sources, paths, loaded, options.parsed);
      if (found.file && !found.id) continue;  // the same file again
      if (!found.id) {
        if (found.why.empty())
          report_missing(*imp, paths, options, diags);
        else
          diags
              .error("E010", {imp->range.file, imp->path.front().range.begin, imp->path.back().range.end},
                     fmt::format("cannot read module '{}' ({}): {}", imp->dotted(), found.path, found.why))
              .hint("an import names a readable .emmy file; fix or remove the file, or the import");
        continue;
      }
      loaded.insert(*found.file);
      program.modules.push_back(
          {imp->dotted(), found.parsed ? *found.parsed : parse_module(sources, found.id, diags), {}});
    }
  }
}

}  // namespace emmy::sema
