"""OpenAI-style error responses.

Every failure answers ``{"error": {"message", "type", "param", "code"}}`` with
an HTTP status the OpenAI SDKs map to their exception classes (400
BadRequestError, 401 AuthenticationError, 413, 429 RateLimitError, 502/504
InternalServerError...). Messages name the problem, never echo private text.
"""

from __future__ import annotations

import json

from fastapi.responses import JSONResponse


class ApiError(Exception):
    def __init__(self, status: int, message: str, *, type: str = "invalid_request_error",
                 code: str | None = None, param: str | None = None, headers: dict | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.type = type
        self.code = code
        self.param = param
        self.headers = headers or {}

    def body(self) -> dict:
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}

    def response(self, extra_headers: dict | None = None) -> JSONResponse:
        return JSONResponse(self.body(), status_code=self.status, headers={**self.headers, **(extra_headers or {})})

    def sse(self) -> bytes:
        """The error as one SSE event (the OpenAI SDK raises APIError on an ``error`` event)."""
        return f"data: {json.dumps(self.body(), ensure_ascii=False)}\n\n".encode()


def bad_request(message: str, *, param: str | None = None, code: str = "invalid_request") -> ApiError:
    return ApiError(400, message, param=param, code=code)
