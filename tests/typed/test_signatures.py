"""Handler signatures are checked when a subclass is defined: a method the
SDK would call with the wrong binding raises TypeError at once."""

from __future__ import annotations

import functools
from typing import Any

import pytest

import acp_fast as acp
from acp_fast.schema import v1


def test_the_official_sdk_keyword_style_is_refused_with_a_pointer():
    with pytest.raises(TypeError) as caught:

        class Pasted(acp.BaseAgent):
            async def new_session(self, cwd, mcp_servers=None, **kw):  # type: ignore[no-untyped-def]
                return None

    message = str(caught.value)
    assert "Pasted.new_session(self, cwd, mcp_servers=None, **kw)" in message
    assert "(handles `session/new`)" in message
    assert "async def new_session(self, request: v1.NewSessionRequest)" in message
    assert "docs/migration.md" in message
    assert "keyword style" in message
    assert "(request.cwd, request.mcp_servers)" in message


def test_the_pointer_names_the_fields_of_the_methods_own_request():
    with pytest.raises(TypeError) as caught:

        class Pasted(acp.BaseAgent):
            async def prompt(self, session_id, prompt, **kw):  # type: ignore[no-untyped-def]
                return None

    message = str(caught.value)
    assert "(request.session_id, request.prompt)" in message
    assert "mcp_servers" not in message


@pytest.mark.parametrize(
    ("source", "problem"),
    [
        ("async def prompt(self): ...", "fewer than 1"),
        ("async def prompt(self, request, extra): ...", "more than 1"),
        ("async def prompt(self, request, *, flag): ...", "keyword arguments"),
        ("async def prompt(self, request, **kwargs): ...", r"\*\*kwargs"),
        ("async def ext_method(self, method): ...", "fewer than 2"),
    ],
)
def test_other_wrong_signatures_are_refused(source: str, problem: str):
    namespace: dict[str, Any] = {}
    exec(source, namespace)
    function = next(v for k, v in namespace.items() if not k.startswith("__"))
    with pytest.raises(TypeError, match=problem):
        type("Wrong", (acp.BaseAgent,), {function.__name__: function})


def test_client_and_v2_bases_are_checked_too():
    async def session_update(self: Any, session_id: str, update: Any) -> None: ...

    with pytest.raises(TypeError, match="session_update"):
        type("WrongClient", (acp.BaseClient,), {"session_update": session_update})
    with pytest.raises(TypeError, match="BaseAgentV2"):
        type("WrongV2", (acp.BaseAgentV2,), {"new_session": session_update})


def test_right_signatures_and_generic_wrappers_are_accepted():
    class Right(acp.BaseAgent):
        async def new_session(self, request: v1.NewSessionRequest) -> v1.NewSessionResponse:
            return v1.NewSessionResponse(session_id="s")

        async def prompt(self, req: v1.PromptRequest, /) -> v1.PromptResponse:
            return v1.PromptResponse(stop_reason="end_turn")

        async def cancel(self, *args: Any, **kwargs: Any) -> None: ...

        async def ext_method(self, method: str, params: Any) -> Any:
            return None

        def helper(self, a: int, b: int, **kw: Any) -> int:  # not a handler
            return a + b

    assert Right().helper(1, 2) == 3


@pytest.mark.parametrize(
    ("base", "source", "expected"),
    [
        (
            acp.BaseAgent,
            "def prompt(self, request): ...",
            "async def prompt(self, request: v1.PromptRequest) -> v1.PromptResponse",
        ),
        (
            acp.BaseAgent,
            "async def prompt(self, request):\n    yield None",
            "async def prompt(self, request: v1.PromptRequest) -> v1.PromptResponse",
        ),
        (
            acp.BaseAgent,
            "def cancel(self, notification): ...",
            "async def cancel(self, notification: v1.CancelNotification) -> None",
        ),
        (
            acp.BaseClient,
            "def session_update(self, notification): ...",
            "async def session_update(self, notification: v1.SessionNotification) -> None",
        ),
        (
            acp.BaseClient,
            "def ext_method(self, method, params): ...",
            "async def ext_method(self, method: str, params: Any) -> Any",
        ),
        (
            acp.BaseAgentV2,
            "def prompt(self, request): ...",
            "async def prompt(self, request: v2.PromptRequest) -> str",
        ),
        (
            acp.BaseClientV2,
            "def session_update(self, notification): ...",
            "async def session_update(self, notification: v2.UpdateSessionNotification) -> None",
        ),
    ],
)
def test_a_plain_def_handler_is_refused_with_the_signature_to_write(
    base: type, source: str, expected: str
) -> None:
    namespace: dict[str, Any] = {}
    exec(source, namespace)
    function = next(v for k, v in namespace.items() if not k.startswith("__"))
    with pytest.raises(TypeError) as caught:
        type("Synchronous", (base,), {function.__name__: function})
    message = str(caught.value)
    assert message.startswith(f"Synchronous.{function.__name__}(")
    assert "async" in message.split("Expected:")[0]
    assert f"Expected: {expected}" in message


def test_wrappers_that_return_a_coroutine_are_accepted() -> None:
    def passing(method: Any) -> Any:
        @functools.wraps(method)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            return method(*args, **kwargs)

        return wrapper

    class Wrapped(acp.BaseAgent):
        @passing
        async def prompt(self, request: v1.PromptRequest) -> v1.PromptResponse:
            return v1.PromptResponse(stop_reason="end_turn")

        def cancel(self, *args: Any, **kwargs: Any) -> Any:
            return self.prompt(*args, **kwargs)

    assert Wrapped.prompt.__name__ == "prompt"


@pytest.mark.parametrize(
    ("base", "name", "meant"),
    [
        (acp.BaseAgent, "new_sesion", "new_session"),
        (acp.BaseAgent, "newSession", "new_session"),
        (acp.BaseAgent, "promt", "prompt"),
        (acp.BaseAgent, "cancle", "cancel"),
        (acp.BaseAgent, "ext_mehtod", "ext_method"),
        (acp.BaseAgent, "new_sessiom", "new_session"),
        (acp.BaseClient, "requestPermission", "request_permission"),
        (acp.BaseClient, "sesion_update", "session_update"),
        (acp.BaseAgentV2, "new_sesion", "new_session"),
        (acp.BaseClientV2, "sesion_update", "session_update"),
    ],
)
def test_a_misspelled_handler_gets_a_warning_naming_the_handler(
    base: type, name: str, meant: str
) -> None:
    async def method(self: object, request: object) -> None: ...

    with pytest.warns(acp.HandlerNameWarning) as caught:
        defined = type(base)("Mine", (base,), {"__qualname__": "Mine", name: method})
    assert len(caught) == 1
    message = str(caught[0].message)
    assert f"Mine.{name} is not a handler of {base.__name__}" in message
    assert f"did you mean {meant}?" in message
    assert f"name it _{name} to keep this quiet" in message
    assert getattr(defined, name) is method  # defined all the same


@pytest.mark.parametrize(
    ("base", "name"),
    [
        (acp.BaseAgent, "fetch_weather"),
        (acp.BaseAgent, "prompts"),  # a handler's name with more at either end
        (acp.BaseAgent, "new_session_id"),
        (acp.BaseAgent, "close_sessions"),
        (acp.BaseAgent, "list_sessions_for"),
        (acp.BaseAgent, "on_new_session"),
        (acp.BaseAgent, "set_session_model"),  # the official SDK's unstable name
        (acp.BaseAgent, "get_session"),  # a whole word away
        (acp.BaseAgent, "save_session"),
        (acp.BaseAgent, "on_cancel"),
        (acp.BaseAgentV2, "load_session"),
        (acp.BaseClient, "write_file"),
        (acp.BaseClient, "send_update"),
        (acp.BaseClient, "on_session_update"),
        (acp.BaseClient, "session_updates"),
    ],
)
def test_helpers_named_unlike_a_misspelling_are_left_alone(
    base: type, name: str, recwarn: pytest.WarningsRecorder
) -> None:
    async def method(self: object) -> None: ...

    type(base)("Mine", (base,), {"__qualname__": "Mine", name: method})
    assert not [w for w in recwarn if issubclass(w.category, acp.HandlerNameWarning)]


def test_private_names_plain_defs_and_real_handlers_are_left_alone(
    recwarn: pytest.WarningsRecorder,
) -> None:
    class Quiet(acp.BaseAgent):
        async def _promt(self) -> None: ...

        def promt_text(self) -> str:  # not a coroutine function: no handler
            return ""

        async def set_session_mode(
            self, request: v1.SetSessionModeRequest
        ) -> v1.SetSessionModeResponse:
            return v1.SetSessionModeResponse()

    assert Quiet is not None
    assert not [w for w in recwarn if issubclass(w.category, acp.HandlerNameWarning)]
