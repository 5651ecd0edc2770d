# Cython declarations for decode.py (an "augmenting" .pxd: decode.py stays plain Python).
#
# Compiled (setup.py, optional), JSON's quick checks run over C positions and the walk
# for large floats iterates lists and dicts directly. Callers pass the str body of a
# region (copied into a plain str at the entry points), as typed here.

cimport cython

@cython.locals(start=Py_ssize_t, end=Py_ssize_t)
cpdef object json_or_miss(str text)

cpdef object _fast_or_miss(str text)

cdef double _BIG

@cython.locals(stack=list, mapping=dict, array=list)
cpdef bint _has_big_float(object value)
