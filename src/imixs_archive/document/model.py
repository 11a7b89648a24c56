"""The Imixs document (an ItemCollection) and its typed values.

An item is a name mapped to a *list* of values. Values are plain Python objects; where
Python has one type for several ``xsi:type``s, a thin subclass carries the distinction:

=====================  ==================================================
``xsi:type``           Python value
=====================  ==================================================
``xs:string``          ``str``
``xs:int``             ``int`` (32 bit; a larger plain int is written as long/integer)
``xs:long``            ``Long`` (an ``int``)
``xs:short``           ``Short`` (an ``int``)
``xs:byte``            ``Byte`` (an ``int``)
``xs:integer``         ``BigInteger`` (an ``int``)
``xs:double``          ``float``
``xs:float``           ``Float`` (a ``float``)
``xs:boolean``         ``bool``
``xs:decimal``         ``decimal.Decimal``
``xs:dateTime``        ``datetime.datetime`` (offset and sub-second precision kept)
``xs:base64Binary``    ``bytes``, or a ``BinaryStream`` whose bytes are never held whole
``xmlItemArray``       ``dict[str, list[Value]]`` (keys keep their case)
``xmlItem``            ``list[Value]`` (a nested list)
``xsi:nil``            ``None``
other ``xs:*`` types   ``TypedText`` (a ``str``: the text, with its type kept)
=====================  ==================================================

Document equality is *typed*: ``Long(1)`` and ``1`` are different values, and two
datetimes are equal only with the same instant *and* offset.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping, MutableMapping
from decimal import Decimal
from enum import StrEnum
from types import NoneType, UnionType
from typing import Any, TypeAlias, cast

INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)
INT16 = (-(2**15), 2**15 - 1)
INT8 = (-(2**7), 2**7 - 1)


class XsType(StrEnum):
    """The ``xsi:type`` names Imixs writes."""

    STRING = "xs:string"
    INT = "xs:int"
    LONG = "xs:long"
    SHORT = "xs:short"
    BYTE = "xs:byte"
    INTEGER = "xs:integer"
    DOUBLE = "xs:double"
    FLOAT = "xs:float"
    BOOLEAN = "xs:boolean"
    DECIMAL = "xs:decimal"
    DATETIME = "xs:dateTime"
    BASE64 = "xs:base64Binary"
    MAP = "xmlItemArray"
    LIST = "xmlItem"
    NIL = "nil"
    OTHER = "xs:*"
    """Any other XML Schema type (``TypedText``): Java writes a ``Character`` as
    ``xs:unsignedShort``; old data holds ``xs:date`` or ``xs:anyURI``."""


class _Typed:
    """A number that names its XML Schema type in its ``repr``: ``Long(5)``."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({super().__repr__()})"


class Long(_Typed, int):
    """An ``xs:long`` value."""

    __slots__ = ()


class Short(_Typed, int):
    """An ``xs:short`` value."""

    __slots__ = ()


class Byte(_Typed, int):
    """An ``xs:byte`` value."""

    __slots__ = ()


class BigInteger(_Typed, int):
    """An ``xs:integer`` value (Java ``BigInteger``)."""

    __slots__ = ()


class Float(_Typed, float):
    """An ``xs:float`` value (Java ``float``)."""

    __slots__ = ()


class TypedText(str):
    """A value of an XML Schema type this codec has no Python type for (``xs:date``,
    ``xs:unsignedShort``, ...): the text as read, with its ``xsi:type`` kept, so that it is
    written back unchanged. As a ``str`` it reads, compares and filters as its text."""

    xs_type: str

    def __new__(cls, xs_type: str, text: str) -> TypedText:
        if not xs_type.startswith("xs:") or xs_type in _KNOWN_TYPES:
            raise ValueError(f"{xs_type!r} is not an XML Schema type without a Python type")
        value = super().__new__(cls, text)
        value.xs_type = xs_type
        return value

    def __reduce__(self) -> tuple[Any, ...]:
        return (TypedText, (self.xs_type, str(self)))

    def __repr__(self) -> str:
        return f"TypedText({self.xs_type!r}, {str(self)!r})"


_KNOWN_TYPES = frozenset(member.value for member in XsType)


def slice_pieces(pieces: Iterable[bytes], first: int, last: int) -> Iterator[bytes]:
    """The bytes first..last (inclusive) of a stream of pieces."""
    position = 0
    for piece in pieces:
        end = position + len(piece)
        if end > first:
            yield piece[max(0, first - position) : min(len(piece), last + 1 - position)]
        position = end
        if position > last:
            return


class BinaryStream(ABC):
    """An ``xs:base64Binary`` value whose bytes arrive as a stream of pieces.

    Used for attachment contents, which can be hundreds of MB: the reader hands them to a
    sink piece by piece, the writer encodes them piece by piece.
    """

    @abstractmethod
    def iter_bytes(self) -> Iterator[bytes]:
        """Yield the bytes in pieces; may be called more than once."""

    @property
    def size(self) -> int | None:
        """The number of bytes if known without reading them."""
        return None

    def iter_range(self, first: int, last: int) -> Iterator[bytes]:
        """The bytes ``first..last`` (inclusive), in pieces; nothing after ``last`` is
        read. Streams that know their pieces' sizes skip the ones before ``first``."""
        return slice_pieces(self.iter_bytes(), first, last)

    def read_all(self) -> bytes:
        """All bytes at once: only for small contents and tests."""
        return b"".join(self.iter_bytes())

    def __repr__(self) -> str:
        return f"<{type(self).__name__} size={self.size}>"


Value: TypeAlias = (
    str
    | int
    | float
    | bool
    | Decimal
    | dt.datetime
    | bytes
    | BinaryStream
    | dict[str, list[Any]]
    | list[Any]
    | None
)
"""One value of an item (see the module docstring for the mapping)."""


_XS_TYPES: tuple[tuple[type | UnionType, XsType], ...] = (
    # bool before int: bool is an int subclass. Typed subclasses before their bases.
    (bool, XsType.BOOLEAN),
    (Long, XsType.LONG),
    (Short, XsType.SHORT),
    (Byte, XsType.BYTE),
    (BigInteger, XsType.INTEGER),
    (int, XsType.INT),  # a plain int larger than 32 bits: long or integer (xs_type_of)
    (Float, XsType.FLOAT),
    (float, XsType.DOUBLE),
    (TypedText, XsType.OTHER),
    (str, XsType.STRING),
    (Decimal, XsType.DECIMAL),
    (dt.datetime, XsType.DATETIME),
    (bytes | bytearray | memoryview | BinaryStream, XsType.BASE64),
    (Mapping, XsType.MAP),
    (list | tuple, XsType.LIST),
    (NoneType, XsType.NIL),
)
"""The Python type of each ``xsi:type``, in the order they are tried."""


def xs_type_of(value: object) -> XsType:
    """The ``xsi:type`` a value is written with."""
    for python_type, xs_type in _XS_TYPES:
        if isinstance(value, python_type):
            return _plain_int_type(cast(int, value)) if xs_type is XsType.INT else xs_type
    raise TypeError(f"{type(value).__name__} is not an Imixs value type")


def _plain_int_type(value: int) -> XsType:
    """A plain ``int`` is ``xs:int`` in 32 bits, else ``xs:long`` in 64, else ``xs:integer``."""
    if INT32[0] <= value <= INT32[1]:
        return XsType.INT
    return XsType.LONG if INT64[0] <= value <= INT64[1] else XsType.INTEGER


def canonical(value: object) -> object:
    """A hashable, typed form of a value: equal canonical forms mean equal Imixs values."""
    kind = xs_type_of(value)
    if kind is XsType.MAP:
        assert isinstance(value, Mapping)
        return (kind.value, tuple(sorted((k, canonical_list(v)) for k, v in value.items())))
    if kind is XsType.LIST:
        assert isinstance(value, list | tuple)
        return (kind.value, canonical_list(value))
    if kind is XsType.BASE64:
        digest = hashlib.sha256()
        if isinstance(value, BinaryStream):
            for piece in value.iter_bytes():
                digest.update(piece)
        else:
            assert isinstance(value, bytes | bytearray | memoryview)
            digest.update(value)
        return (kind.value, digest.hexdigest())
    if kind is XsType.DATETIME:
        assert isinstance(value, dt.datetime)
        return (kind.value, value.isoformat())
    if kind in (XsType.DOUBLE, XsType.FLOAT):
        assert isinstance(value, float)
        return (kind.value, "NaN" if value != value else float(value))
    if kind is XsType.DECIMAL:
        assert isinstance(value, Decimal)
        return (kind.value, value.normalize() if value.is_finite() else str(value))
    if kind in (XsType.INT, XsType.LONG, XsType.SHORT, XsType.BYTE, XsType.INTEGER):
        assert isinstance(value, int)
        return (kind.value, int(value))
    if kind is XsType.OTHER:
        assert isinstance(value, TypedText)
        return (value.xs_type, str(value))
    return (kind.value, value)


def canonical_list(values: Iterable[object]) -> tuple[object, ...]:
    return tuple(canonical(v) for v in values)


def normalize_name(name: str) -> str:
    """Item names are trimmed and lower-cased, as Imixs does on every write."""
    return name.strip().lower()


class Document(MutableMapping[str, list[Any]]):
    """An Imixs ItemCollection: item name (lower-cased) -> list of values.

    Setting a single value (not a list) stores a one-element list, as Imixs'
    ``replaceItemValue`` does. Reading a missing item raises ``KeyError``; ``values()``
    of the Imixs API is :meth:`get_values` here (empty list when missing).
    """

    __slots__ = ("__weakref__", "_items")

    def __init__(self, items: Mapping[str, Any] | Iterable[tuple[str, Any]] | None = None):
        self._items: dict[str, list[Any]] = {}
        if items is not None:
            pairs = items.items() if isinstance(items, Mapping) else items
            for name, values in pairs:
                self[name] = values

    def __getitem__(self, name: str) -> list[Any]:
        return self._items[normalize_name(name)]

    def __setitem__(self, name: str, values: Any) -> None:
        key = normalize_name(name)
        if not key:
            raise ValueError("an item name must not be empty")
        stored = list(values) if isinstance(values, list | tuple) else [values]
        for value in stored:
            xs_type_of(value)  # rejects values that have no Imixs type
        self._items[key] = stored

    def set_read(self, name: str, values: list[Any]) -> None:
        """Set an item as a reader built it: a non-empty name and values of Imixs types
        already (no check of each value, no copy of the list)."""
        self._items[normalize_name(name)] = values

    def __delitem__(self, name: str) -> None:
        del self._items[normalize_name(name)]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and normalize_name(name) in self._items

    def get_values(self, name: str) -> list[Any]:
        """The values of an item; an empty list when it is missing (Imixs semantics)."""
        return self._items.get(normalize_name(name), [])

    def get_first(self, name: str, default: Any = None) -> Any:
        """The first value of an item, or ``default`` when missing or empty."""
        values = self.get_values(name)
        return values[0] if values else default

    def sorted_items(self) -> list[tuple[str, list[Any]]]:
        """Items in the order Imixs writes them: sorted by name (plain string order)."""
        return sorted(self._items.items())

    def canonical(self) -> tuple[tuple[str, tuple[object, ...]], ...]:
        """Typed, order-independent form used for equality."""
        return tuple((name, canonical_list(values)) for name, values in self.sorted_items())

    def copy(self) -> Document:
        clone = Document()
        clone._items = {name: list(values) for name, values in self._items.items()}
        return clone

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Document):
            return NotImplemented
        return self.canonical() == other.canonical()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        uid = self.get_first("$uniqueid")
        return f"<Document $uniqueid={uid!r} items={len(self._items)}>"
