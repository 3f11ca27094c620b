"""What docs/architecture.md says of the sources, checked on them: every #include
against the layer table's includes column, no layer's CPU half including its
cuda/ half, no include loop but the known ones, no product source over 600
lines, what emu/ includes, and the batch slice's formula, which
tests/cpu/test_batch_split.cpp checks against distributed/batch_split.h.
Each rule is also run on a planted violation, so a rule that can no longer
fail is told."""
import os
import re
import unittest

ROOT = os.environ.get("LOCKSTEP_SOURCE_DIR", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
DOC = "docs/architecture.md"
SLICE_TEST = "tests/cpu/test_batch_split.cpp"
# The library's folders, the program and the emulator: what the page's rules are about.
PRODUCT = ["base", "kernels", "runtime", "ops", "distributed", "layers", "data", "training", "apps", "emu"]
SOURCE_ENDINGS = (".h", ".cuh", ".cpp", ".cu", ".inc")
MAX_LINES = 600

# Include loops allowed, each with what keeps it (none today): the test fails
# when one appears that is not listed, or a listed one changes or goes.
KNOWN_LOOPS = {}

INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', re.M)


def read_sources(root=ROOT):
    """{path relative to the root: text} of every source file of PRODUCT."""
    files = {}
    for top in PRODUCT:
        for folder, _, names in os.walk(os.path.join(root, top)):
            for name in names:
                if name.endswith(SOURCE_ENDINGS):
                    path = os.path.join(folder, name)
                    with open(path, encoding="utf-8", errors="replace") as f:
                        files[os.path.relpath(path, root).replace(os.sep, "/")] = f.read()
    return files


def read(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return f.read()


def includes(files):
    """[(file, line, included path)] for every quoted include: the path beside
    the file when there is one, else from the root, else (an emulator header
    found through its include folders) the one file of that name under the
    same top folder; else the text as written."""
    out = []
    for path, text in files.items():
        for m in INCLUDE.finditer(text):
            written = m.group(1)
            beside = os.path.normpath(os.path.join(os.path.dirname(path), written)).replace(os.sep, "/")
            target = beside if beside in files else os.path.normpath(written).replace(os.sep, "/")
            if target not in files:
                top = path.split("/")[0] + "/"
                named = [f for f in files if f.startswith(top) and f.endswith("/" + written)]
                if len(named) == 1:
                    target = named[0]
            out.append((path, text.count("\n", 0, m.start()) + 1, target))
    return out


def layer_table(doc):
    """[(layer, [folders], set of layers it may include, or None for every layer)]
    from the page's table under "## Layers"."""
    section = doc.split("## Layers", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 4 or cells[0] in ("layer", "---"):
            continue
        folders = re.findall(r"`([^`]+/)`", cells[1])
        if not folders:
            continue
        allowed = None if cells[2] == "every layer" else set() if cells[2] == "nothing" else {
            c.strip() for c in cells[2].split(",")}
        rows.append((cells[0], folders, allowed))
    return rows


def layer_of(path, table):
    """The layer whose folder holds `path` (the longest such folder), or None."""
    best = None
    for layer, folders, _ in table:
        for folder in folders:
            if path.startswith(folder) and (best is None or len(folder) > best[1]):
                best = (layer, len(folder))
    return best[0] if best else None


def upward_includes(files, table):
    allowed = {layer: names for layer, _, names in table}
    bad = []
    for path, line, target in includes(files):
        source, dest = layer_of(path, table), layer_of(target, table)
        if source is None or dest is None or source == dest:
            continue
        if allowed[source] is not None and dest not in allowed[source]:
            bad.append(f"{path}:{line} ({source}) includes {target} ({dest})")
    return bad


def cuda_half_includes(files, table):
    """Includes of a layer's cuda/ folder from the rest of that layer's folder."""
    bad = []
    halves = [f for _, folders, _ in table for f in folders if f.endswith("/cuda/")]
    for path, line, target in includes(files):
        for half in halves:
            whole = half[:-len("cuda/")]
            if path.startswith(whole) and not path.startswith(half) and target.startswith(half):
                bad.append(f"{path}:{line} includes {target}, in the CUDA half {half}")
    return bad


def unit(path):
    """A header and the source file of its name beside it are one unit: the
    .cpp calls what its header's includers may call back."""
    return os.path.splitext(path)[0]


def include_loops(files):
    """{frozenset of units: [edges]} for every loop of includes between units."""
    edges = {}
    for path, line, target in includes(files):
        if target in files and unit(path) != unit(target):
            edges.setdefault(unit(path), {}).setdefault(unit(target), f"{path}:{line} includes {target}")
    # Tarjan's strongly connected components, without recursion.
    index, low, on_stack, stack, loops, counter = {}, {}, set(), [], {}, [0]
    for start in sorted({unit(p) for p in files}):
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, {}))))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, {})))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                members = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    members.add(member)
                    if member == node:
                        break
                if len(members) > 1:
                    loops[frozenset(members)] = sorted(
                        why for a in members for b, why in edges.get(a, {}).items() if b in members)
    return loops


def long_sources(files, limit=MAX_LINES):
    return sorted(f"{path}: {text.count(chr(10))} lines" for path, text in files.items()
                  if path.endswith((".cpp", ".cu")) and text.count("\n") > limit)


def emu_includes(files):
    """What the page says of emu/: only the cuDNN and cuBLAS stand-ins include
    anything but emu/, and that only kernels/'s shared maths: never
    kernels/cpu/ (the CPU kernels the emulated tests check the stand-ins
    against) nor kernels/cuda/."""
    bad = []
    for path, line, target in includes(files):
        if not path.startswith("emu/") or target.startswith("emu/"):
            continue
        stand_in = path.startswith(("emu/cudnn/", "emu/cublas/"))
        shared_maths = target.startswith("kernels/") and not target.startswith(("kernels/cuda/", "kernels/cpu/"))
        if not (stand_in and shared_maths):
            bad.append(f"{path}:{line} includes {target}")
    return bad


def slice_formula(doc):
    m = re.search(r"takes samples `(\[[^`]+\))`", doc)
    return m.group(1) if m else None


class SourceRules(unittest.TestCase):
    maxDiff = None  # a failure lists every offending include

    @classmethod
    def setUpClass(cls):
        cls.files = read_sources()
        cls.doc = read(DOC)
        cls.table = layer_table(cls.doc)

    def planted(self, path, text):
        files = dict(self.files)
        files[path] = files.get(path, "") + text
        return files

    def test_the_page_has_a_layer_table_with_an_includes_column(self):
        self.assertEqual([row[0] for row in self.table],
                         ["base", "kernels", "runtime", "ops", "distributed", "layers", "data", "training", "apps"])
        self.assertEqual(self.table[0][2], set())
        self.assertIsNone(self.table[-1][2])

    def test_no_include_goes_against_the_layer_table(self):
        self.assertEqual(upward_includes(self.files, self.table), [])

    def test_a_planted_upward_or_sideways_include_fails_naming_it(self):
        bad = upward_includes(self.planted("data/planted.cpp", '#include "layers/graph.h"\n'), self.table)
        self.assertIn("data/planted.cpp:1 (data) includes layers/graph.h (layers)", bad)
        bad = upward_includes(self.planted("kernels/cpu/planted.cpp", '\n#include "runtime/tensor.h"\n'), self.table)
        self.assertIn("kernels/cpu/planted.cpp:2 (kernels) includes runtime/tensor.h (runtime)", bad)

    def test_no_file_of_a_layer_includes_its_cuda_half_from_outside_it(self):
        self.assertEqual(cuda_half_includes(self.files, self.table), [])

    def test_a_planted_include_of_the_cuda_half_fails_naming_it(self):
        files = self.planted("runtime/memory.cpp", '#include "runtime/cuda/cuda_memory.h"\n')
        line = files["runtime/memory.cpp"].count("\n")
        self.assertIn(f"runtime/memory.cpp:{line} includes runtime/cuda/cuda_memory.h, in the CUDA half runtime/cuda/",
                      cuda_half_includes(files, self.table))

    def test_the_only_include_loops_are_the_known_ones(self):
        loops = include_loops(self.files)
        new = {k: v for k, v in loops.items() if k not in KNOWN_LOOPS}
        gone = [sorted(k) for k in KNOWN_LOOPS if k not in loops]
        self.assertEqual(new, {}, "include loops (a header and the source file of its name count as one)")
        self.assertEqual(gone, [], "known loops that changed or are gone: update KNOWN_LOOPS and docs/architecture.md")

    def test_a_planted_loop_fails_naming_its_includes(self):
        # open_dataset.cpp reading the cache through the writer's header: the
        # writer opens the folder through open_dataset.h.
        loops = include_loops(self.planted("data/open_dataset.cpp", '#include "data/cache_writer.h"\n'))
        planted = loops.get(frozenset({"data/open_dataset", "data/cache_writer"}))
        self.assertIsNotNone(planted, sorted(map(sorted, loops)))
        self.assertTrue(any(e.startswith("data/cache_writer.cpp:") and e.endswith("data/open_dataset.h")
                            for e in planted), planted)

    def test_no_product_source_is_over_600_lines(self):
        self.assertEqual(long_sources(self.files), [])

    def test_a_planted_long_source_fails_naming_it(self):
        self.assertIn("data/planted.cpp: 601 lines", long_sources(self.planted("data/planted.cpp", "\n" * (MAX_LINES + 1))))

    def test_emu_includes_what_the_page_says(self):
        self.assertEqual(emu_includes(self.files), [])

    def test_a_planted_emu_include_fails_naming_it(self):
        files = self.planted("emu/nccl/planted.cpp", '#include "kernels/bf16_math.h"\n')
        files["emu/cudnn/planted.cpp"] = '#include "kernels/cuda/launch_util.cuh"\n'
        files["emu/cudnn/planted_cpu.cpp"] = '#include "kernels/cpu/pool_cpu.h"\n'
        bad = emu_includes(files)
        self.assertIn("emu/cudnn/planted_cpu.cpp:1 includes kernels/cpu/pool_cpu.h", bad)
        self.assertIn("emu/cudnn/planted.cpp:1 includes kernels/cuda/launch_util.cuh", bad)
        self.assertIn("emu/nccl/planted.cpp:1 includes kernels/bf16_math.h", bad)

    def test_the_page_gives_the_slice_formula_the_unit_test_checks(self):
        formula = slice_formula(self.doc)
        self.assertIsNotNone(formula, f"{DOC}: no 'takes samples `[...)`'")
        self.assertIn(formula, read(SLICE_TEST), f"{SLICE_TEST} checks another formula than {DOC}'s {formula}")

    def test_a_page_with_another_slice_formula_fails(self):
        doc = self.doc.replace(slice_formula(self.doc), "[B r / N, B (r + 1) / N)")
        self.assertNotIn(slice_formula(doc), read(SLICE_TEST))


if __name__ == "__main__":
    unittest.main()
