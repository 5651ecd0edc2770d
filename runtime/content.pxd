# Cython declarations for content.py (an "augmenting" .pxd: content.py stays plain Python).
#
# When the runtime is compiled (setup.py, optional), the tag matcher of xml-inline runs
# over C integer positions, and its str methods (find, slicing, indexing) become direct
# calls into CPython's string functions instead of attribute lookups and generic calls.
# The python-call-list walk indexes its token list with C integers, reads a token's first
# and last characters as C characters, and calls its helpers directly (cpdef).
# Only internal functions are typed, and only with the types their callers always pass
# (text: the str body of a region), so both runtimes give the same values.

cimport cython

@cython.locals(
    found=list, n=Py_ssize_t, pos=Py_ssize_t, skip=Py_ssize_t, close_len=Py_ssize_t, step=Py_ssize_t,
    start=Py_ssize_t, value_start=Py_ssize_t, k=Py_ssize_t, close=Py_ssize_t, at=Py_ssize_t, end=Py_ssize_t,
    opening=str, closing=str, tail=str, head_ws=bint, ws=bint, stops=str, head_opt=str,
)
cpdef list _split_matches(tuple config, tuple groups, str text)

@cython.locals(c=str)
cdef bint _holds_any(str text, str chars)

# python-call-list: tokens is the findall list (str items); first is a token's first character
@cython.locals(token=str, body=str, key=str, first=Py_UCS4, items=list, pairs=dict)
cpdef tuple _call_value(str text, list tokens, Py_ssize_t i, Py_ssize_t depth)

@cython.locals(token=str)
cpdef object _call_number(str text, list tokens, Py_ssize_t i)

@cython.locals(tokens=list, calls=list, arguments=dict, i=Py_ssize_t, token=str, name=str, key=str, first=Py_UCS4)
cpdef list _parse_call_list(str text)
