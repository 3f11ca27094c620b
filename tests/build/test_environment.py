#!/usr/bin/python3
"""The library's environment variables are read in one place and listed in
the docs: no product source but base/environment.cpp calls getenv on a
LOCKSTEP_ name, and docs/building.md's "Environment variables" section names
exactly the variables of base/environment.cpp's table. Each rule is also run
on a planted violation, so it can fail."""

import os
import re
import sys
import unittest

ROOT = os.environ.get("LOCKSTEP_SOURCE_DIR", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
# The library and the program; emu/ reads its own LOCKSTEP_EMU_* (docs/emulated-gpu.md).
PRODUCT = ["base", "kernels", "runtime", "ops", "distributed", "layers", "data", "training", "apps"]
READER = "base/environment.cpp"


def product_sources(root=ROOT):
    files = {}
    for top in PRODUCT:
        for folder, _, names in os.walk(os.path.join(root, top)):
            for name in names:
                if name.endswith((".cpp", ".h", ".cu", ".cuh")):
                    path = os.path.relpath(os.path.join(folder, name), root)
                    with open(os.path.join(root, path), encoding="utf-8") as f:
                        files[path] = f.read()
    return files


def stray_reads(files):
    """Calls of getenv on a LOCKSTEP_ name outside the one reader."""
    bad = []
    for path, text in sorted(files.items()):
        if path == READER:
            continue
        for n, line in enumerate(text.splitlines(), 1):
            if re.search(r'getenv\s*\(\s*"LOCKSTEP_', line):
                bad.append(f"{path}:{n}")
    return bad


def table_names(reader_text):
    return set(re.findall(r'"(LOCKSTEP_[A-Z0-9_]+)"', reader_text))


def documented_names(doc):
    m = re.search(r"^## Environment variables\n(.*?)(?=^## |\Z)", doc, re.S | re.M)
    # The section's table rows: "| `LOCKSTEP_X` | ... |".
    return set(re.findall(r"^\| `(LOCKSTEP_[A-Z0-9_]+)` \|", m.group(1), re.M)) if m else None


class Environment(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.files = product_sources()
        with open(os.path.join(ROOT, "docs", "building.md"), encoding="utf-8") as f:
            cls.doc = f.read()

    def test_only_the_one_reader_reads_lockstep_variables(self):
        self.assertEqual(stray_reads(self.files), [])

    def test_a_planted_read_fails_naming_it(self):
        files = dict(self.files)
        files["layers/planted.cpp"] = 'const char* v = std::getenv("LOCKSTEP_PLANTED");\n'
        self.assertEqual(stray_reads(files), ["layers/planted.cpp:1"])

    def test_the_docs_list_exactly_the_table(self):
        table = table_names(self.files[READER])
        self.assertGreaterEqual(len(table), 6)
        documented = documented_names(self.doc)
        self.assertIsNotNone(documented, "docs/building.md has no '## Environment variables' section")
        self.assertEqual(sorted(table - documented), [], "in base/environment.cpp, not in docs/building.md")
        self.assertEqual(sorted(documented - table), [], "in docs/building.md, not in base/environment.cpp")

    def test_a_variable_missing_from_the_docs_fails(self):
        reader = self.files[READER] + '\n{EnvironmentVariable::x, "LOCKSTEP_PLANTED", "?"},\n'
        self.assertIn("LOCKSTEP_PLANTED", table_names(reader) - documented_names(self.doc))


if __name__ == "__main__":
    unittest.main(argv=sys.argv)
