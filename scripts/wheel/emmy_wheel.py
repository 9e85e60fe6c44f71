"""The PEP 517 build backend of `pip install .` (pyproject.toml): builds libemmy with CMake
(into $EMMY_BUILD_DIR, else build/ of the source tree, configured there if it is not yet) and
writes a wheel of the `emmy` package with libemmy.so (and the ANTLR runtime it links), the
stdlib and the module, so that `import emmy` works with no environment variables. Standard
library only: nothing to download for the build."""

import base64
import hashlib
import os
import re
import shutil
import subprocess
import sysconfig
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _version():
    with open(os.path.join(ROOT, "CMakeLists.txt"), encoding="utf-8") as f:
        m = re.search(r"project\(emmy VERSION ([0-9.]+)", f.read())
    if not m:
        raise RuntimeError("emmy wheel: no `project(emmy VERSION ...)` in CMakeLists.txt")
    return m.group(1)


def _build_dir():
    build = os.environ.get("EMMY_BUILD_DIR") or os.path.join(ROOT, "build")
    if not (os.path.exists(os.path.join(build, "build.ninja")) or os.path.exists(os.path.join(build, "Makefile"))):
        generator = ["-G", "Ninja"] if shutil.which("ninja") else []
        subprocess.run(["cmake", "-S", ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=Release"] + generator, check=True)
    subprocess.run(["cmake", "--build", build, "--target", "emmy"], check=True)
    return build


def _tag():
    return "py3-none-" + sysconfig.get_platform().replace("-", "_").replace(".", "_")


def _files(build):
    """(path in the wheel, file on disk) for everything the wheel carries."""
    out = []
    package = os.path.join(ROOT, "python", "emmy")
    for name in sorted(os.listdir(package)):
        if name.endswith(".py"):
            out.append(("emmy/" + name, os.path.join(package, name)))
    # libemmy under the name the module looks for, and the shared ANTLR runtime it needs
    # (found beside it through its RUNPATH $ORIGIN).
    out.append(("emmy/lib/libemmy.so", os.path.realpath(os.path.join(build, "libemmy.so"))))
    for name in sorted(os.listdir(build)):
        if name.startswith("libantlr4-runtime.so.") and not os.path.islink(os.path.join(build, name)):
            out.append(("emmy/lib/" + name, os.path.join(build, name)))
    stdlib = os.path.join(ROOT, "stdlib")
    for name in sorted(os.listdir(stdlib)):
        if name.endswith(".emmy"):
            out.append(("emmy/stdlib/" + name, os.path.join(stdlib, name)))
    return out


def _record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def get_requires_for_build_wheel(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    version = _version()
    build = _build_dir()
    dist_info = f"emmy-{version}.dist-info"
    metadata = (
        "Metadata-Version: 2.1\n"
        "Name: emmy\n"
        f"Version: {version}\n"
        "Summary: Emmy: tensor programs in index notation, proved and compiled to CUDA (the Python module, libemmy and the stdlib)\n"
        "Requires-Python: >=3.8\n"
    )
    wheel = f"Wheel-Version: 1.0\nGenerator: emmy_wheel\nRoot-Is-Purelib: false\nTag: {_tag()}\n"
    name = f"emmy-{version}-{_tag()}.whl"
    os.makedirs(wheel_directory, exist_ok=True)
    records = []
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as z:

        def add(path, data, mode=0o644):
            info = zipfile.ZipInfo(path, date_time=(2026, 1, 1, 0, 0, 0))
            info.external_attr = (mode & 0xFFFF) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
            records.append(_record_line(path, data))

        for path, source in _files(build):
            with open(source, "rb") as f:
                add(path, f.read(), 0o755 if path.endswith((".so",)) or ".so." in path else 0o644)
        add(f"{dist_info}/METADATA", metadata.encode())
        add(f"{dist_info}/WHEEL", wheel.encode())
        record = f"{dist_info}/RECORD"
        z.writestr(record, "\n".join(records + [f"{record},,"]) + "\n")
    return name
