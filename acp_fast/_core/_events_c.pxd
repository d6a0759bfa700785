# Cython declarations that compile _events_py.py as acp_fast._core._events_c.

cimport cython

@cython.locals(
    out=list, index=Py_ssize_t, count=Py_ssize_t, line=bytes, head=bytes,
    known_start=bytes, known_session=bytes, last_head=bytes,
    open_request=bytes, open_notification=bytes, open_response=bytes, shared=bint,
)
cpdef list join_events(
    list messages, list lines, list heads, dict method_parts, object method_part,
    object session_of, list odd,
)
