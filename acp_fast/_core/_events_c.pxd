# Cython declarations that compile _events_py.py as acp_fast._core._events_c.
# A line (and the start of lines known to name a session, cut from one)
# stays an object: the trace writer takes any bytes-like message.

cimport cython

@cython.locals(
    out=list, index=Py_ssize_t, count=Py_ssize_t, head=bytes,
    known_session=bytes, last_head=bytes,
    open_request=bytes, open_notification=bytes, open_response=bytes, shared=bint,
)
cpdef list join_events(
    list messages, list lines, list heads, dict method_parts, object method_part,
    object session_of, list odd,
)

@cython.locals(
    read=int, written=int, one=int, joined_lines=int, form=int, count=Py_ssize_t,
    index=Py_ssize_t, item=tuple, head=bytes, payload=list,
)
cpdef bint entry_lines(
    list items, list ts_list, list wall_list, list heads, list lines, list bounds,
)

cdef class EntryQueue:
    cdef public object clock
    cdef public object count_messages
    cdef public Py_ssize_t dropped
    cdef public object encode
    cdef public Py_ssize_t encoded_bytes
    cdef public Py_ssize_t enqueued_bytes
    cdef public Py_ssize_t enqueued_entries
    cdef public Py_ssize_t inline_bytes
    cdef public Py_ssize_t inline_entries
    cdef public Py_ssize_t max_bytes
    cdef public Py_ssize_t max_entries
    cdef public list pending
    cdef public object record_now
    cdef public bint sync
    cdef public Py_ssize_t written_bytes
    cdef public Py_ssize_t written_entries

    @cython.locals(pending=list)
    cpdef void put(self, object ends, object data, int form, Py_ssize_t oversized, Py_ssize_t size)

cdef class HopEntries:
    cdef public object ends_in
    cdef public object ends_out
    cdef public EntryQueue queue

    cpdef void record_in(self, object lines, Py_ssize_t size)
    cpdef void record_out(self, object data)
