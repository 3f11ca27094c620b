"""scripts/stage-budget: a stage over its share of CI's 40 minutes fails, naming its slowest tests."""
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = os.path.join(os.environ.get("LOCKSTEP_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", "..")),
                      "scripts", "stage-budget")

# What ctest prints for a stage, one planted slow test among quick ones.
CTEST_OUTPUT = """Test project /tmp/build
    Start 3: quick one
1/3 Test #3: quick one ........................   Passed    1.50 sec
2/3 Test #1: planted.slow_test ................   Passed  812.25 sec
3/3 Test #2: another [cpu] ....................   Passed   12.00 sec
100% tests passed, 0 tests failed out of 3
"""


def budget(stage, seconds, env=None):
    with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False) as f:
        f.write(CTEST_OUTPUT)
    try:
        e = dict(os.environ)
        e.pop("LOCKSTEP_STAGE_BUDGET", None)
        e.update(env or {})
        return subprocess.run([sys.executable, SCRIPT, stage, str(seconds), f.name], capture_output=True, text=True,
                              env=e)
    finally:
        os.remove(f.name)


def share(stage):
    r = budget(stage, 0)
    return int(r.stdout.split(" of its ")[1].split(" s share")[0])


class StageBudget(unittest.TestCase):
    def test_a_stage_within_its_share_passes(self):
        r = budget("ordinary", share("ordinary"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("stage ordinary: ", r.stdout)

    def test_a_stage_over_its_share_fails_naming_its_slowest_tests_first(self):
        r = budget("emulated", share("emulated") + 1)
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("stage emulated took %d s, over its %d s share" % (share("emulated") + 1, share("emulated")),
                      r.stderr)
        lines = r.stderr.splitlines()
        self.assertEqual(lines[1].split(), ["812.2", "s", "planted.slow_test"])
        self.assertEqual(lines[2].split(), ["12.0", "s", "another", "[cpu]"])

    def test_the_shares_sum_to_forty_minutes_and_every_stage_has_one(self):
        stages = ["ordinary", "emulated", "sanitize", "fuzz", "tsan"]
        self.assertEqual(sum(share(s) for s in stages), 40 * 60)
        r = budget("nonesuch", 1)
        self.assertEqual(r.returncode, 2)
        self.assertIn("no share for stage 'nonesuch'", r.stderr)

    def test_off_turns_the_check_off(self):
        r = budget("fuzz", 10 ** 6, {"LOCKSTEP_STAGE_BUDGET": "off"})
        self.assertEqual(r.returncode, 0, r.stderr)


if __name__ == "__main__":
    unittest.main()
