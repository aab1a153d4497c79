"""Time the cross-file callers index (``gradguard.analysis.callers``) on a tree.

    python bench/bench_callers.py /work/realcode/src/transformers

Asks, for every module-level function of every file of the tree, whether a call of it in
another file is made with grad off (what ``UserCalls.entry_grad`` asks when a file is
linted), then the grad modes of all its calls there (``Callers.grads``): reports the time
of each (the index built in the first), the files read and parsed, and how many functions
have a caller with grad off. Only the functions whose body may matter are asked about
(``relevance``), as linting does.
"""

from __future__ import annotations

import argparse
import ast
import resource
import time
from pathlib import Path

from gradguard.analysis.callers import MAX_FILES
from gradguard.analysis.project import Project
from gradguard.domain.facts import Tri
from gradguard.syntax.relevance import module_names_that_matter


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tree")
    options = parser.parse_args()
    files = sorted(Path(options.tree).rglob("*.py"))
    functions = []
    for path in files:
        try:
            module = ast.parse(path.read_bytes())
        except (SyntaxError, ValueError):
            continue
        matter = module_names_that_matter(path.read_text("utf-8", "replace"))
        functions += [(str(path), node.name) for node in module.body
                      if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                      and matter.get(node.name, True)]  # what linting asks about
    project = Project()
    callers = project.callers
    indexing = [0.0]
    index = callers._index

    def timed(root):
        start = time.perf_counter()
        try:
            return index(root)
        finally:
            indexing[0] += time.perf_counter() - start

    callers._index = timed
    start = time.perf_counter()
    off = [callers.called_without_grad(project, path, name) for path, name in functions]
    total = time.perf_counter() - start
    parsed = callers.files_parsed
    start = time.perf_counter()
    answers = [callers.grads(project, path, name) for path, name in functions]
    full = time.perf_counter() - start
    print(f"tree: {options.tree} ({len(files)} files; MAX_FILES {MAX_FILES})")
    print(f"{len(functions)} module-level functions asked whether called with grad off "
          f"(what linting asks): {total:.2f} s, of which {indexing[0]:.2f} s indexing "
          f"{len(callers._trees)} tree(s) "
          f"({sum(1 for t in callers._trees.values() if t is None)} too big); "
          f"{parsed} files parsed")
    print(f"... and asked for all their callers' grad modes (grads): {full:.2f} s more, "
          f"{callers.files_parsed - parsed} more files parsed")
    print(f"files read for the index: {callers.files_read}")
    assert off == [Tri.NO in answer for answer in answers]
    print(f"functions with a caller elsewhere: {sum(1 for a in answers if a)}; "
          f"with one under grad off: {sum(1 for a in answers if Tri.NO in a)}")
    print(f"peak memory (ru_maxrss): "
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
