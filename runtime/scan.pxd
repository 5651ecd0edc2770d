# Cython declarations for scan.py (an "augmenting" .pxd: scan.py stays plain Python).
#
# The scanning helpers the generated scans and quiet tests call: typed, they run over C
# integer positions with direct calls into CPython's string functions. Callers always
# pass a str buffer (the held text, a chunk, or the whole output) and int positions.
cimport cython


# The records a generated Parser describes itself with: extension types when compiled, so
# the runtime reads their fields as C struct members (ParserBase._enter and _close run at
# every region boundary).
cdef class Field:
    cdef readonly str name
    cdef readonly object finish
    cdef readonly object join
    cdef readonly bint repeats
    cdef readonly bint typed
    cdef readonly bint dirty


cdef class State:
    cdef readonly Py_ssize_t field
    cdef readonly object scan
    cdef readonly object end_scan
    cdef readonly object quiet
    cdef readonly tuple memos
    cdef readonly bint ws_hold
    cdef readonly tuple runs
    cdef readonly tuple tails
    cdef readonly Py_ssize_t pump
    cdef readonly Py_ssize_t any_pump
    cdef readonly object reach

cpdef Py_ssize_t ws_run_start(str buf, Py_ssize_t lo, Py_ssize_t hi)

@cython.locals(n=Py_ssize_t)
cpdef Py_ssize_t ws_run_end(str buf, Py_ssize_t i)

@cython.locals(n=Py_ssize_t, i=Py_ssize_t)
cpdef Py_ssize_t partial_start(str buf, Py_ssize_t pos, str lit)

@cython.locals(best=Py_ssize_t, k=Py_ssize_t)
cpdef Py_ssize_t tail_in(str buf, Py_ssize_t lo, str firsts, frozenset beginnings, tuple long=*)

@cython.locals(n=Py_ssize_t, start=Py_ssize_t, cut=Py_ssize_t, i=Py_ssize_t, longest=Py_ssize_t, ws_lead=bint)
cpdef Py_ssize_t quiet_cut(str x, tuple quiet)

@cython.locals(n=Py_ssize_t)
cpdef Py_ssize_t ws_tail(str x)

@cython.locals(k=Py_ssize_t, ws_led=bint)
cpdef bint still_pending(str x, tuple pending, tuple marks)

@cython.locals(at=Py_ssize_t)
cdef bint _marked_elsewhere(str x, tuple marks, str prefix, Py_ssize_t k)

@cython.locals(n=Py_ssize_t, last=Py_ssize_t, i=Py_ssize_t, lo=Py_ssize_t, hi=Py_ssize_t, width=Py_ssize_t, best=Py_ssize_t)
cpdef Py_ssize_t first_of(str buf, tuple lits, Py_ssize_t start, Py_ssize_t top=*, str lead=*)
