"""How many files of the program name each `lockstep train` setting: at most
three (the field in settings.h, its row in settings_table.cpp, and the one
place that hands it to the library or uses it), so that adding a setting is
one declaration and one use, and nothing is left in a list of its own
(defaults, start report, resume check) that a newcomer must know of.

Settings still named more widely are listed in KNOWN_WIDER with the files
that name them today: the test fails when such a setting spreads further, when
another setting passes three files, and when a listed one narrows (so the
list only shrinks). Each rule is also run on a planted violation."""
import os
import re
import unittest

ROOT = os.environ.get("LOCKSTEP_SOURCE_DIR", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
APP = "apps/lockstep"
MOST_FILES = 3

# Settings still named in more than one file besides their home, each with
# the set of files naming it on 2026-11-29. The run's control (its files,
# epochs, batch, stopping rules, devices) is read once, in settled_run.cpp,
# which hands the stages its values (run_plan.h); these are what is left:
# the seed, handed to the loader and the data's draws (train_data.cpp) and to
# the replicas and the trainer (train_options.cpp); and two whose second file
# names them only as the library's member of that name (the counter reads a
# member's name, not its type): the loader threads, settled with the run and
# set as LoaderConfig::threads, and --resume, as the call Trainer::resume.
KNOWN_WIDER = {
    "seed": {"train_data.cpp", "train_options.cpp"},
    "resume": {"settled_run.cpp", "train_command.cpp"},
    "threads": {"settled_run.cpp", "train_data.cpp"},
}
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


def naming_files(files, field):
    """The files that name `field` as a member (s.field, S::field, ->field),
    and settings.h, which declares it."""
    member = re.compile(r"(\.|::|->)%s\b" % field)
    return {name for name, code in files.items() if member.search(code)} | {"settings.h"}


def spread(files):
    """[message] for each setting named in more files than allowed."""
    out = []
    for field in setting_fields(files):
        named = naming_files(files, field)
        allowed = HOME | KNOWN_WIDER[field] if field in KNOWN_WIDER else None
        if allowed is None and len(named) > MOST_FILES:
            out.append("%s is named in %d files: %s" % (field, len(named), ", ".join(sorted(named))))
        elif allowed is not None and not named <= allowed:
            out.append("%s spread to %s" % (field, ", ".join(sorted(named - allowed))))
    return out


def narrowed(files):
    """[message] for each listed setting now named in fewer files than listed."""
    out = []
    fields = set(setting_fields(files))
    for field, listed in sorted(KNOWN_WIDER.items()):
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

    def test_a_planted_use_in_a_fourth_file_fails_naming_the_setting_and_files(self):
        files = dict(self.files)
        files["planted.cpp"] = "void f(const TrainSettings& s) { use(s.label_smoothing); }\n"
        files["planted_too.cpp"] = "void g(TrainSettings& s) { s.label_smoothing = 0; }\n"
        self.assertIn("label_smoothing is named in 5 files: planted.cpp, planted_too.cpp, settings.h, "
                      "settings_table.cpp, train_options.cpp", spread(files))
        files = dict(self.files)
        files["planted.cpp"] = "void f(const TrainSettings& s) { use(s.seed); }\n"
        self.assertIn("seed spread to planted.cpp", spread(files))

    def test_a_comment_or_message_naming_a_setting_is_not_a_use(self):
        files = dict(self.files)
        files["planted.cpp"] = code_of('// s.label_smoothing here\nvoid f() { say("s.label_smoothing"); }\n'
                                       "TrainSettings x;\n")
        files["planted_too.cpp"] = "TrainSettings y; /* s.label_smoothing */\n"
        files["planted_too.cpp"] = code_of(files["planted_too.cpp"])
        self.assertEqual(spread(files), [])

    def test_a_listed_setting_that_narrows_must_leave_the_list(self):
        files = dict(self.files)
        files["train_data.cpp"] = files["train_data.cpp"].replace(".seed", ".other")
        self.assertIn("seed is no longer named in train_data.cpp: remove those from KNOWN_WIDER", narrowed(files))


if __name__ == "__main__":
    unittest.main()
