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
    cdef public object _finalized
    cdef public object _keep
    cdef public object _ctx
    cdef public object _held
    cdef public object _done
    cdef public object _off
    cdef public object _ban
    cdef public object _memo
    cdef public object _stable
    cdef public object _stable_edge
    cdef public object _more
    cdef public object _more_blocks
    cdef public object _state
    cdef public object _cur
    cdef public object _name
    cdef public object _scan
    cdef public object _end_scan
    cdef public object _quiet
    cdef public object _ws_hold
    cdef public object _dirty
    cdef public object _opened
    cdef public object _opened_at
    cdef public object _caps
    cdef public object _parts
    cdef public object _blocks
    cdef public object _big

    # The internal steps, callable from C: feed and the commit loop call them directly
    # (a Python-level method call per chunk would cost more than the step itself).
    cpdef _setup(self, tools)
    cpdef _commit(self, events, str text, bint eos)
    cpdef _take(self, events, str text)
    cpdef _open(self, events, index, match, empty_at)
    cpdef _close(self, events)
    cpdef _enter(self, state)
    cpdef _reset(self)
    cpdef _keep_context(self, str text)
    cpdef bint _stays_held(self, str text)
    cpdef _release(self)
