// emmyc run: one op on seeded random inputs on the GPU or the SIMT interpreter, checked against
// a reference; --bench times it against the naive cut+scalar schedule.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "driver/lowering.hpp"
#include "interp/scalar_values.hpp"
#include "interp/tensor_data.hpp"

namespace emmy {

struct RunOptions {
  std::string shape;             // "B=1,H=2,S=64,D=16"
  std::vector<std::string> set;  // each --set: "W=3,eps=0.5", values of scalar parameters
  uint64_t seed = 1;
  bool interp = false;  // the CPU SIMT interpreter even when there is a GPU
  bool shuffle_blocks = false;
  bool bench = false;          // time it (GPU only) and print the backend and kernel tables
  std::string check = "auto";  // auto, f64, gpu, none: which reference the outputs are compared with
  bool json = false;           // one JSON object instead of the tables
  std::string save_dir;        // write inputs and outputs as .npy files here
  bool use_cache = true;       // the on-disk kernel cache
  bool specialize = true;      // the kernels specialized to the run's size class (lower::specialize_sizes)
  bool emmy_ptx = false;       // the kernels through Emmy's PTX printer and nvJitLink, not NVRTC (issue 28)
};

// The naive schedule: every seam cut, one thread per point. It is --bench's baseline and, at
// shapes too large for the CPU evaluator, the float32 reference (checked against the float64
// evaluator at small shapes by the GPU tests).
inline constexpr const char* kNaiveKnobs = "PLACE=cut,TILE=a:scalar";

// Beyond this work estimate the float64 evaluator takes too long on the CPU.
inline constexpr double kMaxReferenceWork = 3e8;

// The float64 evaluator's steps: each statement's points times the nodes of its value (a
// reduction's times its points), each called op once, and the largest tensor's points (the
// inputs drawn, the outputs compared); what picks a reference and a backend.
double work_estimate(const CheckedProgram& program, const CheckedOp& op, const SizeBindings& sizes);

// --shape bound to the op's sizes (sizes left out derived, with a note on `err`); nullopt after
// printing why it does not bind.
std::optional<SizeBindings> bind_shape(const CheckedOp& op, const std::string& shape, std::ostream& err);

// --set bound to the op's scalar parameters; nullopt after printing why not.
std::optional<ScalarValues> bind_set(const CheckedOp& op, const std::vector<std::string>& set, std::ostream& err);

// The values as a JSON object, integers as integers ({"w": 3, "eps": 0.5}).
nlohmann::json scalars_json(const ScalarValues& values);

// 0 ok, 1 a failed check or an error, 2 a usage error.
int run_op(const CheckedProgram& program, const LowerOptions& lo, const RunOptions& ro, std::ostream& out,
           std::ostream& err);

}  // namespace emmy
