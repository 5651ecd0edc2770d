# Cython declarations for deltas.py (an "augmenting" .pxd: deltas.py stays plain Python).
#
# Compiled (setup.py, optional), the classes of the delta stream become extension types
# whose state lives in C struct fields, and their internal steps are C methods (cdef):
# DeltaStream._chunk handles the common chunk with direct dict reads and C calls into the
# scanner and the calls; JsonScanner reads its text over C positions and characters and
# tells its handler (a _Handler, in C) what it read. What Python code outside this module
# uses (DeltaStream.feed/finish, JsonScanner.feed/finish, Plan and TextField, which
# respc.openai fills in) stays callable and readable from Python.

cimport cython

from respc.runtime.base cimport ParserBase
from respc.runtime.tools cimport schema_types

cdef Py_ssize_t _VALUE, _AFTER, _KEY, _COLON, _STRING, _XSTRING, _NUMBER, _WORD, _DONE, _BAD
cdef Py_ssize_t _MERGE_PARTS, _LONG_NUMBER, _DEEP, _SEEDS_KEPT

@cython.locals(last=Py_UCS4)
cdef bint _ends_open(str text)

@cython.locals(c=Py_UCS4)
cdef bint _plain_string(str text)

@cython.locals(size=Py_ssize_t, chars=list, x=double)
cpdef str new_id(rng)

cpdef str unseeded_id()

cpdef str seeded_id(seed, Py_ssize_t index)

cpdef str _dumps(value)

cpdef str _tail_edge(str text, str tail)

@cython.locals(c=Py_UCS4, quote=Py_ssize_t, slash=Py_ssize_t, j=Py_ssize_t)
cdef Py_ssize_t _run_end(str text, Py_ssize_t i, Py_ssize_t n) except? -1

@cython.locals(n=Py_ssize_t)
cdef Py_ssize_t _digits(str token, Py_ssize_t i)

@cython.locals(n=Py_ssize_t, i=Py_ssize_t, j=Py_ssize_t)
cdef bint _json_number(str token)


@cython.final
cdef class _Text:
    cdef list parts
    cdef list blocks
    cdef list big
    cdef add(self, str piece)
    cpdef str value(self)


cdef class JsonScanner


cdef class _Handler:
    cdef public Py_ssize_t max_depth
    cdef public JsonScanner scanner
    @cython.locals(scanner=JsonScanner)
    cdef flush(self)
    cdef begin(self, str kind, Py_ssize_t depth)
    cdef key(self, str name, Py_ssize_t depth)
    cdef text(self, str piece)
    cdef end(self, Py_ssize_t depth)


cdef class _Forward(_Handler):
    cdef object handler
    cdef begin(self, str kind, Py_ssize_t depth)
    cdef key(self, str name, Py_ssize_t depth)
    cdef text(self, str piece)
    cdef end(self, Py_ssize_t depth)


@cython.final
cdef class JsonScanner:
    cdef public object handler
    cdef _Handler sink
    cdef public Py_ssize_t max_depth
    cdef public Py_ssize_t state
    cdef public list stack
    cdef public str partial
    cdef public str high
    cdef public list key_parts
    cdef public bint in_key
    cdef public bint first
    cdef public list out
    cdef public list keys
    cdef public bint odd
    cdef str piece
    cdef Py_ssize_t run_start
    cdef Py_ssize_t run_end
    cdef Py_ssize_t at

    cpdef feed(self, str text)
    cpdef finish(self)
    cpdef track(self)
    cpdef bint untrack(self)
    cdef bint in_value_string(self)
    @cython.locals(i=Py_ssize_t, n=Py_ssize_t, j=Py_ssize_t, depth=Py_ssize_t, state=Py_ssize_t, limit=Py_ssize_t,
                   c=Py_UCS4, top=str, token=str)
    cdef _read(self, str text)
    @cython.locals(text=str)
    cdef _flush(self)
    @cython.locals(out=list, run=str, text=str)
    cdef str _take(self)
    cdef _run(self, Py_ssize_t start, Py_ssize_t end)
    cdef _cut(self)
    cdef _put(self, str text)
    cdef _rewritten(self, str text)
    cdef _begin(self, str kind, Py_ssize_t depth)
    cdef _close(self, str c, Py_ssize_t i)
    @cython.locals(depth=Py_ssize_t)
    cdef _value_end(self)
    cdef _scalar_end(self, str token, Py_ssize_t start, Py_ssize_t end)
    @cython.locals(piece=str)
    cpdef str string_text(self, str text)
    @cython.locals(key=bint, have=Py_ssize_t, size=Py_ssize_t, quote=Py_ssize_t, slash=Py_ssize_t, j=Py_ssize_t,
                   c=Py_UCS4, escape=str, piece=str)
    cdef Py_ssize_t _string(self, str text, Py_ssize_t i, Py_ssize_t n) except? -1
    @cython.locals(code=Py_ssize_t, high=Py_ssize_t, digits=str)
    cdef object _escape(self, str escape)
    cdef str _lone_high(self)
    @cython.locals(depth=Py_ssize_t, escaped=str, seen=set, text=str, start=Py_ssize_t)
    cdef Py_ssize_t _string_end(self, Py_ssize_t i) except? -1


@cython.final
cdef class _Call:
    cdef public object index
    cdef public object name
    cdef public object id
    cdef public bint sent
    cdef public _Text sent_text
    cdef public list pending
    cdef public bint off
    cdef public bint complete
    cdef public list hold
    cdef public str hold_key
    cdef public bint dropped


@cython.final
cdef class _Out:
    cdef list deltas
    cdef object kind
    cdef list pieces
    cdef add(self, kind, str piece)
    cdef delta(self, dict delta)
    @cython.locals(pieces=list)
    cdef flush(self)
    cdef list take(self, list into)


@cython.final
cdef class Plan:
    cdef public object body
    cdef public object shape
    cdef public bint each
    cdef public object name
    cdef public object args
    cdef public object id
    cdef public object xml_parser
    cdef public object xml_pattern
    cdef public str xml_tail
    cdef public bint xml_split
    cdef public bint xml_bounded


@cython.final
cdef class TextField:
    cdef public str key
    cdef public bint strip
    cdef public object join
    cdef public bint stream
    cdef public Py_ssize_t blocks
    cdef public bint started
    cdef public str ws
    cdef public bint join_due
    cdef public bint ready
    cdef public bint live
    @cython.locals(n=Py_ssize_t, start=Py_ssize_t, end=Py_ssize_t, core=str)
    cpdef str piece(self, str text)


cdef class _Region
cdef class _Router(_Handler)
cdef class _XmlReader
cdef class _CallListReader


cdef class DeltaStream:
    cdef ParserBase _parser
    cdef bint _spans
    cdef object _tools
    cdef dict _typed
    cdef object _seed
    cdef object _rng
    cdef Py_ssize_t _drawn
    cdef public str reasoning_key
    cdef dict _text
    cdef object _seen
    cdef TextField _seen_field
    cdef Plan _plan
    cdef list _calls
    cdef _Region _region
    cdef _Out _out
    cdef bint _first
    cdef bint _finished
    cdef public object message
    cdef public list events

    @cython.locals(events=list, parser=ParserBase, field=TextField)
    cpdef list feed(self, text)
    @cython.locals(call=_Call)
    cpdef tuple finish(self, bint length=*)
    cpdef list sent_ids(self)
    @cython.locals(index=Py_ssize_t)
    cpdef str new_id(self)
    @cython.locals(text=str, field=TextField, region=_Region, scanner=JsonScanner, call=_Call)
    cdef list _chunk(self, list events, name)
    cdef list _single(self, list events, dict delta)
    @cython.locals(text=str, field=TextField, region=_Region, call=_Call)
    cdef _events(self, list events, name)
    cdef _text_chunk(self, TextField field, str text)
    @cython.locals(plan=Plan, region=_Region, call=_Call)
    cdef _call_open(self, caps)
    @cython.locals(call=_Call)
    cdef _Call _new_call(self)
    @cython.locals(plan=Plan)
    cdef _learn(self, _Call call, str source, dict found)
    cdef _maybe_start(self, _Call call, bint last)
    @cython.locals(table=dict, kinds=tuple, kind=object)
    cdef int _typing(self, _Call call, str key) except -1
    cdef _hold(self, _Call call, str key, str kind)
    cdef object _typed_value(self, _Call call, str key, value)
    cdef _write(self, _Call call, str piece)
    @cython.locals(held=str, first=Py_UCS4, odd=bint)
    cdef _hold_end(self, _Call call)
    @cython.locals(region=_Region, call=_Call, canonical=str, sent=str)
    cdef _call_close(self, value)
    cdef _send_rest(self, _Call call, str text)


@cython.final
cdef class _Region:
    cdef public list calls
    cdef public object caps
    cdef public JsonScanner scanner
    cdef public _Router router
    cdef public _XmlReader xml
    cdef public _CallListReader call_list
    cpdef part(self)


cdef class _Router(_Handler):
    cdef DeltaStream parser
    cdef public _Call target


cdef class _ArgsHandler(_Router):
    cdef _Call call
    cdef str current
    @cython.locals(call=_Call)
    cdef begin(self, str kind, Py_ssize_t depth)
    cdef key(self, str name, Py_ssize_t depth)
    cdef text(self, str piece)
    @cython.locals(call=_Call)
    cdef end(self, Py_ssize_t depth)


cdef class _CallsHandler(_Router):
    cdef _Region region
    cdef Py_ssize_t top
    cdef _Call call
    cdef str member
    cdef str current
    cdef list parts
    cdef Py_ssize_t args_depth
    @cython.locals(parser=DeltaStream, plan=Plan, call=_Call, member=str)
    cdef begin(self, str kind, Py_ssize_t depth)
    cdef key(self, str name, Py_ssize_t depth)
    cdef text(self, str piece)
    @cython.locals(call=_Call)
    cdef end(self, Py_ssize_t depth)


cdef class _XmlReader:
    cdef DeltaStream parser
    cdef _Call call
    cdef _Text rest
    cdef str edge
    cdef Py_ssize_t count
    cdef str mark
    @cython.locals(plan=Plan, tail=str, seen=str, body=str, rest=str, end=Py_ssize_t, first=Py_ssize_t)
    cdef feed(self, str text)
    @cython.locals(parser=DeltaStream, call=_Call)
    cdef _parameter(self, dict found)


cdef class _CallListReader:
    cdef DeltaStream parser
    cdef _Region region
    cdef Py_ssize_t depth
    cdef str quote
    cdef bint escaped
    cdef list piece
    cdef _Call call
    cdef Py_ssize_t count
    @cython.locals(start=Py_ssize_t, i=Py_ssize_t)
    cdef feed(self, str text)
    @cython.locals(parser=DeltaStream)
    cdef _call_start(self, str name)
    @cython.locals(parser=DeltaStream, call=_Call, text=str)
    cdef _argument(self, bint last)
