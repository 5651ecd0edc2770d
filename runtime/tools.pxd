# Cython declarations for tools.py (an "augmenting" .pxd: tools.py stays plain Python).
#
# Compiled (setup.py, optional), coerce_value reads the parameter schemas with direct
# dict lookups. Only locals that the code makes plain dicts first are typed, so both
# runtimes accept the same values and give the same results.

cimport cython

@cython.locals(properties=dict, plain=dict)
cpdef object coerce_value(object value, object table)

cdef inline bint _adds_types(object schema)

# (cimported by deltas.pxd: the delta stream reads a parameter's types once per key)
@cython.locals(found=list)
cpdef tuple schema_types(object schema)
