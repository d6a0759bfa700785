# Cython declarations that compile _requests_py.py as acp_fast._core._requests_c.
# Kept in step with the .py by hand: every cdef attribute here is a slot there.

cimport cython

cdef class OutgoingRequest:
    cdef public object id
    cdef public str method
    cdef public int flag
    cdef public int settlement
    cdef public object value
    cdef public bint ordered
    cdef public object consumer
    cdef public object route
    cdef public object data

    cpdef bint arm(self)
    cpdef bint take_armed(self)
    cpdef void disarm(self)
    cpdef bint settle(self, int settlement, object value)

cdef class IncomingRequest:
    cdef public object id
    cdef public bint cancelled
    cdef public object marker

cdef class RequestTable:
    cdef dict _outgoing
    cdef dict _incoming
    cdef object _next_id
    cdef public bint closing

    @cython.locals(request=OutgoingRequest)
    cpdef OutgoingRequest new_request(self, str method)
    cpdef void register(self, OutgoingRequest request)
    cpdef OutgoingRequest take_response(self, object request_id)
    cpdef OutgoingRequest pending(self, object request_id)
    cpdef list fail_all(self)
    @cython.locals(incoming=IncomingRequest)
    cpdef IncomingRequest register_incoming(self, object request_id)
    cpdef bint in_flight(self, object request_id)
    cpdef IncomingRequest cancel_incoming(self, object request_id)
    cpdef bint is_current(self, IncomingRequest incoming)
    cpdef void remove_incoming(self, IncomingRequest incoming)
