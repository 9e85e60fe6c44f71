// Kernel-cache manifests: formatted from an entry's files and report, and checked against them.
#include "runtime/cache_manifest.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "support/hash.hpp"

namespace emmy::runtime {
namespace {

constexpr std::string_view kVersionLine = "emmy kernel cache entry 1";

std::string file_line(std::string_view extension, std::string_view content) {
  return fmt::format("file {} {} {:016x}", extension, content.size(), fnv1a(content));
}

std::vector<std::string_view> lines_of(std::string_view text) {
  std::vector<std::string_view> lines;
  for (size_t b = 0; b < text.size();) {
    const size_t e = std::min(text.find('\n', b), text.size());
    lines.push_back(text.substr(b, e - b));
    b = e + 1;
  }
  return lines;
}

std::vector<std::string_view> words_of(std::string_view line) {
  std::vector<std::string_view> words;
  for (size_t b = line.find_first_not_of(' '); b != std::string_view::npos; b = line.find_first_not_of(' ', b)) {
    const size_t e = std::min(line.find(' ', b), line.size());
    words.push_back(line.substr(b, e - b));
    b = e;
  }
  return words;
}

// What a line of the manifest vouches for: "the .cubin", "the ptxas report in the .log".
std::string subject_of(std::string_view expected_line) {
  if (expected_line.starts_with("file ")) {
    const std::string_view rest = expected_line.substr(5);
    return fmt::format("the .{}", rest.substr(0, rest.find(' ')));
  }
  if (expected_line.starts_with("kernel ")) return "the ptxas report in the .log";
  if (expected_line == kVersionLine) return "the manifest's format";
  return "the manifest";
}

// "" when the files are what a successful compile leaves; else what is missing.
std::string usable(const EntryFiles& files, const std::vector<KernelResources>& resources, bool cubin) {
  if (files.ptx.empty()) return "the .ptx is empty";
  if (!cubin) return "";
  if (files.cubin.size() < 4 || files.cubin.compare(0, 4,
                                                    "\x7f"
                                                    "ELF") != 0)
    return fmt::format("the .cubin is not an ELF file ({} bytes)", files.cubin.size());
  for (const std::string& entry : ptx_entries(files.ptx))
    if (std::none_of(resources.begin(), resources.end(), [&](const KernelResources& k) { return k.kernel == entry; }))
      return fmt::format("the .log has no ptxas report for {}", entry);
  return "";
}

}  // namespace

std::string format_manifest(const EntryFiles& files, const std::vector<KernelResources>& resources) {
  std::string out = std::string(kVersionLine) + "\n";
  out += file_line("cu", files.cu) + "\n";
  out += file_line("ptx", files.ptx) + "\n";
  out += file_line("cubin", files.cubin) + "\n";
  out += file_line("log", files.log) + "\n";
  for (const KernelResources& k : resources)
    out += fmt::format("kernel {} {} {} {} {} {} {} {}\n", k.kernel, k.registers, k.spill_stores, k.spill_loads,
                       k.smem_bytes, k.stack_bytes, k.barriers, k.cmem_bytes);
  return out + "end\n";
}

std::string check_entry(std::string_view manifest, const EntryFiles& files,
                        const std::vector<KernelResources>& resources, bool cubin) {
  if (manifest.empty()) return "the entry has no manifest (an older or interrupted write)";
  const std::string expected = format_manifest(files, resources);
  if (manifest != expected) {
    const std::vector<std::string_view> want = lines_of(expected), have = lines_of(manifest);
    size_t i = 0;
    while (i < want.size() && i < have.size() && want[i] == have[i]) ++i;
    if (i == want.size()) return "the manifest has lines after its end";
    if (i == have.size()) return "the manifest is truncated";
    const std::vector<std::string_view> w = words_of(want[i]), h = words_of(have[i]);
    if (w[0] == "file" && h.size() == 4 && h[0] == "file" && h[1] == w[1])
      return h[2] != w[2]
                 ? fmt::format("the .{} does not match the manifest ({} bytes, the manifest says {})", w[1], w[2], h[2])
                 : fmt::format("the .{} does not match the manifest (its hash differs)", w[1]);
    return fmt::format("{} does not match the manifest ('{}', the manifest says '{}')", subject_of(want[i]), want[i],
                       have[i]);
  }
  return usable(files, resources, cubin);
}

std::vector<std::string> ptx_entries(std::string_view ptx) {
  std::vector<std::string> names;
  constexpr std::string_view kEntry = ".entry ";
  for (size_t at = ptx.find(kEntry); at != std::string_view::npos; at = ptx.find(kEntry, at + 1)) {
    const size_t begin = ptx.find_first_not_of(" \t", at + kEntry.size());
    if (begin == std::string_view::npos) break;
    const size_t end = ptx.find_first_of("( \t\r\n", begin);
    names.emplace_back(ptx.substr(begin, end == std::string_view::npos ? std::string_view::npos : end - begin));
  }
  return names;
}

}  // namespace emmy::runtime
