"""Dependencies point one way: runner → results → results.stats. Read from the source (imports and the
templates' references), so a lazy import inside a function counts as much as one at the top."""

import ast
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
STANDARD_LIBRARY = sys.stdlib_module_names


def imported_modules(path: Path) -> set[str]:
    """Absolute names of every module a file imports (relative imports resolved), and of every string
    handed to ``import_module``."""
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                names.add(".".join(base + ([node.module] if node.module else [])))
            else:
                names.add(node.module)
        elif (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module"
              and node.args and isinstance(node.args[0], ast.Constant)):
            names.add(node.args[0].value)
    return names


def top_level(name: str) -> str:
    return name.split(".")[0]


def test_imported_modules_reads_relative_lazy_and_dynamic_imports(tmp_path, monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    module = tmp_path / "results" / "views" / "page.py"
    module.parent.mkdir(parents=True)
    module.write_text("from ..models import Run\nfrom . import nightly\ndef f():\n    import runner.session\n"
                      "    importlib.import_module('runner.replay')\n")
    assert imported_modules(module) == {"results.models", "results.views", "runner.session", "runner.replay"}


@pytest.mark.parametrize("path", sorted((ROOT / "results").rglob("*.py")), ids=lambda p: str(p.relative_to(ROOT)))
def test_results_does_not_import_runner(path):
    assert not {name for name in imported_modules(path) if top_level(name) == "runner"}


def test_results_templates_do_not_name_runner_pages_or_templates():
    pattern = re.compile(r"""['"]runner[:/]""")
    offending = [str(path.relative_to(ROOT)) for path in (ROOT / "templates" / "results").rglob("*.html")
                 if pattern.search(path.read_text())]
    assert offending == []


@pytest.mark.parametrize("path", sorted((ROOT / "results" / "stats").rglob("*.py")),
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_the_numerical_core_imports_only_numpy_scipy_and_itself(path):
    foreign = {name for name in imported_modules(path)
               if top_level(name) not in STANDARD_LIBRARY | {"numpy", "scipy"} and not name.startswith("results.stats")}
    assert not foreign


def _module_path(name: str) -> Path | None:
    path = ROOT.joinpath(*name.split("."))
    for candidate in (path.with_suffix(".py"), path / "__init__.py"):
        if candidate.exists():
            return candidate
    return None


def imported_at_import_time(path: Path) -> set[str]:
    """The modules a file imports outside its functions (relative imports resolved): what importing it runs."""
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    names, pending = set(), list(ast.parse(path.read_text(), filename=str(path)).body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            names.add(".".join(base + ([node.module] if node.module else [])))
        pending.extend(ast.iter_child_nodes(node))
    return names


def results_modules_reached(module: str) -> dict[str, set[str]]:
    """The modules of results (outside its numerical core) that importing `module` imports, directly or in turn,
    each with what it imports at import time."""
    reached, pending = {}, [module]
    while pending:
        name = pending.pop()
        path = _module_path(name)
        if name in reached or path is None:
            continue
        reached[name] = imported_at_import_time(path)
        pending.extend(imported for imported in reached[name]
                       if top_level(imported) == "results" and not imported.startswith("results.stats"))
    return reached


@pytest.mark.parametrize("module", ["results.decisions", "results.presentation", "results.reports",
                                    "results.pairwise_rows", "results.nightly_rows"])
def test_the_decision_rules_and_their_wording_import_no_django(module):
    # What `manage.py compare --files` decides and prints without starting Django: importing the module, and
    # every module of results it imports in turn, imports nothing of Django (presentation's HTML helpers import
    # it when called, which the command never does).
    reached = results_modules_reached(module)
    django = {f"{name} imports {imported}" for name, imports in reached.items() for imported in imports
              if top_level(imported) == "django"}
    assert "results.decisions" in reached and not django, django


def test_the_decision_rules_do_not_import_their_wording():
    # Decisions are made in one module and worded in another: the rules never reach for the presentation module,
    # directly or through what they import.
    seen = results_modules_reached("results.decisions")
    assert "results.decisions" in seen and "results.presentation" not in seen, seen
