# Cython declarations for scan.py (an "augmenting" .pxd: scan.py stays plain Python).
#
# The scanning helpers the generated scans and quiet tests call: typed, they run over C
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

@cython.locals(n=Py_ssize_t)
cpdef Py_ssize_t ws_tail(str x)
