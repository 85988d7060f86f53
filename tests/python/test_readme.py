"""The newcomer's way to Python: the README's main command builds the package, and the
README's "From Python" lines run as written."""

import os
import re
import subprocess

from conftest import once

ROOT = os.environ["STOKER_SOURCE"]


def read(*path):
    with open(os.path.join(ROOT, *path)) as file:
        return file.read()


def readme_python_lines():
    section = read("README.md").split("## From Python", 1)[1]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


@once
def test_the_main_command_builds_the_python_package():
    main = read("scripts", "main.sh")
    built = re.search(r'STOKER_BUILD_TARGETS="([^"]*)" scripts/build.sh', main)
    package = re.search(r"pybind11_add_module\((\w+)", read("src", "python", "CMakeLists.txt"))
    assert package.group(1) in built.group(1).split(), built.group(0)


@once
def test_the_readmes_python_lines_run_as_written(tmp_path):
    """In a folder holding a `corpus` of the README's datasets, with `model` and `train_step`
    (the reader's own) defined: 1000 steps, the README's save at step 1000, then the end."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "PMIX_"))}
    synth = subprocess.run([os.environ["STOKER"], "synth", "corpus", "--dataset",
                            "web:2000000:500", "--dataset", "code:1000000:500", "--files", "2"],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert synth.returncode == 0, synth.stderr
    reader_s_own = ("model = None\n\ndef train_step(model, batch):\n"
                    "    if batch['step'] > 1000:\n        raise SystemExit(0)\n\n")
    done = subprocess.run(["/usr/bin/python3", "-c", reader_s_own + readme_python_lines()],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    saved = os.path.join(tmp_path, "ckpt", "step-1000", "loader", "rank-00000-of-00001.ckpt")
    assert os.path.isfile(saved), os.listdir(os.path.join(tmp_path, "ckpt"))
