"""Compares a program's --help with the settings schema (`stoker settings --json`): every setting
the program takes is a flag of its --help showing the schema's default, and --help shows no flag
the schema does not list. Used by tests/cli/settings.sh.

    help_defaults.py SCHEMA.json PROGRAM(run|trainer) HELP.txt NAME
"""
import json
import re
import sys


def help_flags(text):
    """{flag: default as --help shows it ("" for none)} of CLI11's help: a flag's first line is
    "  --flag TYPE=DEFAULT  Help...", the help starting with a capital and a small letter (a
    type is capitals, or a lower-case list: UINT:SIZE [b, kb(=1024b), ...], ENUM:value in ...)."""
    flags = {}
    for line in text.splitlines():
        m = re.match(r"^  (--[a-z0-9-]+)(.*)$", line)
        if not m:
            continue
        spec = re.sub(r" Excludes: .*$", "", m.group(2).strip())
        spec = re.split(r"\s+(?=[A-Z][a-z])", spec, maxsplit=1)[0]
        flags[m.group(1)] = spec.rsplit("=", 1)[1] if "=" in spec.split(" ")[-1] else ""
    return flags


def main(schema_path, program, help_path, name):
    schema = [s for s in json.load(open(schema_path)) if program in s["programs"]]
    shown = help_flags(open(help_path).read())
    problems = []
    for setting in schema:
        flag, default = setting["flag"], setting["defaults"][program]
        if flag not in shown:
            problems.append(f"{name} --help lacks {flag}")
        elif default not in ("", "false") and shown[flag] != default:
            problems.append(f"{name} --help shows {flag}={shown[flag]}, the schema {default}")
    extra = set(shown) - {s["flag"] for s in schema} - {"--help"}
    problems += [f"{name} --help has {flag}, which the schema does not list" for flag in extra]
    for problem in problems:
        print(f"FAIL: {problem}", file=sys.stderr)
    if not problems:
        print(f"ok: {name} --help: the {len(schema)} settings of the schema, each with its default")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
