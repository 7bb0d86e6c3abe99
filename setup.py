"""Builds fxfuse._C with CMake against the torch that is already installed.

Use `pip install --no-build-isolation -e .` (scripts/setup.sh does): the extension must
match the installed torch's C++ ABI, so it is never built in an isolated environment.
"""
import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        import torch  # the installed one
        import pybind11

        build_dir = Path(os.environ.get("FXFUSE_BUILD_DIR", ROOT / "build"))
        prefix = ";".join([torch.utils.cmake_prefix_path, pybind11.get_cmake_dir()])
        configure = ["cmake", "-S", str(ROOT), "-B", str(build_dir),
                     f"-DCMAKE_PREFIX_PATH={prefix}", f"-DPython3_EXECUTABLE={sys.executable}",
                     "-DFXFUSE_BUILD_PYTHON=ON"]
        if shutil.which("ninja"):
            configure += ["-G", "Ninja"]
        if not (build_dir / "CMakeCache.txt").exists():
            subprocess.check_call(configure)
        jobs = os.environ.get("FXFUSE_JOBS", str(os.cpu_count() or 2))
        subprocess.check_call(["cmake", "--build", str(build_dir), "-j", jobs])
        # CMake writes _C into python/fxfuse; copy it where setuptools expects the extension.
        built = sorted((ROOT / "python" / "fxfuse").glob("_C*.so"))
        if not built:
            raise RuntimeError("CMake did not produce python/fxfuse/_C*.so")
        target = Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.resolve() != built[-1].resolve():
            shutil.copy2(built[-1], target)
            # the NVRTC worker every compile runs in: found beside _C
            shutil.copy2(ROOT / "python" / "fxfuse" / "fxfuse-nvrtc-worker", target.parent)


setup(ext_modules=[CMakeExtension("fxfuse._C")], cmdclass={"build_ext": CMakeBuild})
