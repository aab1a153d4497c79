"""Every ``--format``, on hand-built findings: what each prints, that the machine formats
parse (JSON, XML, workflow commands), escaping of hostile messages and paths, and the
SARIF log against the official SARIF 2.1.0 schema."""

from __future__ import annotations

import json
import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from gradguard.domain.findings import Edit, Finding, Fix
from gradguard.reporting import report

SCHEMA = Path(__file__).resolve().parent / "data" / "sarif-schema-2.1.0.json"

SOURCE = [
    "import torch",
    "x = torch.ones(1, requires_grad=True)",
    "y = 2 * x",
    "x *= 100",
    "f = torch.matmul(d, w2)",
    "d[:] = 1",
    "",
]
HOSTILE = "100% `x` <&> \"q\" 'a', b: c\nsecond line\r\nthird\x0c"

UNSAFE = Fix("Rewrite out of place", "unsafe", (Edit(4, 1, 4, 9, "x = x * 100"),))
SAFE = Fix("Write into a clone", "safe", (Edit(6, 1, 6, 2, "d = d.clone()\nd"),))


def finding(line=4, col=1, code="GG101", message="in-place op on a leaf", **kwargs) -> Finding:
    return Finding("pkg/a.py", line, col, code, message, **kwargs)


LEAF = finding(end_line=4, end_col=9, fix=UNSAFE)
SAVED = finding(6, 1, "GG201", "d was saved by matmul", end_line=6, end_col=5, fix=SAFE,
                verdict="confirmed")
SYNTAX = finding(2, 5, "GG001", "syntax error: invalid syntax")  # a diagnostic: no end
FINDINGS = [SYNTAX, LEAF, SAVED]


def render(output_format, findings=FINDINGS, sources=None, show_source=False) -> str:
    return report.render(output_format, findings, {"pkg/a.py": SOURCE} if sources is None
                         else sources, show_source)


@pytest.mark.parametrize("output_format", report.FORMATS)
def test_every_format_renders_nothing_and_one_newline_at_the_end(output_format):
    text = render(output_format)
    assert text.endswith("\n") and not text.endswith("\n\n")
    empty = render(output_format, [])
    assert empty == "" or empty.endswith("\n")


@pytest.mark.parametrize("output_format", report.FORMATS)
def test_every_format_takes_a_hostile_message_and_path(output_format):
    odd = Finding("dir, x/a:b 100%.py", 1, 1, "GG302", HOSTILE, end_line=1, end_col=3,
                  fix=Fix(HOSTILE, "safe", (Edit(1, 1, 1, 3, HOSTILE),)), verdict="confirmed")
    text = report.render(output_format, [odd], {odd.path: ["ab = 1", ""]})
    assert "second line" in text or "second%20line" in text


# --- text, pylint ---------------------------------------------------------------------------


def test_text_is_unchanged():
    assert render("text") == (
        "pkg/a.py:2:5: GG001 syntax error: invalid syntax\n"
        "pkg/a.py:4:1: GG101 in-place op on a leaf\n"
        "pkg/a.py:6:1: GG201 d was saved by matmul [confirmed]\n")


def test_pylint():
    assert render("pylint") == (
        "pkg/a.py:2: [GG001] syntax error: invalid syntax\n"
        "pkg/a.py:4: [GG101] in-place op on a leaf\n"
        "pkg/a.py:6: [GG201] d was saved by matmul [confirmed]\n")


def test_pylint_keeps_one_line_per_finding():
    text = render("pylint", [finding(message=HOSTILE)])
    assert text.count("\n") == 1
    assert text == "pkg/a.py:4: [GG101] 100% `x` <&> \"q\" 'a', b: c\\nsecond line\\nthird\x0c\n"


# --- full -----------------------------------------------------------------------------------


def test_full_shows_source_span_and_fix():
    assert render("full") == """\
GG001 syntax error: invalid syntax
 --> pkg/a.py:2:5
  |
1 | import torch
2 | x = torch.ones(1, requires_grad=True)
  |     ^
3 | y = 2 * x
4 | x *= 100
  |

GG101 in-place op on a leaf
 --> pkg/a.py:4:1
  |
2 | x = torch.ones(1, requires_grad=True)
3 | y = 2 * x
4 | x *= 100
  | ^^^^^^^^
5 | f = torch.matmul(d, w2)
6 | d[:] = 1
  |
help: Rewrite out of place
  |
3 | y = 2 * x
4 - x *= 100
4 + x = x * 100
5 | f = torch.matmul(d, w2)
  |
note: This is an unsafe fix and may change runtime behavior

GG201 [*] d was saved by matmul [confirmed]
 --> pkg/a.py:6:1
  |
4 | x *= 100
5 | f = torch.matmul(d, w2)
6 | d[:] = 1
  | ^^^^
  |
help: Write into a clone
  |
5 | f = torch.matmul(d, w2)
6 + d = d.clone()
7 | d[:] = 1
  |
note: This is a safe fix
"""


def test_full_underlines_a_span_over_lines_and_aligns_tabs_and_wide_characters():
    lines = ["def f():", "\tz = g(x,  # 日本", "\t      y)", ""]
    span = Finding("m.py", 2, 6, "GG201", "m", end_line=3, end_col=10)
    text = report.render("full", [span], {"m.py": lines})
    assert text == """\
GG201 m
 --> m.py:2:6
  |
1 | def f():
2 |     z = g(x,  # 日本
  |         ^^^^^^^^^^^^
3 |           y)
  |           ^^
  |
"""


def test_full_cuts_a_long_span_and_pads_line_numbers():
    lines = [f"line{i}" for i in range(1, 31)] + [""]
    span = Finding("m.py", 9, 1, "GG201", "m", end_line=22, end_col=7)
    text = report.render("full", [span], {"m.py": lines})
    numbers = [int(m) for m in re.findall(r"^ *(\d+) \|", text, re.M)]
    assert numbers == [7, 8, 9, 10, 11, 12, 19, 20, 21, 22, 23, 24]
    assert "\n   | ...\n" in text and text.startswith("GG201 m\n  --> m.py:9:1\n   |\n 7 | line7")


def test_full_without_source_or_with_a_fix_that_does_not_fit():
    bad = Fix("Impossible", "safe", (Edit(40, 1, 40, 2, ""),))
    text = report.render("full", [finding(line=40, fix=bad)], {})
    assert text == ("GG101 [*] in-place op on a leaf\n --> pkg/a.py:40:1\n"
                    "help: Impossible\nnote: This is a safe fix\n")


def test_full_shows_control_characters_as_pictures():
    text = report.render("full", [Finding("m.py", 1, 5, "GG302", "m", end_line=1, end_col=6)],
                         {"m.py": ["x = \x1b[31m\x0c", ""]})
    assert "1 | x = \u241b[31m\u240c\n  |     ^\n" in text and "\x1b" not in text


def test_full_after_the_last_line_of_a_file():
    eof = Finding("m.py", 2, 1, "GG001", "'(' was never closed")
    text = report.render("full", [eof], {"m.py": ["x = (", ""]})
    assert text == "GG001 '(' was never closed\n --> m.py:2:1\n  |\n1 | x = (\n2 |\n  | ^\n  |\n"


# --- json -----------------------------------------------------------------------------------


def test_json_carries_end_fix_and_verdict():
    leaf, saved = json.loads(render("json", [LEAF, SAVED]))
    assert leaf == {
        "path": "pkg/a.py", "line": 4, "col": 1, "end_line": 4, "end_col": 9,
        "code": "GG101", "name": "leaf-inplace", "message": "in-place op on a leaf",
        "fix": {"message": "Rewrite out of place", "applicability": "unsafe",
                "edits": [{"line": 4, "col": 1, "end_line": 4, "end_col": 9,
                           "content": "x = x * 100"}]},
    }
    assert saved["verdict"] == "confirmed" and saved["fix"]["applicability"] == "safe"
    assert (saved["end_line"], saved["end_col"]) == (6, 5)
    assert saved["fix"]["edits"][0]["content"] == "d = d.clone()\nd"
    (syntax,) = json.loads(render("json", [SYNTAX]))
    assert syntax["fix"] is None and "verdict" not in syntax
    assert (syntax["end_line"], syntax["end_col"]) == (2, 5)


def test_json_escapes():
    (entry,) = json.loads(render("json", [finding(message=HOSTILE)]))
    assert entry["message"] == HOSTILE


# --- sarif ----------------------------------------------------------------------------------


def sarif(findings=FINDINGS) -> dict:
    return json.loads(render("sarif", findings))


def validate(log: dict) -> None:
    import jsonschema  # the test extra's: the validation is never skipped

    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    validator = jsonschema.validators.validator_for(schema)
    validator.check_schema(schema)
    validator(schema, format_checker=validator.FORMAT_CHECKER).validate(log)


def test_sarif_region_has_the_end_where_known_else_the_start():
    """Code scanning needs an end: a diagnostic's region ends where it starts."""
    results = sarif()["runs"][0]["results"]
    regions = [r["locations"][0]["physicalLocation"]["region"] for r in results]
    assert regions == [
        {"startLine": 2, "startColumn": 5, "endLine": 2, "endColumn": 5},
        {"startLine": 4, "startColumn": 1, "endLine": 4, "endColumn": 9},
        {"startLine": 6, "startColumn": 1, "endLine": 6, "endColumn": 5},
    ]
    assert sarif()["runs"][0]["columnKind"] == "unicodeCodePoints"


def test_sarif_fixes_and_verdict():
    syntax, leaf, saved = sarif()["runs"][0]["results"]
    assert "fixes" not in syntax and "properties" not in syntax
    assert leaf["fixes"] == [{
        "description": {"text": "Rewrite out of place"},
        "artifactChanges": [{
            "artifactLocation": {"uri": "pkg/a.py", "uriBaseId": "%SRCROOT%"},
            "replacements": [{
                "deletedRegion": {"startLine": 4, "startColumn": 1, "endLine": 4,
                                  "endColumn": 9},
                "insertedContent": {"text": "x = x * 100"},
            }],
        }],
        "properties": {"applicability": "unsafe"},
    }]
    assert saved["properties"] == {"verdict": "confirmed"}
    assert saved["fixes"][0]["properties"] == {"applicability": "safe"}


def test_sarif_deletion_and_insertion():
    fix = Fix("m", "safe", (Edit(1, 1, 1, 1, "a"), Edit(2, 1, 3, 1, "")))
    (result,) = sarif([finding(1, 1, fix=fix)])["runs"][0]["results"]
    insert, delete = result["fixes"][0]["artifactChanges"][0]["replacements"]
    assert insert == {"deletedRegion": {"startLine": 1, "startColumn": 1, "endLine": 1,
                                        "endColumn": 1},
                      "insertedContent": {"text": "a"}}
    assert delete == {"deletedRegion": {"startLine": 2, "startColumn": 1, "endLine": 3,
                                        "endColumn": 1}}


def test_sarif_uris_are_relative_to_the_repository(tmp_path, monkeypatch):
    """From a subdirectory of a git repository, paths are written from its root, with
    ``%SRCROOT%`` (where the root is in ``originalUriBaseIds``); a path outside it is an
    absolute ``file://`` URI."""
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    (tmp_path / "repo" / "src").mkdir()
    monkeypatch.chdir(tmp_path / "repo" / "src")
    odd = Finding("my dir/a#1%.py", 1, 1, "GG101", "m")
    outside = Finding(str(tmp_path / "x y.py"), 1, 1, "GG101", "m")
    run = sarif([odd, outside])["runs"][0]
    locations = [r["locations"][0]["physicalLocation"]["artifactLocation"]
                 for r in run["results"]]
    assert locations[0] == {"uri": "src/my%20dir/a%231%25.py", "uriBaseId": "%SRCROOT%"}
    assert locations[1] == {"uri": (tmp_path / "x y.py").as_uri()}
    assert run["originalUriBaseIds"] == {"%SRCROOT%": {"uri": (tmp_path / "repo").as_uri()
                                                       + "/"}}


def test_sarif_uris_outside_a_repository_are_relative_to_the_current_directory(
        tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    if report.sarif_root() != str(tmp_path):
        pytest.skip("the temporary directory is inside a git repository")
    (result,) = sarif([Finding("a.py", 1, 1, "GG101", "m")])["runs"][0]["results"]
    assert result["locations"][0]["physicalLocation"]["artifactLocation"] == {
        "uri": "a.py", "uriBaseId": "%SRCROOT%"}


def fingerprints(findings, lines) -> list[str]:
    log = json.loads(report.render("sarif", findings, {"pkg/a.py": lines}))
    return [r["partialFingerprints"]["primaryLocationLineHash"]
            for r in log["runs"][0]["results"]]


def test_sarif_fingerprints_survive_unrelated_edits():
    """Lines added above and re-indentation leave an alert's fingerprint alone; the
    same write twice gets two; another code, text or file another one."""
    before = ["import torch", "x *= 100", "y = 1", "x *= 100"]
    after = ["import torch", "", "# a comment", "if True:", "    x  *=  100", "y = 1",
             "x *= 100"]
    first = fingerprints([finding(2), finding(4)], before)
    moved = fingerprints([finding(5), finding(7)], after)
    assert first == moved and len(set(first)) == 2
    assert [f.split(":")[1] for f in first] == ["1", "2"]
    assert fingerprints([finding(2, code="GG102")], before) != first[:1]
    assert fingerprints([finding(3)], before) != first[:1]
    other_file = report.render("sarif", [Finding("pkg/b.py", 2, 1, "GG101", "m")],
                               {"pkg/b.py": before})
    assert json.loads(other_file)["runs"][0]["results"][0]["partialFingerprints"][
        "primaryLocationLineHash"] not in first


def test_sarif_rules_carry_help_and_a_link_to_their_documentation():
    from gradguard.reporting import ruledoc

    rules = {rule["id"]: rule for rule in sarif()["runs"][0]["tool"]["driver"]["rules"]}
    gg101 = rules["GG101"]
    assert gg101["help"]["markdown"].startswith("## What it does")
    assert "## Use instead" in gg101["help"]["text"]
    assert gg101["helpUri"] == ruledoc.doc_url("GG101")
    assert gg101["helpUri"].endswith("docs/rules.md#leaf-inplace-gg101")
    assert "#" not in rules["GG001"]["helpUri"]  # a diagnostic: the page, no section
    heading = "## leaf-inplace (GG101)"
    assert heading in Path(ruledoc.DOC_PATH).read_text(encoding="utf-8")  # the anchor's
    for rule in rules.values():  # what GitHub takes
        assert rule["help"]["text"] and rule["shortDescription"]["text"]
        assert 0 < len(rule["fullDescription"]["text"]) <= 1024
        assert len(rule["name"]) <= 255


def test_sarif_has_what_github_code_scanning_requires():
    """The properties GitHub's "SARIF support for code scanning" marks required, on
    every result; the empty string is not a value."""
    log = sarif()
    assert log["$schema"] and log["version"] == "2.1.0"
    (run,) = log["runs"]
    assert run["tool"]["driver"]["name"] and run["tool"]["driver"]["rules"]
    for result in run["results"]:
        assert result["message"]["text"]
        assert result["partialFingerprints"]["primaryLocationLineHash"]
        (location,) = result["locations"]
        physical = location["physicalLocation"]
        assert physical["artifactLocation"]["uri"]
        assert set(physical["region"]) == {"startLine", "startColumn", "endLine",
                                           "endColumn"}


@pytest.mark.parametrize("findings", [[], FINDINGS], ids=["empty", "findings"])
def test_sarif_is_valid_against_the_official_schema(findings):
    validate(sarif(findings))


def test_sarif_hostile_message_is_valid():
    odd = Finding("dir, x/a:b 100%.py", 1, 1, "GG302", HOSTILE, end_line=1, end_col=3,
                  fix=Fix(HOSTILE, "unsafe", (Edit(1, 1, 1, 3, HOSTILE),)), verdict="confirmed")
    log = sarif([odd])
    validate(log)
    assert log["runs"][0]["results"][0]["message"]["text"] == HOSTILE


def test_the_schema_catches_a_broken_log():
    """The validation is real: a region without startLine's type, or an unknown key, fails."""
    import jsonschema

    log = sarif()
    log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]["startLine"] = "2"
    with pytest.raises(jsonschema.ValidationError):
        validate(log)
    log = sarif()
    log["runs"][0]["results"][1]["fixes"][0]["safe"] = True
    with pytest.raises(jsonschema.ValidationError):
        validate(log)


# --- github ---------------------------------------------------------------------------------

COMMAND = re.compile(r"^::error (?P<properties>[^:]*)::(?P<message>.*)$")


def unescape(text: str) -> str:
    for escaped, char in (("%0D", "\r"), ("%0A", "\n"), ("%3A", ":"), ("%2C", ","),
                          ("%25", "%")):
        text = text.replace(escaped, char)
    return text


def parse_github(text: str) -> list[tuple[dict, str]]:
    commands = []
    for line in text.split("\n")[:-1]:  # the runner splits at line feeds only
        match = COMMAND.match(line)
        assert match, line
        properties = dict(item.split("=", 1) for item in match["properties"].split(","))
        commands.append(({key: unescape(value) for key, value in properties.items()},
                         unescape(match["message"])))
    return commands


def test_github_annotations():
    syntax, leaf, saved = parse_github(render("github"))
    path = os.path.abspath("pkg/a.py")
    assert syntax == ({"title": "gradguard (GG001)", "file": path, "line": "2", "col": "5"},
                      "syntax error: invalid syntax")
    assert leaf == ({"title": "gradguard (GG101)", "file": path, "line": "4", "col": "1",
                     "endLine": "4", "endColumn": "9"},
                    "in-place op on a leaf\nhelp: Rewrite out of place (unsafe fix)")
    assert saved[1] == "d was saved by matmul [confirmed]\nhelp: Write into a clone"
    assert render("github").startswith(
        f"::error title=gradguard (GG001),file={path.replace(':', '%3A')},line=2,col=5::")


def test_github_escapes_message_and_properties():
    odd = Finding("dir, x/a:b 100%.py", 1, 1, "GG302", HOSTILE)
    text = render("github", [odd])
    assert text.count("\n") == 1 and "\r" not in text
    ((properties, message),) = parse_github(text)
    assert message == HOSTILE and properties["file"] == os.path.abspath(odd.path)
    assert "%25 `x` <&>" in text and "%0Asecond line%0D%0Athird" in text
    assert ",file=" + os.path.abspath("dir%2C x/a%3Ab 100%25.py").replace(":", "%3A") in text


# --- azure ----------------------------------------------------------------------------------

AZURE = re.compile(r"^##vso\[task\.logissue (?P<properties>[^\]]*)\](?P<message>.*)$")


def parse_azure(text: str) -> list[tuple[dict, str]]:
    """Each line as the Azure Pipelines agent reads a logging command (its unescaping)."""
    def unescape_azure(value: str) -> str:
        for escaped, char in (("%0D", "\r"), ("%0A", "\n"), ("%3B", ";"), ("%5D", "]"),
                              ("%AZP25", "%")):
            value = value.replace(escaped, char)
        return value
    commands = []
    for line in text.split("\n")[:-1]:
        match = AZURE.match(line)
        assert match, line
        properties = dict(item.split("=", 1) for item in match["properties"].split(";") if item)
        commands.append(({key: unescape_azure(value) for key, value in properties.items()},
                         unescape_azure(match["message"])))
    return commands


def test_azure_logging_commands():
    syntax, leaf, saved = parse_azure(render("azure"))
    assert syntax == ({"type": "error", "sourcepath": "pkg/a.py", "linenumber": "2",
                       "columnnumber": "5", "code": "GG001"}, "syntax error: invalid syntax")
    assert leaf[0]["code"] == "GG101" and leaf[1] == "in-place op on a leaf"
    assert saved[1] == "d was saved by matmul [confirmed]"


def test_azure_escapes_message_and_properties():
    odd = Finding("dir;x]/a 100%.py", 1, 1, "GG302", HOSTILE)
    text = render("azure", [odd])
    assert text.count("\n") == 1 and "\r" not in text
    ((properties, message),) = parse_azure(text)
    assert message == HOSTILE and properties["sourcepath"] == odd.path


# --- gitlab ---------------------------------------------------------------------------------


def test_gitlab_code_quality(monkeypatch):
    monkeypatch.delenv("CI_PROJECT_DIR", raising=False)
    syntax, leaf, saved = json.loads(render("gitlab"))
    assert leaf == {
        "description": "GG101: in-place op on a leaf",
        "check_name": "GG101",
        "fingerprint": leaf["fingerprint"],
        "severity": "major",
        "location": {"path": "pkg/a.py", "lines": {"begin": 4, "end": 4},
                     "positions": {"begin": {"line": 4, "column": 1},
                                   "end": {"line": 4, "column": 9}}},
    }
    assert re.fullmatch(r"[0-9a-f]{32}", leaf["fingerprint"])
    assert syntax["severity"] == "critical" and syntax["location"]["lines"] == {"begin": 2,
                                                                              "end": 2}
    assert saved["description"] == "GG201: d was saved by matmul [confirmed]"


def test_gitlab_fingerprints_stable_across_moved_lines_and_unique(monkeypatch):
    monkeypatch.delenv("CI_PROJECT_DIR", raising=False)
    twice = [finding(4), finding(9)]
    moved = [finding(14), finding(19)]
    first = [entry["fingerprint"] for entry in json.loads(render("gitlab", twice))]
    assert len(set(first)) == 2
    assert [entry["fingerprint"] for entry in json.loads(render("gitlab", moved))] == first
    other = [finding(4, message="another"), finding(4, code="GG102"),
             Finding("pkg/b.py", 4, 1, "GG101", "in-place op on a leaf")]
    fingerprints = {e["fingerprint"] for e in json.loads(render("gitlab", other + twice))}
    assert len(fingerprints) == 5


def test_gitlab_paths_relative_to_the_project(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "repo").mkdir()
    monkeypatch.setenv("CI_PROJECT_DIR", str(tmp_path))
    inside = Finding(os.path.join("repo", "a.py"), 1, 1, "GG101", "m")
    outside = Finding(os.path.join(os.path.dirname(tmp_path), "b.py"), 1, 1, "GG101", "m")
    paths = [e["location"]["path"] for e in json.loads(render("gitlab", [inside, outside]))]
    assert paths == ["repo/a.py", outside.path.replace(os.sep, "/")]
    monkeypatch.chdir(tmp_path / "repo")  # the linter runs in a subdirectory
    (entry,) = json.loads(render("gitlab", [Finding("a.py", 1, 1, "GG101", "m")]))
    assert entry["location"]["path"] == "repo/a.py"


def test_gitlab_escapes():
    (entry,) = json.loads(render("gitlab", [finding(message=HOSTILE)]))
    assert entry["description"] == "GG101: " + HOSTILE


# --- junit ----------------------------------------------------------------------------------


def test_junit():
    text = render("junit")
    assert text.startswith('<?xml version="1.0" encoding="UTF-8"?>\n<testsuites ')
    root = ET.fromstring(text)
    assert root.tag == "testsuites" and root.attrib["tests"] == root.attrib["failures"] == "3"
    (suite,) = root
    assert suite.attrib["name"] == "pkg/a.py" and suite.attrib["failures"] == "3"
    cases = list(suite)
    assert [c.attrib["name"] for c in cases] == ["gradguard.GG001", "gradguard.GG101",
                                                 "gradguard.GG201"]
    assert cases[1].attrib["classname"] == "pkg/a" and cases[1].attrib["line"] == "4"
    failure = cases[2].find("failure")
    assert failure.attrib["message"] == "d was saved by matmul [confirmed]"
    assert failure.text == "line 6, col 1, d was saved by matmul [confirmed]"


def test_junit_a_suite_per_file():
    other = Finding("b.py", 1, 1, "GG101", "m")
    root = ET.fromstring(render("junit", FINDINGS + [other]))
    assert [s.attrib["name"] for s in root] == ["pkg/a.py", "b.py"]
    assert [s.attrib["tests"] for s in root] == ["3", "1"] and root.attrib["tests"] == "4"


def test_junit_without_findings_is_one_passing_case():
    root = ET.fromstring(render("junit", []))
    assert root.attrib["failures"] == "0" and root.attrib["tests"] == "1"
    (suite,) = root
    (case,) = suite
    assert case.find("failure") is None


def test_junit_escapes():
    odd = Finding("a<&>\".py", 1, 1, "GG302", HOSTILE + "\x00\ud800")
    text = render("junit", [odd])
    root = ET.fromstring(text)  # well-formed: no control character, no lone surrogate
    failure = root.find("testsuite/testcase/failure")
    expected = HOSTILE.replace("\x0c", "\\x0c") + "\\x00\\xd800"
    assert failure.attrib["message"] == expected
    assert failure.text.endswith(expected.replace("\r\n", "\n"))  # XML normalises text
    assert root.find("testsuite").attrib["name"] == "a<&>\".py"
    assert "&lt;&amp;&gt;" in text and "\x0c" not in text
