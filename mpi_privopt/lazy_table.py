"""A name table whose entries are imported when first looked up.

The packaged methods and problems are named in tables of strings (``name ->
"package.module:attribute"``), so listing the names, ``in`` and ``len`` import nothing,
and looking one up imports only its module (and what that needs): a rank running one
method does not load every other method's libraries. Entries added at run time (a test's
class, a user module's factory) are stored as objects.
"""
from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, MutableMapping
from typing import Any

__all__ = ["LazyTable", "import_named"]


def import_named(where: str) -> Any:
    """The object ``"package.module:attribute"`` names (its module imported)."""
    module, _, attribute = where.partition(":")
    return getattr(importlib.import_module(module), attribute)


class LazyTable(MutableMapping):
    """``name -> object``; a named entry's module is imported on first lookup.

    Parameters
    ----------
    lazy : dict, optional
        ``name -> "package.module:attribute"`` known in advance.
    objects : dict, optional
        ``name -> object`` of the entries already at hand.
    verify : callable, optional
        ``verify(name, obj, where)`` raises ``KeyError`` when ``obj`` imported from
        ``where`` is not what ``name`` should be (e.g. a class under another name).
    fill : callable, optional
        Called once, at the first use of the table, returning more lazy entries: the
        tables of packages that cannot be imported when this table is created (they
        import the module that holds it).
    """

    def __init__(self, lazy: dict[str, str] | None = None, *,
                 objects: dict[str, Any] | None = None,
                 verify: Callable[[str, Any, str], None] | None = None,
                 fill: Callable[[], dict[str, str]] | None = None) -> None:
        self._objects: dict[str, Any] = dict(objects or {})
        self._lazy: dict[str, str] = dict(lazy or {})
        # the names in the order they were first given (listing order does not depend on
        # which entries happen to have been imported)
        self._order: dict[str, None] = dict.fromkeys([*self._objects, *self._lazy])
        self._verify = verify
        self._fill = fill

    def _filled(self) -> dict[str, str]:
        if self._fill is not None:
            fill, self._fill = self._fill, None
            self._add_lazy(fill())
        return self._lazy

    def _add_lazy(self, entries: dict[str, str]) -> None:
        self._lazy.update(entries)
        self._order.update(dict.fromkeys(entries))

    def add_lazy(self, entries: dict[str, str]) -> None:
        """Name where each of these entries is: ``"package.module:attribute"``."""
        self._filled()
        self._add_lazy(entries)

    def where(self, name: str) -> str | None:
        """``"package.module:attribute"`` of a named entry not yet imported, else None."""
        return self._filled().get(name)

    def __getitem__(self, name: str) -> Any:
        if name not in self._objects and name in self._filled():
            where = self._lazy[name]
            try:
                obj = import_named(where)
            except AttributeError:
                raise KeyError(f"{where} names nothing") from None
            if self._verify is not None:
                self._verify(name, obj, where)
            self._objects[name] = obj
        return self._objects[name]

    def __setitem__(self, name: str, obj: Any) -> None:
        self._filled()  # the filled names come before any added at run time
        self._objects[name] = obj
        self._order[name] = None

    def __delitem__(self, name: str) -> None:
        if name not in self:
            raise KeyError(name)
        self._objects.pop(name, None)
        self._lazy.pop(name, None)
        self._order.pop(name, None)

    def __contains__(self, name: object) -> bool:
        return name in self._objects or name in self._filled()

    def __iter__(self) -> Iterator[str]:
        self._filled()
        return iter(list(self._order))

    def __len__(self) -> int:
        self._filled()
        return len(self._order)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({sorted(self)})"
