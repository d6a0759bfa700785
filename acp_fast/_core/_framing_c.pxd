# Cython declarations that compile _framing_py.py as acp_fast._core._framing_c.
# Kept in step with the .py by hand: every cdef attribute here is a slot there.

cimport cython

cdef class IdScanner:
    cdef Py_ssize_t _depth
    cdef bint _done
    cdef bint _escaped
    cdef bint _expect_key
    cdef bint _in_key
    cdef bint _in_string
    cdef bint _in_value
    cdef bytes _key
    cdef bint _key_is_id
    cdef bytes _value
    cdef public bytes id_text

    @cython.locals(
        i=Py_ssize_t, q=Py_ssize_t, k=Py_ssize_t, p=Py_ssize_t, run=Py_ssize_t,
        key_start=Py_ssize_t, value_start=Py_ssize_t, c=int,
    )
    cpdef void feed(self, bytes data, Py_ssize_t start, Py_ssize_t end)
    cdef void _add_key(self, bytes data, Py_ssize_t start, Py_ssize_t end)
    cdef void _add_value(self, bytes data, Py_ssize_t start, Py_ssize_t end)

cdef class LineBuffer:
    cdef public Py_ssize_t max_line
    cdef public Py_ssize_t head_size
    cdef list _fragments
    cdef Py_ssize_t _pending
    cdef Py_ssize_t _discarded
    cdef bytes _head
    cdef bytes _tail
    cdef IdScanner _scanner

    @cython.locals(
        start=Py_ssize_t, end=Py_ssize_t, nl=Py_ssize_t, last=Py_ssize_t, max_line=Py_ssize_t,
        lines=list, rest=bytes,
    )
    cpdef list feed(self, bytes data)
    cpdef object close(self)
    cdef void _reset(self)
    cdef bytes _id_text(self)
    @cython.locals(size=Py_ssize_t)
    cdef void _carry(self, bytes data, Py_ssize_t start, Py_ssize_t end)
    cdef void _finish_carried(self, bytes data, Py_ssize_t nl, list out)
    @cython.locals(size=Py_ssize_t)
    cdef void _keep_tail(self, bytes data, Py_ssize_t start, Py_ssize_t end)

cdef IdScanner _scanned(list fragments)
@cython.locals(have=Py_ssize_t)
cdef bytes _head_of(list fragments, Py_ssize_t size)
@cython.locals(have=Py_ssize_t)
cdef bytes _tail_of(list fragments, Py_ssize_t size)
