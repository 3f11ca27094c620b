"""Every Catch test case of a test executable must become one CTest entry.

catch_discover_tests hands the names to CMake as a list: a ';' in a name
splits it in two, and a '[' without its ']' makes CMake read every later ';'
as part of one element, so all the following test cases become a single
entry that matches nothing and may pass or fail for the wrong test. Both
happened (a name with 'I64 comes...; values' and one with '[0, 1)').
usage: check_test_names.py TEST_EXECUTABLE
"""
import subprocess
import sys


def problem(name):
    if ";" in name:
        return "holds ';'"
    depth = 0
    for c in name:
        depth += {"[": 1, "]": -1}.get(c, 0)
        if depth < 0:
            return "has a ']' before its '['"
    return "has a '[' without its ']'" if depth else None


def main():
    # Catch2 v2 exits with the number of test cases listed (mod 256), not 0.
    out = subprocess.run([sys.argv[1], "--list-test-names-only"], capture_output=True, text=True).stdout
    names = [line for line in out.splitlines() if line.strip()]
    bad = [(n, problem(n)) for n in names if problem(n)]
    for name, why in bad:
        print("test case %r %s: CMake's list would split or merge it with others" % (name, why))
    if not names:
        print("no test names listed by %s" % sys.argv[1])
        return 1
    print("%d test names, %d that CMake cannot keep whole" % (len(names), len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
