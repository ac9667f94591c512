"""A dataclass field's help text is the string literal written right below it (the field's
docstring, as in PEP 257's "attribute docstrings"): the text lives next to the field it
describes, and the command lines read it from there (``gpu_runs.cli``).

Python keeps no such string at run time, so :func:`field_docs` reads the class's source::

    @dataclass
    class Section:
        steps: int = 200
        \"\"\"optimizer steps T\"\"\"          ->  field_docs(Section) == {"steps": "optimizer steps T"}
"""
from __future__ import annotations

import ast
import functools
import inspect
import textwrap


@functools.cache
def field_docs(cls: type) -> dict[str, str]:
    """``{field: its docstring, whitespace collapsed}`` for each annotated field of ``cls``'s own
    body that has a string literal on the next statement (fields without one are absent)."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    body = tree.body[0].body
    out = {}
    for stmt, nxt in zip(body, body[1:]):
        if (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)
                and isinstance(nxt, ast.Expr) and isinstance(nxt.value, ast.Constant)
                and isinstance(nxt.value.value, str)):
            out[stmt.target.id] = " ".join(nxt.value.value.split())
    return out
