"""Where two deflate streams of the same bytes part ways, token by token.

Two shards that inflate to the same pixels can still differ in their stored chunks: the
compressor chose another literal or match somewhere. Walking both zlib streams as tokens
(literal byte, or match length and distance, each at its position in the inflated data) names
the first decision that differs, which says more about its cause than a byte offset in the file.
Slow (pure Python); meant for failure messages, and stops at the first difference.
"""

from __future__ import annotations

from collections.abc import Iterator

Token = tuple[str, int, int, int]  # ("lit", position, byte, 0) | ("match", position, length, distance)

_CODE_ORDER = (16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15)


def _code_table(count: int, first: int, per_width: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Base values and extra-bit widths of deflate's length or distance codes: the first
    2 * per_width codes take no extra bits, then each width serves per_width codes."""
    base, extra, value = [], [], first
    for code in range(count):
        bits = max(0, code // per_width - 1)
        base.append(value)
        extra.append(bits)
        value += 1 << bits
    return tuple(base), tuple(extra)


_DIST_BASE, _DIST_EXTRA = _code_table(30, 1, 2)
_LEN_BASE, _LEN_EXTRA = _code_table(28, 3, 4)
_LEN_BASE, _LEN_EXTRA = (*_LEN_BASE, 258), (*_LEN_EXTRA, 0)  # symbol 285 is 258 itself


class _Bits:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def take(self, n: int) -> int:
        value = 0
        for i in range(n):
            value |= ((self.data[self.pos >> 3] >> (self.pos & 7)) & 1) << i
            self.pos += 1
        return value


def _codes(lengths: list[int]) -> dict[tuple[int, int], int]:
    """Canonical Huffman codes: (length, code) -> symbol."""
    counts = [0] * 16
    for n in lengths:
        counts[n] += 1
    counts[0] = 0
    next_code, code = [0] * 16, 0
    for n in range(1, 16):
        code = (code + counts[n - 1]) << 1
        next_code[n] = code
    table = {}
    for symbol, n in enumerate(lengths):
        if n:
            table[(n, next_code[n])] = symbol
            next_code[n] += 1
    return table


def _symbol(bits: _Bits, table: dict[tuple[int, int], int]) -> int:
    code = n = 0
    while n < 16:
        code, n = (code << 1) | bits.take(1), n + 1
        if (n, code) in table:
            return table[(n, code)]
    raise ValueError("not a deflate stream: no code matches")


def _dynamic_tables(bits: _Bits) -> tuple[dict[tuple[int, int], int], dict[tuple[int, int], int]]:
    literals, distances, code_count = bits.take(5) + 257, bits.take(5) + 1, bits.take(4) + 4
    code_lengths = [0] * 19
    for i in range(code_count):
        code_lengths[_CODE_ORDER[i]] = bits.take(3)
    code_table = _codes(code_lengths)
    lengths: list[int] = []
    while len(lengths) < literals + distances:
        s = _symbol(bits, code_table)
        if s < 16:
            lengths.append(s)
        elif s == 16:
            lengths += [lengths[-1]] * (3 + bits.take(2))
        else:
            lengths += [0] * ((3 + bits.take(3)) if s == 17 else (11 + bits.take(7)))
    return _codes(lengths[:literals]), _codes(lengths[literals:])


def tokens(zlib_stream: bytes) -> Iterator[Token]:
    """The stream's literals and matches in order, each with its position in the inflated data."""
    bits, position, final = _Bits(zlib_stream[2:]), 0, 0
    while not final:
        final, kind = bits.take(1), bits.take(2)
        if kind == 0:
            bits.pos = (bits.pos + 7) & ~7
            size = bits.take(16)
            bits.take(16)
            for _ in range(size):
                yield ("lit", position, bits.take(8), 0)
                position += 1
            continue
        if kind == 1:
            lit_table, dist_table = _codes([8] * 144 + [9] * 112 + [7] * 24 + [8] * 8), _codes([5] * 30)
        else:
            lit_table, dist_table = _dynamic_tables(bits)
        while (s := _symbol(bits, lit_table)) != 256:
            if s < 256:
                yield ("lit", position, s, 0)
                position += 1
                continue
            length = _LEN_BASE[s - 257] + bits.take(_LEN_EXTRA[s - 257])
            d = _symbol(bits, dist_table)
            yield ("match", position, length, _DIST_BASE[d] + bits.take(_DIST_EXTRA[d]))
            position += length


def first_difference(a: bytes, b: bytes) -> str:
    """The first token where two zlib streams differ, and the token both had before it."""
    previous: Token | None = None
    try:
        for ta, tb in zip(tokens(a), tokens(b), strict=False):
            if ta != tb:
                return (
                    f"first differing token at inflated byte {min(ta[1], tb[1])}: {ta} vs {tb} "
                    f"(after {previous})"
                )
            previous = ta
    except (ValueError, IndexError) as e:  # a chunk that is not a whole deflate stream
        return f"not comparable as deflate streams after {previous}: {type(e).__name__}: {e}"
    return "the streams' tokens agree (they differ in block framing or the trailer)"
