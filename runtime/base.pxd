# Cython declarations for base.py (an "augmenting" .pxd: base.py stays plain Python).
#
# When the runtime is compiled (setup.py, optional), ParserBase becomes an extension type
# whose instance state lives in C struct fields: feed's attribute reads and writes are
# then plain pointer loads and stores. The fields are exactly base.py's __slots__, in
# the same order (tests/test_native.py checks it); they stay untyped ("object") so the
# compiled and the pure-Python runtime accept and keep exactly the same values.

cdef class ParserBase:
    cdef public object initial_events
    cdef public object _tools
    cdef public object _out
    cdef public object _ctx
    cdef public object _held
    cdef public object _done
    cdef public object _mark
    cdef public object _ban
    cdef public object _opened_at
    cdef public object _off
    cdef public object _memo
    cdef public object _stable
    cdef public object _stable_edge
    cdef public object _more
    cdef public object _more_blocks
    cdef public object _finalized
    cdef public object _parts
    cdef public object _blocks
    cdef public object _big
    cdef public object _acc
    cdef public object _caps
    cdef public object _opened
    cdef public object _cur
    cdef public object _state
    cdef public object _name
    cdef public object _dirty
    cdef public object _scan
    cdef public object _firsts
    cdef public object _ws
    cdef public object _simple
    cdef public object _armable
    cdef public object _first
    cdef public object _second
    cdef public object _quiet
    cdef public object _pending
    cdef public object _event
    cdef public object _q1
    cdef public object _q2
    cdef public object _qq
