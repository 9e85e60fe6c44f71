// The manifest of a kernel-cache entry: each file's size and hash and the ptxas report, so that
// an entry is used only as a whole.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "runtime/nvrtc.hpp"

namespace emmy::runtime {

// The contents of an entry's files: KEY.cu, KEY.ptx, KEY.cubin, KEY.log.
struct EntryFiles {
  std::string cu, ptx, cubin, log;
};

// KEY.manifest, written after every other file of the entry: a version line, one line a file
// ("file cubin 18432 9a3c...": extension, size in bytes, FNV-1a hash), one line a kernel of the
// report parsed from the log ("kernel k_softmax 32 0 0 4104 0 0 380": registers, spill stores,
// spill loads, smem, stack, barriers, cmem), and "end" (so a truncated manifest is not one).
std::string format_manifest(const EntryFiles& files, const std::vector<KernelResources>& resources);

// "" when `manifest` describes exactly these files, with `resources` parsed from their log, and
// the entry is usable (a PTX; a CUBIN when `cubin`, an ELF file with a ptxas report for every
// entry function of the PTX); else why the entry must be recompiled ("the .cubin differs from
// the manifest (0 bytes)").
std::string check_entry(std::string_view manifest, const EntryFiles& files,
                        const std::vector<KernelResources>& resources, bool cubin);

// The names of the PTX's entry functions (".entry NAME("), in order.
std::vector<std::string> ptx_entries(std::string_view ptx);

}  // namespace emmy::runtime
