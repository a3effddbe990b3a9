"""The Python half of the page layout: finding and splicing records in a page.

A worker rewrites the pages it edits and the commit stores them as they are, so a
splice must give exactly the page that rebuilding it from its records would give.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from threadfold.workers.storage.pages import body_at, edit_page, id_at, record, records

# A page: records at ascending positions, ids of any length (UTF-8), bodies of any bytes.
_records = st.lists(
    st.tuples(st.integers(0, 50), st.text(min_size=0, max_size=12), st.binary(max_size=40)),
    max_size=8,
    unique_by=lambda r: r[0],
).map(lambda rs: sorted(rs, key=lambda r: r[0]))


def _page(rs: list[tuple[int, str, bytes]]) -> bytes:
    return b"".join(record(ident, pos, body, 0) for pos, ident, body in rs)


@given(_records, st.data())
def test_a_splice_equals_the_page_rebuilt_from_its_records(
    rs: list[tuple[int, str, bytes]], data: st.DataObject
) -> None:
    positions = [pos for pos, _, _ in rs]
    changed = data.draw(st.lists(st.sampled_from(positions), unique=True) if rs else st.just([]))
    changes: dict[int, bytes | None] = {}
    expected = []
    for pos, ident, body in rs:
        if pos not in changed:
            expected.append((pos, ident, body))
        elif data.draw(st.booleans()):
            changes[pos] = None  # removed
        else:
            new = data.draw(st.binary(max_size=40))
            changes[pos] = record(ident, pos, new, 0)
            expected.append((pos, ident, new))
    changes[51] = None  # a position the page does not hold changes nothing
    assert edit_page(_page(rs), changes) == _page(expected)


@given(_records, st.integers(0, 52))
def test_id_and_body_at_a_position(rs: list[tuple[int, str, bytes]], position: int) -> None:
    page = _page(rs)
    held = {pos: (ident.encode(), body) for pos, ident, body in rs}
    ident, body = held.get(position, (None, None))
    assert id_at(page, position) == ident
    assert body_at(page, position) == body
    assert [(p, i, b) for p, i, b in records(page)] == [
        (pos, ident.encode(), body) for pos, ident, body in rs
    ]
