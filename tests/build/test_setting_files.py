"""How many files of the program name each `lockstep train` setting: at most
three (the field in settings.h, its row in settings_table.cpp, and the one
place that hands it to the library or uses it), so that adding a setting is
one declaration and one use, and nothing is left in a list of its own
(defaults, start report, resume check) that a newcomer must know of.

A setting named more widely would be listed in KNOWN_WIDER with the files
that name it: the test fails when such a setting spreads further, when
another setting passes three files, and when a listed one narrows (so the
list only shrinks). The list is empty now; each rule is also run on a
planted violation, and on a planted list."""
import os
import re
import unittest

ROOT = os.environ.get("LOCKSTEP_SOURCE_DIR", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
APP = "apps/lockstep"
MOST_FILES = 3

# Settings named in more than one file besides their home, each with the set
# of files naming it: none since 2026-11-29. The run's control (its files,
# epochs, batch, stopping rules, devices, loader threads, seed) is read once,
# in settled_run.cpp, which hands the stages its values (run_plan.h).
KNOWN_WIDER = {}
# Named by every setting: the field and the table row.
HOME = {"settings.h", "settings_table.cpp"}


def code_of(text):
    """The text without comments and string literals (a help text or a
    message naming a flag is not a use of the field)."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r'"(\\.|[^"\\])*"', '""', text)
    return re.sub(r"//[^\n]*", "", text)


def read_app(root=ROOT):
    """{file name: code} of the program's files that deal in TrainSettings
    (commands.h declares the other commands' settings beside it)."""
    files = {}
    folder = os.path.join(root, APP)
    for name in sorted(os.listdir(folder)):
        if name.endswith((".h", ".cpp")) and name != "commands.h":
            with open(os.path.join(folder, name), encoding="utf-8") as f:
                code = code_of(f.read())
            if "TrainSettings" in code:
                files[name] = code
    return files


def setting_fields(files):
    """The fields of struct TrainSettings, in order (not `given`, the flags seen)."""
    header = files["settings.h"]
    body = header[header.index("struct TrainSettings {"):header.index("GivenFlags given;")]
    return re.findall(r"^\s+[\w:<>]+\s+(\w+)(?:\s*=[^;]*)?;", body, re.M)


def settings_types(code):
    """The names `code` gives the type TrainSettings: itself, and its aliases
    (settings_table.cpp's `using S = TrainSettings;`)."""
    return {"TrainSettings"} | set(re.findall(r"\busing\s+(\w+)\s*=\s*TrainSettings\s*;", code))


def settings_variables(code, types):
    """The names `code` declares with one of `types`: parameters, variables,
    members (`const TrainSettings& s`, `TrainSettings values_;`, `S* p`). Not
    a qualified function's class (`TrainSettings TrainFlags::settings()`)."""
    declared = re.compile(r"\b(?:%s)\b(?:\s*(?:const\b|&|\*))*\s*(\w+)\b(?!\s*::)" % "|".join(sorted(types)))
    return set(declared.findall(code)) - {"const"}


def naming_files(files, field):
    """The files that name `field` as a member of TrainSettings, and
    settings.h, which declares it. A member is counted where it is reached
    through a name the file (or the header of its name beside it: a .cpp
    uses the members its .h declares) declares with the type or an alias of
    it (s.field, p->field), or through the type (&S::field), so that another
    struct's member of the same name (LoaderConfig::threads, the call
    Trainer::resume) is not taken for the setting. What it cannot follow
    (`auto& t = s;`, a TrainSettings member declared in another header) goes
    uncounted, so the program reaches its settings through names declared
    with their type."""
    named = {"settings.h"}
    for name, code in files.items():
        own = code + files.get(name[:-len(".cpp")] + ".h", "") if name.endswith(".cpp") else code
        types = settings_types(own)
        variables = settings_variables(own, types)
        through_type = r"\b(?:%s)\s*::\s*%s\b" % ("|".join(sorted(types)), field)
        through_variable = r"\b(?:%s)\s*(?:\.|->)\s*%s\b" % ("|".join(sorted(variables)), field) if variables else None
        if re.search(through_type, code) or (through_variable and re.search(through_variable, code)):
            named.add(name)
    return named


def spread(files, known=KNOWN_WIDER):
    """[message] for each setting named in more files than allowed (`known`:
    the list of wider settings, KNOWN_WIDER or a test's)."""
    out = []
    for field in setting_fields(files):
        named = naming_files(files, field)
        allowed = HOME | known[field] if field in known else None
        if allowed is None and len(named) > MOST_FILES:
            out.append("%s is named in %d files: %s" % (field, len(named), ", ".join(sorted(named))))
        elif allowed is not None and not named <= allowed:
            out.append("%s spread to %s" % (field, ", ".join(sorted(named - allowed))))
    return out


def narrowed(files, known=KNOWN_WIDER):
    """[message] for each listed setting (of `known`) now named in fewer files
    than listed."""
    out = []
    fields = set(setting_fields(files))
    for field, listed in sorted(known.items()):
        if field not in fields:
            out.append("%s is no longer a setting: remove it from KNOWN_WIDER" % field)
            continue
        gone = (HOME | listed) - naming_files(files, field)
        if gone:
            out.append("%s is no longer named in %s: remove those from KNOWN_WIDER" % (field, ", ".join(sorted(gone))))
    return out


class SettingFiles(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.files = read_app()

    def test_the_fields_are_read(self):
        fields = setting_fields(self.files)
        self.assertGreater(len(fields), 40)
        for field in ("data", "optimizer", "mixup", "label_smoothing", "memory_format"):
            self.assertIn(field, fields)

    def test_no_setting_is_named_in_more_than_three_files_but_the_listed(self):
        self.assertEqual(spread(self.files), [])

    def test_the_list_of_wider_settings_only_shrinks(self):
        self.assertEqual(narrowed(self.files), [])
        # A planted list whose files still name the setting passes, so the
        # check reads the tree even while KNOWN_WIDER is empty.
        files = dict(self.files)
        files["planted.cpp"] = "void f(const TrainSettings& s) { use(s.seed); }\n"
        self.assertEqual(narrowed(files, {"seed": {"settled_run.cpp", "planted.cpp"}}), [])
        self.assertEqual(spread(files, {"seed": {"settled_run.cpp", "planted.cpp"}}), [])

    def test_a_planted_use_in_a_fourth_file_fails_naming_the_setting_and_files(self):
        files = dict(self.files)
        files["planted.cpp"] = "void f(const TrainSettings& s) { use(s.label_smoothing); }\n"
        files["planted_too.cpp"] = "void g(TrainSettings& s) { s.label_smoothing = 0; }\n"
        self.assertIn("label_smoothing is named in 5 files: planted.cpp, planted_too.cpp, settings.h, "
                      "settings_table.cpp, train_options.cpp", spread(files))
        files = dict(self.files)
        files["planted.cpp"] = "void f(const TrainSettings& s) { use(s.seed); }\n"
        files["planted_too.cpp"] = "void g(const TrainSettings* p) { use(p->seed); }\n"
        self.assertIn("seed is named in 5 files: planted.cpp, planted_too.cpp, settings.h, settings_table.cpp, "
                      "settled_run.cpp", spread(files))
        self.assertIn("seed spread to planted_too.cpp", spread(files, {"seed": {"settled_run.cpp", "planted.cpp"}}))

    def test_a_comment_or_message_naming_a_setting_is_not_a_use(self):
        files = dict(self.files)
        files["planted.cpp"] = code_of('// s.label_smoothing here\nvoid f() { say("s.label_smoothing"); }\n'
                                       "TrainSettings x;\n")
        files["planted_too.cpp"] = "TrainSettings y; /* s.label_smoothing */\n"
        files["planted_too.cpp"] = code_of(files["planted_too.cpp"])
        self.assertEqual(spread(files), [])

    def test_a_member_of_another_struct_of_the_same_name_is_not_a_use(self):
        files = dict(self.files)
        files["planted.cpp"] = ("void f(const TrainSettings& s, Trainer& trainer) {\n"
                                "  LoaderConfig cfg; cfg.threads = 2; trainer.resume(cfg);\n"
                                "  LoaderConfig* p = &cfg; p->threads = 1; use(LoaderConfig::threads);\n}\n")
        files["planted_too.cpp"] = "void g(TrainSettings& s) { LoaderConfig cfg; cfg.threads = 2; }\n"
        self.assertEqual(spread(files), [])
        self.assertEqual(naming_files(files, "threads"), {"settings.h", "settings_table.cpp", "settled_run.cpp"})
        self.assertNotIn("planted.cpp", naming_files(files, "resume"))

    def test_a_member_reached_through_the_type_or_an_alias_is_a_use(self):
        files = dict(self.files)
        files["planted.cpp"] = "void f(const TrainSettings& s) { LoaderConfig cfg; cfg.threads = s.threads; }\n"
        files["planted_too.cpp"] = "using T = TrainSettings;\nauto field = &T::threads;\n"
        files["planted_also.cpp"] = "struct Held { TrainSettings values; };\nint g(Held& h) { return h.values.threads; }\n"
        self.assertIn("threads is named in 6 files: planted.cpp, planted_also.cpp, planted_too.cpp, settings.h, "
                      "settings_table.cpp, settled_run.cpp", spread(files))

    def test_a_cpp_file_uses_the_members_its_header_declares(self):
        files = dict(self.files)
        files["planted.h"] = "struct Flags { TrainSettings values_; };\n"
        files["planted.cpp"] = "void Flags::f() { use(values_.threads); }\n"
        self.assertIn("planted.cpp", naming_files(files, "threads"))
        del files["planted.h"]
        self.assertNotIn("planted.cpp", naming_files(files, "threads"))

    def test_a_listed_setting_that_narrows_must_leave_the_list(self):
        # A planted entry (KNOWN_WIDER is empty): seed named in train_data.cpp
        # as well, then no longer there.
        files = dict(self.files)
        listed = {"seed": {"settled_run.cpp", "train_data.cpp"}}
        files["train_data.cpp"] = files["train_data.cpp"] + "void f(const TrainSettings& s) { use(s.seed); }\n"
        self.assertEqual(narrowed(files, listed), [])
        files["train_data.cpp"] = self.files["train_data.cpp"]
        self.assertIn("seed is no longer named in train_data.cpp: remove those from KNOWN_WIDER",
                      narrowed(files, listed))
        self.assertIn("no_such_setting is no longer a setting: remove it from KNOWN_WIDER",
                      narrowed(files, {"no_such_setting": {"train_data.cpp"}}))


if __name__ == "__main__":
    unittest.main()
