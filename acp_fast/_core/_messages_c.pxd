# Cython declarations that compile _messages_py.py as acp_fast._core._messages_c.

cpdef bint is_valid_id(object value)
cpdef int classify(object jsonrpc, object id, object method, int params_head, bint has_result, bint has_error)
cpdef int classify_envelope(object envelope)
cpdef int params_head_of(object params)
