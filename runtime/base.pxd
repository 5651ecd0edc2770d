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


# The scanning helpers the generated scans and the feed loop call: typed, they run over C
# integer positions with direct calls into CPython's string functions. Callers always
# pass a str buffer (the held text, a chunk, or the whole output) and int positions.
cimport cython

cpdef Py_ssize_t ws_run_start(str buf, Py_ssize_t lo, Py_ssize_t hi)

@cython.locals(n=Py_ssize_t)
cpdef Py_ssize_t ws_run_end(str buf, Py_ssize_t i)

@cython.locals(n=Py_ssize_t, i=Py_ssize_t)
cpdef Py_ssize_t partial_start(str buf, Py_ssize_t pos, str lit)

@cython.locals(best=Py_ssize_t, k=Py_ssize_t)
cpdef Py_ssize_t tail_in(str buf, Py_ssize_t lo, str firsts, frozenset beginnings)

@cython.locals(n=Py_ssize_t, start=Py_ssize_t, cut=Py_ssize_t, i=Py_ssize_t, longest=Py_ssize_t, ws_lead=bint)
cpdef Py_ssize_t quiet_cut(str x, tuple quiet)
