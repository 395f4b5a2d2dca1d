"""The package's import graph, read from the source (top-level and in-function imports alike): no import
circles, and every package imports only packages below it (core < runs < label < inspect < reward < prm < rloo < studio
< ui < cli), so that no circle hides at package level either."""
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "rloo_studio"
LAYERS = ["core", "runs", "label", "inspect", "reward", "prm", "rloo", "studio", "ui", "cli_views", "python_api",
          "notebook", "cli"]
"""Bottom to top. rloo_studio.studio is a module between rloo and ui; __main__ is the CLI's."""


def modules(pkg: Path = PKG) -> dict[str, Path]:
    out = {}
    for f in pkg.rglob("*.py"):
        parts = list(f.relative_to(pkg.parent).with_suffix("").parts)
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = f
    return out


def graph(pkg: Path = PKG) -> dict[str, set[str]]:
    mods = modules(pkg)

    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    g: dict[str, set[str]] = {m: set() for m in mods}
    for m, f in mods.items():
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [f"{_absolute(m, f, node)}.{a.name}" for a in node.names]
            else:
                continue
            g[m] |= {r for r in map(resolve, (n for n in names if n.startswith("rloo_studio"))) if r and r != m}
    return g


def _absolute(module: str, path: Path, node: ast.ImportFrom) -> str:
    """The absolute module name of `from [.]*module import ...` written in `module` (a file at `path`)."""
    if not node.level:
        return node.module or ""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    base = package[:len(package) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def layer(module: str) -> int:
    """The module's place in LAYERS: its package (rloo_studio.<package>...) or its own name; len(LAYERS) for
    the package root and for a package LAYERS does not place (test_every_module_has_a_layer)."""
    name = (module.split(".") + [""])[1]
    name = "cli" if name == "__main__" else name
    return LAYERS.index(name) if name in LAYERS else len(LAYERS)


def upward(g: dict[str, set[str]]) -> list[tuple[str, str]]:
    """(importer, imported) where a module imports a module of a package above its own."""
    return sorted((a, b) for a, deps in g.items() for b in deps if layer(b) > layer(a))


def cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in g[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def test_no_import_circles():
    assert cycles(graph()) == []


def test_the_scan_finds_a_circle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_packages_import_only_packages_below_them():
    assert upward(graph()) == []


def test_every_module_has_a_layer():
    """A new package is placed in LAYERS, so the layer test knows what it may import."""
    assert [m for m in modules() if layer(m) == len(LAYERS) and m != "rloo_studio"] == []


def test_the_scan_finds_an_upward_import_also_in_a_function(tmp_path):
    pkg = tmp_path / "rloo_studio"
    for sub in ("runs", "rloo", "core"):
        (pkg / sub).mkdir(parents=True)
        (pkg / sub / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "rloo" / "view.py").write_text("PLOTS = []\n")
    (pkg / "core" / "a.py").write_text("from . import b\n")
    (pkg / "core" / "b.py").write_text("")
    (pkg / "runs" / "chart_data.py").write_text("def f():\n    from rloo_studio.rloo import view\n    return view\n")
    g = graph(pkg)
    assert g["rloo_studio.core.a"] == {"rloo_studio.core.b"}  # a relative import is read too
    assert upward(g) == [("rloo_studio.runs.chart_data", "rloo_studio.rloo.view")]


def test_the_app_builds_its_page_without_transformers_or_unsloth(tmp_path):
    """The page is served before any model is loaded: building it imports neither transformers nor Unsloth (whose
    import, torch's included, takes about 10 s on a CPU; core/bootstrap.py imports it before the first transformers
    import, when a job or a scorer needs it)."""
    import subprocess
    import sys

    script = ("import sys\nfrom rloo_studio.studio import Studio\nfrom rloo_studio.ui.app import build_ui\n"
              f"build_ui(Studio({str(tmp_path / 'ws')!r}, seed_demo=True))\n"
              "print(sorted(m for m in ('transformers', 'trl', 'peft', 'unsloth') if m in sys.modules))\n"
              "import transformers\nprint('unsloth' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split("\n")[-3:-1] == ["[]", "True"]  # then the first transformers import brings Unsloth first
