# Cython declarations for base.py (an "augmenting" .pxd: base.py stays plain Python).
#
# When the runtime is compiled (setup.py, optional), ParserBase becomes an extension type
# whose instance state lives in C struct fields: feed's attribute reads and writes are
# then plain pointer loads and stores. The fields are exactly base.py's __slots__, in
# the same order (tests/test_native.py checks it). Only the runtime writes them, always
# with values of the declared type (positions are ints, bodies lists, held text str), so
# typing them changes nothing but speed; what a caller may pass in stays "object".

cimport cython

from respc.runtime.scan cimport Field, State


cdef class ParserBase:
    cdef public object initial_events
    cdef public object _tools
    cdef public dict _out
    cdef public bint _finalized
    cdef public bint _spans
    cdef public bint _lenient
    cdef public list _errors
    cdef public object _timeout
    cdef public object _left
    cdef public Py_ssize_t _keep
    cdef public str _ctx
    cdef public list _ctx_more
    cdef public str _held
    cdef public Py_ssize_t _done
    cdef public Py_ssize_t _off
    cdef public Py_ssize_t _ban
    cdef public list _memo
    cdef public object _stable
    cdef public str _stable_edge
    cdef public list _more
    cdef public list _more_blocks
    cdef public Py_ssize_t _run_check
    cdef public tuple _fields
    cdef public tuple _states
    cdef public Py_ssize_t _state
    cdef public Field _field
    cdef public Py_ssize_t _cur
    cdef public object _name
    cdef public object _scan
    cdef public object _end_scan
    cdef public object _quiet
    cdef public bint _ws_hold
    cdef public tuple _runs
    cdef public Py_ssize_t _pump
    cdef public object _dirty
    cdef public dict _chunk
    cdef public bint _opened
    cdef public Py_ssize_t _opened_at
    cdef public dict _caps
    cdef public list _parts
    cdef public list _blocks
    cdef public list _big
    cdef public bint _bare

    # The internal steps, callable from C: feed and the commit loop call them directly
    # (a Python-level method call per chunk would cost more than the step itself).
    @cython.locals(cut=Py_ssize_t, at=Py_ssize_t)
    cpdef list feed(self, text)
    cpdef dict _whole(self, str prefix, str text, tools, errors, timeout, budget)
    cpdef dict _state_data(self)
    cpdef _restore_state(self, dict data)
    cpdef _setup(self, tools)
    @cython.locals(n=Py_ssize_t, pos=Py_ssize_t, start=Py_ssize_t, off=Py_ssize_t, begin=Py_ssize_t,
                   end=Py_ssize_t, action=Py_ssize_t, keep=Py_ssize_t, cut=Py_ssize_t, committed=bint)
    cpdef _commit(self, events, str text, bint eos)
    cpdef _take(self, events, str text, Py_ssize_t at)
    cpdef _open(self, events, Py_ssize_t index, match, Py_ssize_t begin, Py_ssize_t end)
    @cython.locals(field=Field)
    cpdef _close(self, events, Py_ssize_t begin, Py_ssize_t end)
    cpdef _malformed(self, events, error, str body, Py_ssize_t begin, Py_ssize_t end)
    @cython.locals(cur=Py_ssize_t, record=State, field=Field)
    cpdef _enter(self, Py_ssize_t state)
    cpdef _reset(self)
    cpdef bint _stays_held(self, str text)
    cpdef _release(self)
    cpdef _compact(self)
    cpdef str _body(self)
    cpdef _keep_context(self, str text)
    @cython.locals(record=State)
    cpdef _check_stable(self, str buf, Py_ssize_t pos)
    @cython.locals(record=State)
    cpdef _check_tail(self, str buf, Py_ssize_t pos)
    @cython.locals(pump=Py_ssize_t, n=Py_ssize_t, k=Py_ssize_t, i=Py_ssize_t, record=State)
    cpdef _check_run(self, str buf, Py_ssize_t pos)
    cpdef tuple _scan_buffer(self, str text)
    cpdef dict _message(self)


cpdef str _cut_prefix(cls, str prefix)
cpdef _store(dict out, str name, join, bint repeats, value)
cpdef dict _captures(match)
@cython.locals(count=Py_ssize_t, i=Py_ssize_t)
cpdef bint _run_lasts(tuple entry, str buf, Py_ssize_t pos, Py_ssize_t n)
