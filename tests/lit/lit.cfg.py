# lit configuration for Emmy: RUN lines use %emmyc and FileCheck.
import os
import sys
import lit.formats

config.name = "emmy"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".emmy", ".repl"]
config.test_source_root = os.path.dirname(__file__)
config.excludes = ["Inputs"]

emmyc = lit_config.params.get("emmyc")
filecheck = lit_config.params.get("filecheck", "FileCheck")
source_root = lit_config.params.get("source_root", os.path.join(os.path.dirname(__file__), "..", ".."))
if not emmyc:
    lit_config.fatal("run lit with --param emmyc=PATH (ctest does this)")

config.substitutions.append(("%emmyc", emmyc))
config.substitutions.append(("%stdlib", os.path.join(source_root, "stdlib")))
config.substitutions.append(("%examples", os.path.join(source_root, "examples")))
config.substitutions.append(("%docs", os.path.join(source_root, "docs")))
config.substitutions.append(("FileCheck", filecheck))
config.environment["EMMY_STDLIB"] = os.path.join(source_root, "stdlib")
config.environment.pop("EMMY_KNOBS", None)

# 'tmux' where tmux is installed: the REPL's terminal test drives it through tmux.
import shutil
if shutil.which("tmux"):
    config.available_features.add("tmux")
config.substitutions.append(("%python", sys.executable))

# 'nvrtc' when libnvrtc loads from where emmyc looks for it ($CUDA_HOME/lib64, /usr/local/cuda/lib64,
# the loader's path): --ir ptx works without a GPU.
for nvrtc_dir in [os.path.join(os.environ.get("CUDA_HOME", ""), "lib64"), "/usr/local/cuda/lib64", ""]:
    try:
        import ctypes
        ctypes.CDLL(os.path.join(nvrtc_dir, "libnvrtc.so") if nvrtc_dir else "libnvrtc.so")
        config.available_features.add("nvrtc")
        break
    except OSError:
        pass

# 'cuda-driver' when libcuda loads: the no-GPU fallbacks of emmyc run are tested only without it.
try:
    import ctypes
    ctypes.CDLL("libcuda.so.1")
    config.available_features.add("cuda-driver")
except OSError:
    pass
