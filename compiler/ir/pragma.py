"""Typed pragma keys.

A pragma key is an interned object: ``pragma_key("dma_copy") is DMA_COPY``. The schedule API
accepts a key's name (TVM's habit: ``s[A].pragma(axis, "dma_copy")``) and converts it once;
passes then compare keys by identity (``n.key is DMA_COPY``), never by string.

Example:
    >>> pragma_key("dma_copy") is DMA_COPY
    True
    >>> str(ALU), sorted([DMA_COPY, ALU])
    ('alu', ['alu', 'dma_copy'])
"""

from __future__ import annotations

from compiler.errors import CompilerError


class PragmaKey:
    """One pragma kind; compared by identity (there is one object per name)."""

    __slots__ = ("doc", "name")

    def __init__(self, name: str, doc: str = "") -> None:
        self.name = name
        self.doc = doc

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        # messages quote a key as they quote its name
        return repr(self.name)

    def __lt__(self, other: PragmaKey) -> bool:
        # sorted listings in messages
        return self.name < other.name

    def __reduce__(self) -> tuple[object, tuple[str]]:
        # unpickling (process pools) must give back the interned key
        return (pragma_key, (self.name,))


_KEYS: dict[str, PragmaKey] = {}


def declare_pragma(name: str, doc: str = "") -> PragmaKey:
    """The interned key ``name`` (declared on first use).

    Example:
        >>> declare_pragma("demo_pragma") is declare_pragma("demo_pragma")
        True
    """
    # targets' internal keys may be dotted (``vta.uop_kernel``); the schedule API takes
    # identifiers only
    if not isinstance(name, str) or not name or any(c.isspace() for c in name):
        raise CompilerError(f"a pragma key must be a name without spaces, got {name!r}")
    key = _KEYS.get(name)
    if key is None:
        key = _KEYS[name] = PragmaKey(name, doc)
    return key


def pragma_key(key: PragmaKey | str) -> PragmaKey:
    """Convert a pragma name (or pass a key through): the one conversion from strings.

    Example:
        >>> pragma_key(ALU) is pragma_key("alu")
        True
    """
    if isinstance(key, PragmaKey):
        return key
    return declare_pragma(key)


DMA_COPY = declare_pragma("dma_copy", "the loop nest is a copy done by DMA transfers")
ALU = declare_pragma("alu", "the loop nest is elementwise work done by the vector ALU")
SKIP_DMA_COPY = declare_pragma("skip_dma_copy", "a copy the accelerator elides")
SKIP_ALU = declare_pragma("skip_alu", "ALU work the accelerator elides")
