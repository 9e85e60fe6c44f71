/* Emmy's C ABI: compile an .emmy source, then launch one of its ops on device pointers and a
 * CUDA stream (or run it on the CPU interpreter on host pointers). Every call that can fail
 * returns 0 on success and a nonzero emmy_status otherwise; emmy_last_error() then holds the
 * message (diagnostics with file:line:col and a caret for errors in the source). The Python
 * module (python/emmy) is a thin ctypes layer over exactly these functions. */
#ifndef EMMY_EMMY_H
#define EMMY_EMMY_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Element types; the values are part of the ABI. */
typedef enum emmy_dtype {
  EMMY_BOOL = 0,
  EMMY_I32 = 1,
  EMMY_I64 = 2,
  EMMY_F16 = 3,
  EMMY_BF16 = 4,
  EMMY_F32 = 5,
  EMMY_F64 = 6
} emmy_dtype;

typedef enum emmy_status {
  EMMY_OK = 0,
  EMMY_ERROR_SOURCE = 1,   /* the program does not parse or check; the message holds the diagnostics */
  EMMY_ERROR_ARGUMENT = 2, /* a bad argument: unknown op, wrong tensor count, shape or dtype */
  EMMY_ERROR_COMPILE = 3,  /* lowering or NVRTC failed */
  EMMY_ERROR_DEVICE = 4,   /* no CUDA driver or device, or a driver call failed */
  EMMY_ERROR_INTERNAL = 5, /* a compiler bug; please report it */
  EMMY_ERROR_RESOURCE = 6  /* out of memory, a file that cannot be read or written, another limit of the machine */
} emmy_status;

typedef struct emmy_program emmy_program; /* a checked source with its imports */
typedef struct emmy_op emmy_op;           /* one op, lowered; compiled for the GPU on first launch */

/* A tensor: row-major and contiguous; `data` is a device pointer for emmy_op_launch and a host
 * pointer for emmy_op_run_host (NULL only when it has no elements). `rank` must be the
 * parameter's rank: a tensor of another rank is refused before `shape` is read. */
typedef struct emmy_tensor {
  void* data;
  int32_t dtype; /* an emmy_dtype */
  int32_t rank;
  const int64_t* shape; /* rank entries */
} emmy_tensor;

/* Every field may be 0/NULL for its default. */
typedef struct emmy_options {
  const char* target;      /* "sm_80", "sm_90", "sm_90a", "sm_120"; NULL: the GPU's best (sm_90a on an
                              H100/H200), else sm_90 */
  const char* knobs;       /* a knob list (KNOBS.md), above the schedule block and EMMY_KNOBS */
  const char* schedule;    /* a named schedule block of the op */
  const char* stdlib_path; /* colon-separated directories of std.*; NULL: $EMMY_STDLIB, then the installed one */
  const char* cache_dir;   /* NULL: $EMMY_CACHE_DIR, else $XDG_CACHE_HOME/emmy, else ~/.cache/emmy */
  int32_t no_cache;        /* nonzero: neither read nor write the on-disk kernel cache */
  int32_t no_env_knobs;    /* nonzero: ignore EMMY_KNOBS */
  const char* dtype;       /* "f16", "bf16" or "f32": the 16-bit float tensors of op signatures read as this */
  int32_t no_specialize;   /* nonzero: the shape-generic kernels, not each size class's (EMMY_SPECIALIZE=0) */
} emmy_options;

const char* emmy_version(void);
/* The message of the last failed call on this thread ("" when none). */
const char* emmy_last_error(void);

int emmy_program_from_source(const char* source, const char* name, const emmy_options* options, emmy_program** out);
int emmy_program_from_file(const char* path, const emmy_options* options, emmy_program** out);
void emmy_program_free(emmy_program* program);
/* The ops the main source defines, in order. */
int32_t emmy_program_op_count(const emmy_program* program);
const char* emmy_program_op_name(const emmy_program* program, int32_t index);

int emmy_op_get(const emmy_program* program, const char* name, emmy_op** out);
void emmy_op_free(emmy_op* op);
int32_t emmy_op_num_inputs(const emmy_op* op);
int32_t emmy_op_num_outputs(const emmy_op* op);
/* One parameter (is_output = 0) or output (1): its name, dtype and rank. */
int emmy_op_tensor(const emmy_op* op, int32_t is_output, int32_t index, const char** name, int32_t* dtype,
                   int32_t* rank);
/* The shape of output `index` when the op runs on tensors of these shapes (only shape and rank
 * are read); `shape` receives rank entries. */
int emmy_op_output_shape(const emmy_op* op, const emmy_tensor* inputs, int32_t num_inputs, int32_t index,
                         int64_t* shape);
/* The knobs a run on tensors of these shapes takes (only shape and rank are read): the first
 * guarded schedule block whose guard holds and whose kernels serve the sizes, else the unguarded
 * one (docs/language.md, "Guarded blocks"). `*knobs` is owned by the op. */
int emmy_op_knobs_at(const emmy_op* op, const emmy_tensor* inputs, int32_t num_inputs, const char** knobs);
/* Compiles (or loads from the cache) and loads the kernels a launch on tensors of these shapes
 * takes (only shape and rank are read), so that the launch itself does not compile. */
int emmy_op_prepare(emmy_op* op, const emmy_tensor* inputs, int32_t num_inputs);
/* Launches the op's kernels on `stream` (a CUstream; NULL: the default stream) without waiting:
 * inputs and outputs are device pointers in the current CUDA context's device (the primary
 * context, shared with the CUDA runtime and PyTorch). Compiles (or loads from the cache) on the
 * first launch. */
int emmy_op_launch(emmy_op* op, const emmy_tensor* inputs, int32_t num_inputs, const emmy_tensor* outputs,
                   int32_t num_outputs, void* stream);
/* Runs the op on the CPU SIMT interpreter: inputs and outputs in host memory. */
int emmy_op_run_host(const emmy_op* op, const emmy_tensor* inputs, int32_t num_inputs, const emmy_tensor* outputs,
                     int32_t num_outputs);
/* Knobs that had no effect, fallbacks taken, a kernel cache that could not be written, a schedule
 * block a run's sizes passed over: one line each (owned by the op; a compile or run may add one). */
int32_t emmy_op_warning_count(const emmy_op* op);
const char* emmy_op_warning(const emmy_op* op, int32_t index);
/* The generated CUDA C++ and the knobs the op was lowered with (owned by the op). */
const char* emmy_op_cuda(const emmy_op* op);
const char* emmy_op_knobs(const emmy_op* op);

#ifdef __cplusplus
}
#endif

#endif /* EMMY_EMMY_H */
