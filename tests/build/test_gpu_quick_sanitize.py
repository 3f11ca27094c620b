"""scripts/gpu-quick-sanitize, the sanitizer step of `scripts/gpu-check quick`,
on the emulated GPU build: compute-sanitizer cannot run there, so a stand-in
plays it (runs the test binary it is handed, or not, and prints the tool's
summary line). Each tool must get its own summary line, and "clean" only
when the tests really ran.

    LOCKSTEP_GPU_TESTS=build-emu/tests/lockstep_gpu_tests \\
        /usr/bin/python3 tests/build/test_gpu_quick_sanitize.py
"""
import os
import re
import stat
import subprocess
import sys
import tempfile
import unittest

SOURCE = os.environ.get("LOCKSTEP_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = os.path.join(SOURCE, "scripts", "gpu-quick-sanitize")
GPU_TESTS = os.environ.get("LOCKSTEP_GPU_TESTS", "")
TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")

# The stand-in: `--tool T` and the options before the program are skipped as
# compute-sanitizer's; FAKE_SANITIZER says what it does.
FAKE = r"""#!/bin/sh
tool=
while [ $# -gt 0 ]; do
  case $1 in
    --tool) tool=$2; shift 2 ;;
    --*) shift 2 ;;
    *) break ;;
  esac
done
case $tool in racecheck) line='========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)' ;;
  *) line='========= ERROR SUMMARY: 0 errors' ;; esac
case $FAKE_SANITIZER in
  run) "$@"; rc=$?; echo "$line"; exit $rc ;;
  nothing) echo "$line"; exit 0 ;;
  findings) "$@"; echo '========= ERROR SUMMARY: 3 errors'; exit 99 ;;
esac
exit 1
"""


class QuickSanitize(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.fake = os.path.join(self.dir.name, "compute-sanitizer")
        with open(self.fake, "w") as f:
            f.write(FAKE)
        os.chmod(self.fake, os.stat(self.fake).st_mode | stat.S_IEXEC)
        self.log = os.path.join(self.dir.name, "sanitizer.log")

    def tearDown(self):
        self.dir.cleanup()

    def run_step(self, sanitizer, mode="run", seconds=1000):
        env = dict(os.environ, FAKE_SANITIZER=mode, LOCKSTEP_EMU_DEVICES="1")
        r = subprocess.run([SCRIPT, sanitizer, GPU_TESTS or "/bin/false", str(seconds), self.log], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=1200)
        lines = r.stdout.splitlines()
        self.assertEqual(len(lines), 4, r.stdout)
        for tool, line in zip(TOOLS, lines):
            self.assertIn("sanitizer %s" % tool, line)
        return r.returncode, lines

    def needs_binary(self):
        if not GPU_TESTS:
            self.skipTest("LOCKSTEP_GPU_TESTS is not set (the emulated build's lockstep_gpu_tests)")

    def test_each_spec_alternative_selects_a_test(self):
        self.needs_binary()
        specs = subprocess.run([SCRIPT, "--specs"], stdout=subprocess.PIPE, text=True, check=True).stdout
        for row in specs.splitlines():
            tool, spec = row.split(" ", 1)
            for alternative in spec.split(","):
                listed = subprocess.run([GPU_TESTS, "--list-tests", alternative], stdout=subprocess.PIPE, text=True)
                count = re.search(r"^(\d+) matching test cases?$", listed.stdout, re.M)
                self.assertTrue(count and int(count.group(1)) > 0, "%s: %r selects no test" % (tool, alternative))

    def test_a_sanitizer_that_runs_the_tests_reports_each_tool_clean(self):
        self.needs_binary()
        rc, lines = self.run_step(self.fake)
        self.assertEqual(rc, 0, lines)
        for line in lines:
            self.assertRegex(line, r"^sanitizer \w+ \(per-block allocator\): clean \(.*SUMMARY.*in [1-9]\d* test cases")

    def test_a_sanitizer_that_runs_nothing_is_no_clean_run(self):
        rc, lines = self.run_step(self.fake, mode="nothing")
        self.assertEqual(rc, 1)
        for line in lines:
            self.assertRegex(line, r"^FAIL: sanitizer \w+: ran no test")

    def test_findings_fail_with_the_tools_summary(self):
        self.needs_binary()
        rc, lines = self.run_step(self.fake, mode="findings")
        self.assertEqual(rc, 1)
        for line in lines:
            self.assertRegex(line, r"^FAIL: sanitizer \w+: exit 99 \(ERROR SUMMARY: 3 errors\)")

    def test_no_sanitizer_is_reported_not_found_for_each_tool(self):
        rc, lines = self.run_step("")
        self.assertEqual(rc, 1)
        for line in lines:
            self.assertRegex(line, r"^FAIL: sanitizer \w+: not found")

    def test_no_time_left_is_reported_not_run(self):
        rc, lines = self.run_step(self.fake, seconds=10)
        self.assertEqual(rc, 1)
        for line in lines:
            self.assertRegex(line, r"^FAIL: sanitizer \w+: not run, no time left")
        self.assertFalse(os.path.exists(self.log) and os.path.getsize(self.log), "a tool ran without time")


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]] + sys.argv[1:])
