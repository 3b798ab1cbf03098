"""Graph-mode syntax support: a Python ``if`` on a tensor becomes a traced ``If``.

Graph mode traces ``construct`` (or a jitted function) once per input signature. A Python ``if``
whose condition is a tensor cannot be traced as written: the tracer would have to pick one side.
Before tracing, the function's source is parsed and every ``if`` at the head of a statement list
of the function body is rewritten together with the statements that follow it (its continuation),
the way MindSpore's graph syntax support lowers control flow::

    if x.sum() > 0:                def __ms_true_1(x=x, self=self):
        n = 8                          n = 8
    else:                   -->        <rest>
        n = 5                      def __ms_false_1(x=x, self=self):
    <rest>                             n = 5
                                       <rest>
                                   return __ms_branch(x.sum() > 0, __ms_true_1, __ms_false_1, "file:line")

``__ms_branch`` calls ``ms.cond`` when the condition is a tensor, so each side is traced into one
branch of an ``If`` node and picked at run time, and simply picks a side in Python when the
condition is a plain value (``if self.training:``). Both sides carry the continuation, so names
assigned in a branch (``n`` above) are plain Python values while that side is traced.

An ``if`` inside a loop or a ``with`` block is left as written; if its condition is a tensor the
tracer raises an error that names the line and points to ``ms.cond``. A function whose source is
not available (a lambda, code typed at a prompt) is traced as written.
"""

from __future__ import annotations

import ast
import copy
import functools
import inspect
import textwrap
import types
from typing import Callable

__all__ = ["rewrite_control_flow", "graph_function", "branch", "RewriteInfo"]


class RewriteInfo:
    """What the rewrite did to one function: the ``if`` lines it turned into branches."""

    def __init__(self, filename: str, lines: list[int]):
        self.filename = filename
        self.lines = lines

    def __repr__(self) -> str:
        return f"RewriteInfo({self.filename!r}, lines={self.lines})"


def branch(test, true_fn: Callable, false_fn: Callable, where: str):
    """Runs one side of a rewritten ``if``: ``ms.cond`` for a tensor, Python's ``if`` otherwise."""
    from . import Tensor, cond  # the package imports this module; resolved at call time

    if isinstance(test, Tensor):
        try:
            return cond(test, true_fn, false_fn)
        except Exception as e:  # name the user's line, keep the engine's reason
            msg = str(e)
            if where not in msg:
                raise type(e)(f"{where}: {msg}") from e
            raise
    return true_fn() if test else false_fn()


def _bound_names(stmts: list[ast.stmt]) -> set[str]:
    """Names a statement list binds in its own scope (not inside nested functions or classes)."""
    names: set[str] = set()

    class Visitor(ast.NodeVisitor):
        def visit_Name(self, node: ast.Name) -> None:
            if isinstance(node.ctx, (ast.Store, ast.Del)):
                names.add(node.id)

        def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
            names.add(node.name)

        visit_AsyncFunctionDef = visit_FunctionDef

        def visit_ClassDef(self, node: ast.ClassDef) -> None:
            names.add(node.name)

        def visit_Lambda(self, node: ast.Lambda) -> None:
            pass

        def visit_comprehension_scope(self, node) -> None:
            pass

        visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = visit_comprehension_scope

        def visit_Import(self, node) -> None:
            for a in node.names:
                names.add((a.asname or a.name).split(".")[0])

        visit_ImportFrom = visit_Import

        def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
            names.add(node.target.id)
            self.visit(node.value)

    v = Visitor()
    for s in stmts:
        v.visit(s)
    return names


def _read_names(stmts: list[ast.stmt], test: ast.expr | None = None) -> set[str]:
    """Every name read anywhere in the statements (nested scopes included: closures read them)."""
    names: set[str] = set()
    for node in [*stmts, *([test] if test is not None else [])]:
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                names.add(n.id)
    return names


def _has_head_if(stmts: list[ast.stmt]) -> bool:
    return any(isinstance(s, ast.If) for s in stmts)


# Each rewritten `if` copies its continuation into both sides: k `if`s in a row make 2**k copies.
# Past this many, the remaining `if`s stay as written (a tensor condition there gets the tracer's
# error naming the line).
_MAX_BRANCHES = 64


class _Rewriter:
    def __init__(self, filename: str, first_arg: str | None):
        self.filename = filename
        self.first_arg = first_arg
        self.count = 0
        self.lines: list[int] = []

    def block(self, stmts: list[ast.stmt], bound: set[str]) -> list[ast.stmt]:
        """Rewrites the first ``if`` of a statement list (and, recursively, those of its branches)."""
        for i, s in enumerate(stmts):
            if not isinstance(s, ast.If) or self.count >= _MAX_BRANCHES:
                continue
            head, rest = stmts[:i], stmts[i + 1 :]
            # A `global`/`nonlocal` in the continuation cannot move into a nested function.
            if any(isinstance(n, (ast.Global, ast.Nonlocal)) for r in rest for n in ast.walk(r)):
                return stmts
            return head + self.split(s, rest, bound | _bound_names(head))
        return stmts

    def split(self, node: ast.If, rest: list[ast.stmt], bound: set[str]) -> list[ast.stmt]:
        self.count += 1
        self.lines.append(node.lineno)
        k = self.count
        true_body = list(node.body) + [_copy(s) for s in rest]
        false_body = list(node.orelse) + [_copy(s) for s in rest]
        # Names bound before the `if` and read on either side travel as default arguments, so each
        # side starts from the values they had at the `if` and may rebind them freely.
        live = sorted(bound & (_read_names(true_body) | _read_names(false_body) | _bound_names(true_body + false_body)))
        # The function's first parameter goes first: zero-argument super() reads it.
        if self.first_arg in bound:
            live = [self.first_arg] + [n for n in live if n != self.first_arg]
        defs = []
        for side, body in (("true", true_body), ("false", false_body)):
            inner = self.block(body or [ast.Pass()], bound)
            defs.append(
                ast.FunctionDef(
                    name=f"__ms_{side}_{k}",
                    args=ast.arguments(
                        posonlyargs=[],
                        args=[ast.arg(arg=n) for n in live],
                        vararg=None,
                        kwonlyargs=[],
                        kw_defaults=[],
                        kwarg=None,
                        defaults=[ast.Name(id=n, ctx=ast.Load()) for n in live],
                    ),
                    body=inner,
                    decorator_list=[],
                    returns=None,
                    type_comment=None,
                )
            )
        where = f"{self.filename}:{node.lineno}"
        call = ast.Call(
            func=ast.Name(id="__ms_branch", ctx=ast.Load()),
            args=[
                node.test,
                ast.Name(id=f"__ms_true_{k}", ctx=ast.Load()),
                ast.Name(id=f"__ms_false_{k}", ctx=ast.Load()),
                ast.Constant(value=where),
            ],
            keywords=[],
        )
        out = [*defs, ast.Return(value=call)]
        for n in out:
            ast.copy_location(n, node)
        return out


def _copy(node: ast.AST) -> ast.AST:
    return copy.deepcopy(node)  # keeps the source positions: errors name the user's lines


def _source_of(fn) -> tuple[str, str, int] | None:
    try:
        lines, first = inspect.getsourcelines(fn)
        filename = inspect.getsourcefile(fn) or inspect.getfile(fn)
    except (OSError, TypeError):
        return None
    return textwrap.dedent("".join(lines)), filename, first


@functools.lru_cache(maxsize=256)
def _rewrite_code(fn_code: types.CodeType, source: str, filename: str, first: int):
    tree = ast.parse(source)
    fdef = tree.body[0] if tree.body else None
    if not isinstance(fdef, (ast.FunctionDef, ast.AsyncFunctionDef)) or not _has_head_if(fdef.body):
        return None
    a = fdef.args
    positional = [*a.posonlyargs, *a.args]
    rw = _Rewriter(filename, positional[0].arg if positional else None)
    params = {x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs]}
    params |= {x.arg for x in (a.vararg, a.kwarg) if x is not None}
    fdef.body = rw.block(fdef.body, params)
    if not rw.count:
        return None
    fdef.decorator_list = []
    # The rewritten function is made inside a factory whose parameters are the original closure's
    # free variables (and __ms_branch), so closures and zero-argument super() keep working.
    freevars = list(fn_code.co_freevars)
    factory = ast.FunctionDef(
        name="__ms_factory",
        args=ast.arguments(
            posonlyargs=[],
            args=[ast.arg(arg=n) for n in ["__ms_branch", *freevars]],
            vararg=None,
            kwonlyargs=[],
            kw_defaults=[],
            kwarg=None,
            defaults=[],
        ),
        body=[fdef, ast.Return(value=ast.Name(id=fdef.name, ctx=ast.Load()))],
        decorator_list=[],
        returns=None,
        type_comment=None,
    )
    module = ast.Module(body=[factory], type_ignores=[])
    ast.fix_missing_locations(module)
    ast.increment_lineno(module, first - 1)
    code = compile(module, filename, "exec")
    return code, RewriteInfo(filename, sorted({n + first - 1 for n in rw.lines}))


def rewrite_control_flow(fn: Callable) -> tuple[Callable, RewriteInfo | None]:
    """Returns ``fn`` with its head ``if`` statements lowered to ``branch`` calls, and what changed.

    ``fn`` may be a plain function or a bound method (the result is bound to the same object).
    Returns ``(fn, None)`` unchanged when there is nothing to rewrite or no source to read.
    """
    bound_self = getattr(fn, "__self__", None)
    func = getattr(fn, "__func__", fn)
    if not isinstance(func, types.FunctionType):
        return fn, None
    src = _source_of(func)
    if src is None:
        return fn, None
    source, filename, first = src
    try:
        made = _rewrite_code(func.__code__, source, filename, first)
    except SyntaxError:
        return fn, None
    if made is None:
        return fn, None
    code, info = made
    scope: dict = {}
    exec(code, func.__globals__, scope)  # defines __ms_factory only; the globals stay untouched
    cells = [c.cell_contents for c in (func.__closure__ or ())]
    new = scope["__ms_factory"](branch, *cells)
    new.__defaults__ = func.__defaults__
    new.__kwdefaults__ = func.__kwdefaults__
    functools.update_wrapper(new, func)
    new.__ms_rewrite__ = info
    if bound_self is not None:
        return types.MethodType(new, bound_self), info
    return new, info


def graph_function(fn: Callable) -> Callable:
    """``fn`` as Graph mode traces it: rewritten once (``rewrite_control_flow``), cached on ``fn``."""
    cached = getattr(fn, "__ms_graph__", None)
    if cached is not None:
        return cached
    new, _ = rewrite_control_flow(fn)
    try:
        fn.__ms_graph__ = new
    except (AttributeError, TypeError):  # a builtin or a bound method: nothing to cache on
        pass
    return new
