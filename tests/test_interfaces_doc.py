"""docs/interfaces.md cannot go stale (issue 40, item 6).

1. Every signature it lists, in its fenced ```` ```signatures ```` blocks, is the code's: the
   parameters' names, order, kinds (positional-only, ``*args``, keyword-only, ``**kw``) and
   defaults equal those of ``inspect.signature`` of the object the dotted path names.
2. Every public module of every package is named in it (``pkg.mod``), except the figure
   modules of ``paper_figs.figures`` (one per figure, listed by ``paper_figs.figures.CATALOG``).

A block holds one entry per line: a dotted path and its parameters without annotations,
``lmo.muon(lr, momentum=0.95, ...)``; a line indented by four spaces continues the entry above.
To regenerate the blocks after an interface changed (the paths stay, the parameters are
rewritten from the code), or to fill in a new entry written as ``pkg.mod.name()``::

    python tests/test_interfaces_doc.py --write

Without ``--write`` the command prints the entries that differ.
"""
from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "interfaces.md"
PACKAGES = ("lmo", "theory", "verify", "gpu_runs", "paper_figs")
#: packages whose modules the doc need not name one by one (they move; a catalog lists them)
UNLISTED = ("paper_figs.figures",)
BLOCK = re.compile(r"^```signatures\n(.*?)^```$", re.M | re.S)
WIDTH = 100


# ----------------------------------------------------------------------------- the doc's entries
def entries(text: str) -> list[tuple[int, str]]:
    """(line number, entry) for every entry of every signatures block; continuation lines joined."""
    out = []
    for m in BLOCK.finditer(text):
        first = text.count("\n", 0, m.start(1)) + 1
        for k, line in enumerate(m.group(1).splitlines()):
            if not line.strip():
                continue
            if line.startswith("    ") and out:
                out[-1] = (out[-1][0], out[-1][1] + " " + line.strip())
            else:
                out.append((first + k, line.strip()))
    return out


def split_entry(entry: str) -> tuple[str, str]:
    """``"a.b.c(x, y=1)"`` -> ``("a.b.c", "x, y=1")``."""
    m = re.fullmatch(r"([A-Za-z_][\w.]*)\((.*)\)", entry, re.S)
    if not m:
        raise ValueError(f"not an entry `path(params)`: {entry!r}")
    return m.group(1), m.group(2)


def resolve(path: str):
    """The object a dotted path names: the longest importable module prefix, then attributes."""
    parts = path.split(".")
    for i in range(len(parts) - 1, 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ModuleNotFoundError:
            continue
        for name in parts[i:]:
            obj = getattr(obj, name)
        return obj
    raise ImportError(f"no module in {path!r}")


# ----------------------------------------------------------------------------- parameters
def parse_params(params: str) -> list[tuple[str, str, str | None]]:
    """(kind, name, default) per parameter of a parameter list written as Python; the default as
    ``ast.unparse`` writes it (so ``0.10`` and ``0.1``, ``"a"`` and ``'a'`` are the same)."""
    fn = ast.parse(f"def f({params}): pass").body[0].args
    out = []
    pos = fn.posonlyargs + fn.args
    defaults = [None] * (len(pos) - len(fn.defaults)) + fn.defaults
    for i, (a, d) in enumerate(zip(pos, defaults)):
        out.append(("positional-only" if i < len(fn.posonlyargs) else "positional", a.arg,
                    None if d is None else ast.unparse(d)))
    if fn.vararg:
        out.append(("*args", fn.vararg.arg, None))
    for a, d in zip(fn.kwonlyargs, fn.kw_defaults):
        out.append(("keyword-only", a.arg, None if d is None else ast.unparse(d)))
    if fn.kwarg:
        out.append(("**kwargs", fn.kwarg.arg, None))
    return out


class _Written:
    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return self.text


def _default_text(value, module) -> str:
    """The default as Python source: its repr when that parses, else the name it has."""
    text = repr(value)
    try:
        ast.parse(text, mode="eval")
        return text
    except SyntaxError:
        pass
    for name, v in vars(module).items() if module else ():
        if v is value:
            return name
    qual = getattr(value, "__qualname__", None)
    return f"{getattr(value, '__module__', '')}.{qual}" if qual else "..."


def _factories(obj) -> dict:
    """A dataclass's fields with a default factory: name -> the factory's call, ``dict()``."""
    if not dataclasses.is_dataclass(obj):
        return {}
    return {f.name: f"{f.default_factory.__name__}()" for f in dataclasses.fields(obj)
            if f.default_factory is not dataclasses.MISSING}


def code_params(obj) -> str:
    """The parameter list of ``inspect.signature(obj)``, annotations dropped, defaults as source
    (a dataclass field's default factory as its call: ``field(default_factory=dict)`` -> ``dict()``)."""
    sig = inspect.signature(obj)
    module, factories = inspect.getmodule(obj), _factories(obj)
    ps = [p.replace(annotation=inspect.Parameter.empty,
                    default=p.default if p.default is inspect.Parameter.empty
                    else _Written(factories.get(p.name) or _default_text(p.default, module)))
          for p in sig.parameters.values()]
    return str(sig.replace(parameters=ps, return_annotation=inspect.Signature.empty))[1:-1]


def differences(doc: str, code: str) -> list[str]:
    """What differs between two parameter lists, parameter by parameter."""
    a, b = parse_params(doc), parse_params(code)
    out = []
    names_a, names_b = [n for _, n, _ in a], [n for _, n, _ in b]
    if names_a != names_b:
        missing, extra = [n for n in names_b if n not in names_a], [n for n in names_a if n not in names_b]
        if not missing and not extra:
            return [f"order: documented {names_a}, the code has {names_b}"]
        return [("the code has parameters the doc lacks: " + ", ".join(missing) if missing else "")
                + ("; " if missing and extra else "")
                + ("the doc has parameters the code lacks: " + ", ".join(extra) if extra else "")]
    for (ka, n, da), (kb, _, db) in zip(a, b):
        if ka != kb:
            out.append(f"{n}: documented {ka}, the code has it {kb}")
        if da != db:
            out.append(f"{n}: documented default {da or '(none)'}, the code's is {db or '(none)'}")
    return out


def render(path: str, obj) -> str:
    """One entry, wrapped at WIDTH with four-space continuation lines."""
    line = f"{path}({code_params(obj)})"
    if len(line) <= WIDTH:
        return line
    rows, cur = [], ""
    for tok in re.split(r"(?<=,) ", line):
        if cur and len(cur) + 1 + len(tok) > WIDTH:
            rows.append(cur)
            cur = "    " + tok
        else:
            cur = f"{cur} {tok}" if cur else tok
    return "\n".join(rows + [cur])


# ----------------------------------------------------------------------------- modules
def public_modules() -> list[str]:
    """Every module and subpackage of PACKAGES (names without a leading underscore, no
    ``__main__``), except inside UNLISTED."""
    out = []
    for top in PACKAGES:
        for init in sorted((ROOT / top).rglob("__init__.py")):
            pkg = ".".join(init.parent.relative_to(ROOT).parts)
            if pkg != top:
                out.append(pkg)
            if pkg in UNLISTED:
                continue
            out += [f"{pkg}.{f.stem}" for f in sorted(init.parent.glob("*.py")) if not f.stem.startswith("_")]
    return [m for m in out if not any(m.startswith(u + ".") for u in UNLISTED)]


def unnamed_modules(text: str) -> list[str]:
    return [m for m in public_modules() if not re.search(rf"(?<![\w.]){re.escape(m)}(?!\w)", text)]


# ----------------------------------------------------------------------------- the tests
def stale(text: str) -> list[str]:
    """One message per entry that is not the code's."""
    bad = []
    for line, entry in entries(text):
        path, params = split_entry(entry)
        try:
            obj = resolve(path)
        except (ImportError, AttributeError) as e:
            bad.append(f"docs/interfaces.md:{line}: {path} does not exist ({e})")
            continue
        diff = differences(params, code_params(obj))
        if diff:
            bad.append(f"docs/interfaces.md:{line}: {path}: " + "; ".join(diff)
                       + f"\n    the code: {path}({code_params(obj)})")
    return bad


def test_every_listed_signature_is_the_codes():
    text = DOC.read_text()
    assert len(entries(text)) >= 100, "docs/interfaces.md lost its signatures blocks"
    bad = stale(text)
    assert not bad, ("docs/interfaces.md is stale (regenerate: python tests/test_interfaces_doc.py --write):\n"
                     + "\n".join(bad))


def test_every_public_module_is_named():
    missing = unnamed_modules(DOC.read_text())
    assert not missing, f"docs/interfaces.md does not name the modules {missing}"


def test_the_check_catches_a_stale_signature():
    """A planted stale entry (a renamed parameter, a changed default, a lost keyword-only
    marker) and an unknown path are each reported."""
    good = render("lmo.delay.delayed", resolve("lmo.delay.delayed"))
    assert not stale(f"```signatures\n{good}\n```\n")
    for wrong in ("lmo.delay.delayed(opt, tau=1, *, sync_start=0, sync_cooldown=0, total_steps=None, dc_asgd=0.0)",
                  "lmo.delay.delayed(opt, delay=2, *, sync_start=0, sync_cooldown=0, total_steps=None, dc_asgd=0.0)",
                  "lmo.delay.delayed(opt, delay=1, sync_start=0, sync_cooldown=0, total_steps=None, dc_asgd=0.0)",
                  "lmo.delay.no_such_function(opt)"):
        assert len(stale(f"```signatures\n{wrong}\n```\n")) == 1, wrong
    assert unnamed_modules("lmo.delay") and "lmo.delay" not in unnamed_modules("`lmo.delay`")


def write(text: str) -> str:
    """The doc with every entry regenerated from the code."""
    def block(m):
        body = "\n".join(render(p, resolve(p)) for p, _ in (split_entry(e) for _, e in entries(m.group(0))))
        return f"```signatures\n{body}\n```"
    return BLOCK.sub(block, text)


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    text = DOC.read_text()
    if "--write" in sys.argv[1:]:
        DOC.write_text(write(text))
        print(f"rewrote {len(entries(text))} entries of {DOC.relative_to(ROOT)}")
    else:
        print("\n".join(stale(text) + [f"unnamed module {m}" for m in unnamed_modules(text)]) or "up to date")
