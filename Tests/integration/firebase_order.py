"""Firebase ordering, written independently of the server (FIREBASE_REFERENCE §2, §3): key order
(nameCompare), value order (null < false < true < numbers < strings by UTF-16 code units <
objects, ties by key) and a brute-force model of a query window. Shared by the integration
suites (test_queries.py, test_indexes.py, test_index_crash.py, ...)."""

import functools
import re

# -- Firebase key order (§2.1) ----------------------------------------------------------------

# JS `/^-?(0*)\d{1,10}$/`: ASCII digits only (Python's \d also matches other scripts' digits),
# and `fullmatch` because Python's `$` also matches before a trailing newline.
INTEGER_KEY = re.compile(r"-?(0*)\d{1,10}", re.ASCII)
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


def integer_value(key):
    """The key's value when Firebase treats it as an integer, else None."""
    if INTEGER_KEY.fullmatch(key):
        value = int(key)
        if INT32_MIN <= value <= INT32_MAX:
            return value
    return None


def utf16_cmp(a, b):
    """JS `<` on strings: UTF-16 code units (big-endian bytes compare like code units)."""
    ea, eb = a.encode("utf-16-be"), b.encode("utf-16-be")
    return (ea > eb) - (ea < eb)


def utf16_length(s):
    """JS `s.length`."""
    return len(s.encode("utf-16-be")) // 2


def ambiguous(a, b):
    """Firebase's nameCompare returns 0 for distinct integer-likes of equal value and length
    (`"-0"`, `"00"`; §11.9): their order is unknown, so the tests never put two such keys in play."""
    ia, ib = integer_value(a), integer_value(b)
    return a != b and ia is not None and ia == ib and utf16_length(a) == utf16_length(b)


def firebase_key_cmp(a, b):
    """nameCompare (§2.1): integer-likes first, by value, equal values shorter first; then
    strings in UTF-16 code-unit order."""
    if a == b:
        return 0
    ia, ib = integer_value(a), integer_value(b)
    if ia is not None and ib is not None:
        if ia != ib:
            return -1 if ia < ib else 1
        la, lb = utf16_length(a), utf16_length(b)
        if la != lb:
            return -1 if la < lb else 1
        return utf16_cmp(a, b)  # unreachable for the keys used here (see `ambiguous`)
    if ia is not None:
        return -1
    if ib is not None:
        return 1
    return utf16_cmp(a, b)


firebase_key = functools.cmp_to_key(firebase_key_cmp)


def key_sort_key(key):
    """A tuple that sorts like `firebase_key_cmp` (faster than cmp_to_key for big sets)."""
    i = integer_value(key)
    if i is not None:
        return (0, i, utf16_length(key), key.encode("utf-16-be"))
    return (1, 0, 0, key.encode("utf-16-be"))


# -- Firebase value order (§2.2) --------------------------------------------------------------

NULL, FALSE, TRUE, NUMBER, STRING, OBJECT = range(6)


def value_rank(value):
    if value is None:
        return NULL
    if value is False:
        return FALSE
    if value is True:
        return TRUE
    if isinstance(value, (int, float)):
        return NUMBER
    if isinstance(value, str):
        return STRING
    assert isinstance(value, (dict, list)), value
    return OBJECT


def value_sort_key(value):
    """A tuple ordering sort values as Firebase does; all objects (and arrays) tie."""
    rank = value_rank(value)
    if rank == NUMBER:
        return (rank, value, b"")
    if rank == STRING:
        return (rank, 0, value.encode("utf-16-be"))
    return (rank, 0, b"")


def value_cmp(a, b):
    ka, kb = value_sort_key(a), value_sort_key(b)
    return (ka > kb) - (ka < kb)


def child_at(value, path):
    """The value at `path` ("a/b") inside `value`; missing (or below a primitive) is None."""
    for segment in path.split("/"):
        if isinstance(value, dict):
            value = value.get(segment)
        elif isinstance(value, list) and re.fullmatch(r"0|[1-9][0-9]*", segment):
            index = int(segment)
            value = value[index] if index < len(value) else None
        else:
            return None
    return value


def sort_value(key, child, order):
    """The sort value of child `key` for `order`: "$key", "$value" or a child path."""
    if order == "$value":
        return child
    if order == "$key":
        return key
    return child_at(child, order)


def entry_sort_key(key, child, order):
    if order == "$key":
        return ((0, 0, b""), key_sort_key(key))
    return (value_sort_key(sort_value(key, child, order)), key_sort_key(key))


def ordered(children, order):
    """[(key, child)] in Firebase order for `order`."""
    return sorted(children.items(), key=lambda kv: entry_sort_key(kv[0], kv[1], order))


class Bound:
    """A query bound: `value`, an optional key tie-break, inclusive or not (startAt / endAt /
    equalTo are inclusive; startAfter / endBefore are not)."""

    def __init__(self, value, key=None, inclusive=True):
        self.value = value
        self.key = key
        self.inclusive = inclusive

    def __repr__(self):
        return f"Bound({self.value!r}, key={self.key!r}, inclusive={self.inclusive})"


def _compare_to_bound(key, child, order, bound):
    """<0, 0, >0: the child's (sort value, key) against the bound. Without a bound key only the
    values are compared (0 means "same value")."""
    if order == "$key":
        return firebase_key_cmp(key, bound.value)
    c = value_cmp(sort_value(key, child, order), bound.value)
    if c != 0 or bound.key is None:
        return c
    return firebase_key_cmp(key, bound.key)


def window(children, order, start=None, end=None, first=None, last=None):
    """The children a Firebase query selects, as [(key, child)] in order (§3)."""
    selected = []
    for key, child in ordered(children, order):
        if start is not None:
            c = _compare_to_bound(key, child, order, start)
            if c < 0 or (c == 0 and not start.inclusive):
                continue
        if end is not None:
            c = _compare_to_bound(key, child, order, end)
            if c > 0 or (c == 0 and not end.inclusive):
                continue
        selected.append((key, child))
    if first is not None:
        selected = selected[:first]
    if last is not None:
        selected = selected[-last:] if last > 0 else []
    return selected


# -- rendering ----------------------------------------------------------------------------------

ARRAY_KEY = re.compile(r"0|[1-9][0-9]*", re.ASCII)


def render(children):
    """The JSON a read answers for these children: `null` when none; an array when every key
    is a non-negative integer without leading zeros and the largest is < 2 x count (§1)."""
    if not children:
        return None
    if all(ARRAY_KEY.fullmatch(k) for k in children):
        largest = max(int(k) for k in children)
        if largest < 2 * len(children):
            return [children.get(str(i)) for i in range(largest + 1)]
    return dict(children)


def as_dict(result):
    """Query results as {key: value}, whether they came back as an object or an array."""
    if result is None:
        return {}
    if isinstance(result, list):
        return {str(i): v for i, v in enumerate(result) if v is not None}
    assert isinstance(result, dict), result
    return dict(result)


class SortedWindow:
    """The same windows as `window()`, by binary search over children sorted once per order
    (for tens of thousands of children). `window()` stays the reference implementation."""

    _LOW = (-1,)  # sorts before every key_sort_key
    _HIGH = (2,)  # sorts after every key_sort_key

    def __init__(self, children):
        self.children = children
        self._sorted = {}

    def _entries(self, order):
        if order not in self._sorted:
            entries = sorted(((entry_sort_key(k, c, order), k, c) for k, c in self.children.items()), key=lambda e: e[0])
            self._sorted[order] = ([e[0] for e in entries], [(e[1], e[2]) for e in entries])
        return self._sorted[order]

    def _position(self, order, bound, is_start):
        import bisect

        sort_keys, _ = self._entries(order)
        if order == "$key":
            point = ((0, 0, b""), key_sort_key(bound.value))
            before = bound.inclusive if is_start else not bound.inclusive
        elif bound.key is None:
            low_side = bound.inclusive if is_start else not bound.inclusive
            point = (value_sort_key(bound.value), self._LOW if low_side else self._HIGH)
            before = True
        else:
            point = (value_sort_key(bound.value), key_sort_key(bound.key))
            before = bound.inclusive if is_start else not bound.inclusive
        return bisect.bisect_left(sort_keys, point) if before else bisect.bisect_right(sort_keys, point)

    def window(self, order, start=None, end=None, first=None, last=None):
        _, entries = self._entries(order)
        lo = 0 if start is None else self._position(order, start, True)
        hi = len(entries) if end is None else self._position(order, end, False)
        selected = entries[lo:hi] if lo < hi else []
        if first is not None:
            selected = selected[:first]
        if last is not None:
            selected = selected[-last:] if last > 0 else []
        return selected
