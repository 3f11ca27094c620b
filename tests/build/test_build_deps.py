"""The build's handling of its dependencies, run by CTest (label `build`).

- An optional dependency (LOCKSTEP_DNNL, LOCKSTEP_MPI at AUTO) whose package
  is present but unusable never fails the configure: it is left out with a
  one-line notice saying what was missing. Shown on planted package files.
- scripts/check-deps fails on a path CMake found outside the Debian packages
  scripts/setup installs, naming the path and its package.
Everything planted lives in a temporary folder.
"""
import os
import subprocess
import tempfile
import unittest

SOURCE = os.environ.get("LOCKSTEP_SOURCE_DIR", os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
CMAKE = os.environ.get("LOCKSTEP_CMAKE", "cmake")

# A package config that fails the way Debian 12's oneDNN does without OpenCL's
# development files: it asks for its own dependency, REQUIRED, through a Find
# module that does not find it.
BROKEN_DEPENDENCY = """list(APPEND CMAKE_MODULE_PATH ${CMAKE_CURRENT_LIST_DIR})
find_package(PlantedOpenCL REQUIRED)
"""
FIND_PLANTED_OPENCL = """include(FindPackageHandleStandardArgs)
find_library(PlantedOpenCL_LIBRARY NAMES lockstep_planted_opencl_that_no_one_has)
find_package_handle_standard_args(PlantedOpenCL REQUIRED_VARS PlantedOpenCL_LIBRARY)
"""


def configure(source, build, *args):
    """Configures the project without the GPU backend (the dependencies under
    test are the CPU's); returns (exit status, everything printed)."""
    r = subprocess.run([CMAKE, "-S", source, "-B", build, "-G", "Ninja", "-DLOCKSTEP_GPU=off",
                        "-DLOCKSTEP_BUILD_TESTS=OFF", "-DLOCKSTEP_BUILD_BENCH=OFF", "-DLOCKSTEP_CCACHE=OFF", *args],
                       capture_output=True, text=True, timeout=300)
    return r.returncode, r.stdout + r.stderr


class InTemporaryFolder(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="lockstep-deps-")
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()


class OptionalPackages(InTemporaryFolder):

    def plant(self, folder, name, text):
        path = os.path.join(self.dir, folder)
        os.makedirs(path, exist_ok=True)
        with open(os.path.join(path, name), "w") as f:
            f.write(text)
        return path

    def test_a_broken_onednn_package_is_left_out_with_a_notice_under_auto(self):
        dnnl = self.plant("dnnl", "dnnl-config.cmake", BROKEN_DEPENDENCY)
        self.plant("dnnl", "FindPlantedOpenCL.cmake", FIND_PLANTED_OPENCL)
        status, out = configure(SOURCE, os.path.join(self.dir, "b1"), f"-Ddnnl_DIR={dnnl}")
        self.assertEqual(status, 0, out)
        notice = [l for l in out.splitlines() if "oneDNN" in l]
        self.assertEqual(len(notice), 1, out)
        self.assertIn("oneDNN found but unusable (Could NOT find PlantedOpenCL (missing: PlantedOpenCL_LIBRARY))",
                      notice[0])
        self.assertIn("im2col", notice[0])
        with open(os.path.join(self.dir, "b1", "CMakeCache.txt")) as f:
            cache = f.read()
        self.assertNotIn("DNNL::dnnl", cache)
        # ON means required: the same package stops the configure, naming it.
        status, out = configure(SOURCE, os.path.join(self.dir, "b2"), f"-Ddnnl_DIR={dnnl}", "-DLOCKSTEP_DNNL=ON")
        self.assertNotEqual(status, 0, out)
        self.assertIn("PlantedOpenCL", out)

    def test_a_package_config_that_stops_with_an_error_is_left_out_under_auto(self):
        dnnl = self.plant("dnnl", "dnnl-config.cmake", 'message(FATAL_ERROR "planted: this oneDNN is broken")\n')
        status, out = configure(SOURCE, os.path.join(self.dir, "b"), f"-Ddnnl_DIR={dnnl}")
        self.assertEqual(status, 0, out)
        self.assertRegex(out, r"lockstep: oneDNN found but unusable \(planted: this oneDNN is broken\)")

    def test_a_package_config_without_its_target_is_left_out_under_auto(self):
        dnnl = self.plant("dnnl", "dnnl-config.cmake", "set(dnnl_VERSION 9.9)\n")
        status, out = configure(SOURCE, os.path.join(self.dir, "b"), f"-Ddnnl_DIR={dnnl}")
        self.assertEqual(status, 0, out)
        self.assertIn("lockstep: oneDNN found but unusable (its package defines no target DNNL::dnnl)", out)

    def test_a_broken_mpi_is_left_out_with_a_notice_under_auto(self):
        modules = self.plant("modules", "FindMPI.cmake", 'message(FATAL_ERROR "planted: mpi.h does not compile")\n')
        status, out = configure(SOURCE, os.path.join(self.dir, "b"), f"-DCMAKE_MODULE_PATH={modules}")
        self.assertEqual(status, 0, out)
        self.assertRegex(out, r"lockstep: MPI found but unusable \(planted: mpi.h does not compile\); "
                              r"multi-process training left out")
        with open(os.path.join(self.dir, "b", "CMakeCache.txt")) as f:
            cache = f.read()
        self.assertNotIn("MPI_CXX_HEADER_DIR:", cache)


class CheckDeps(InTemporaryFolder):
    """scripts/check-deps against planted CMakeCache.txt files."""

    def check(self, entries, packages=None):
        build = os.path.join(self.dir, "build")
        os.makedirs(build, exist_ok=True)
        with open(os.path.join(build, "CMakeCache.txt"), "w") as f:
            f.write(f"CMAKE_HOME_DIRECTORY:INTERNAL={os.path.join(self.dir, 'src')}\n")
            for line in entries:
                f.write(line + "\n")
        env = dict(os.environ)
        if packages is not None:
            env["LOCKSTEP_SETUP_PACKAGES"] = packages
        r = subprocess.run([os.path.join(SOURCE, "scripts", "check-deps"), build],
                           capture_output=True, text=True, timeout=120, env=env)
        return r.returncode, r.stdout + r.stderr

    def test_paths_from_setup_packages_pass(self):
        # zlib's header and library come from zlib1g-dev, which scripts/setup names.
        status, out = self.check(["ZLIB_INCLUDE_DIR:PATH=/usr/include",
                                  "ZLIB_LIBRARY_RELEASE:FILEPATH=/usr/lib/x86_64-linux-gnu/libz.so"])
        self.assertEqual(status, 0, out)
        self.assertIn("2 found paths", out)

    def test_a_library_from_no_package_fails_naming_it(self):
        stray = os.path.join(self.dir, "opt", "libplanted.so")
        os.makedirs(os.path.dirname(stray))
        open(stray, "wb").close()
        status, out = self.check(["ZLIB_LIBRARY_RELEASE:FILEPATH=/usr/lib/x86_64-linux-gnu/libz.so",
                                  f"Planted_LIBRARY:FILEPATH={stray}"])
        self.assertEqual(status, 1, out)
        self.assertIn(f"Planted_LIBRARY = {stray}: belongs to no Debian package", out)
        self.assertNotIn("libz.so:", out)

    def test_a_library_from_a_package_setup_does_not_install_fails_naming_the_package(self):
        # As when scripts/setup lacked ocl-icd-opencl-dev: a -dev package's
        # library, found by CMake, with that package left out of the list
        # (zlib1g-dev here: setup's list replaced by one without it).
        libz = "/usr/lib/x86_64-linux-gnu/libz.so"
        status, out = self.check([f"ZLIB_LIBRARY_RELEASE:FILEPATH={libz}"], packages="make")
        self.assertEqual(status, 1, out)
        self.assertIn(f"ZLIB_LIBRARY_RELEASE = {libz}: from package zlib1g-dev, "
                      "which scripts/setup neither installs nor pulls in", out)
        status, out = self.check([f"ZLIB_LIBRARY_RELEASE:FILEPATH={libz}"], packages="make zlib1g-dev")
        self.assertEqual(status, 0, out)

if __name__ == "__main__":
    unittest.main()
