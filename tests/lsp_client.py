"""A small LSP client for tests and benchmarks: JSON-RPC with Content-Length framing over
the pipes of a ``gradguard server`` subprocess. Every wait has a timeout, so a server
that hangs fails the caller instead of blocking it."""

from __future__ import annotations

import itertools
import json
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Optional, Sequence

SERVER = (sys.executable, "-m", "gradguard", "server")


class ServerError(AssertionError):
    pass


class Client:
    def __init__(self, command: Sequence[str] = SERVER, cwd: Optional[Path] = None,
                 timeout: float = 30.0) -> None:
        self.timeout = timeout
        self.process = subprocess.Popen(list(command), stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        cwd=cwd)
        self.incoming: queue.Queue = queue.Queue()
        self.notifications: list[dict] = []  # received, not yet taken by a wait
        self.ids = itertools.count(1)
        self.stderr: list[bytes] = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=lambda: self.stderr.extend(self.process.stderr),
                         daemon=True).start()

    # ----------------------------------------------------------------- framing
    def _read(self) -> None:
        stream = self.process.stdout
        while True:
            length = None
            while True:
                line = stream.readline()
                if not line:
                    self.incoming.put(None)  # the server closed its output
                    return
                line = line.strip()
                if not line:
                    break
                name, _, value = line.decode("ascii").partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            if length is None:
                continue
            self.incoming.put(json.loads(stream.read(length)))

    def send(self, message: dict) -> None:
        self.burst([message])

    def burst(self, messages: Sequence[dict]) -> None:
        """Send messages in one write: they arrive together."""
        frames = []
        for message in messages:
            body = json.dumps({"jsonrpc": "2.0", **message}).encode("utf-8")
            frames.append(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.process.stdin.write(b"".join(frames))
        self.process.stdin.flush()

    def _next(self, deadline: float) -> dict:
        try:
            message = self.incoming.get(timeout=max(deadline - time.monotonic(), 0))
        except queue.Empty:
            raise ServerError(f"no message from the server in time; stderr: "
                              f"{b''.join(self.stderr).decode(errors='replace')}") from None
        if message is None:
            raise ServerError(f"the server closed its output; stderr: "
                              f"{b''.join(self.stderr).decode(errors='replace')}")
        if "method" in message and "id" in message:  # a request of the server's: accept
            self.send({"id": message["id"], "result": None})
        return message

    # ----------------------------------------------------------------- messages
    def notify(self, method: str, params=None) -> None:
        self.send({"method": method, **({} if params is None else {"params": params})})

    def request(self, method: str, params=None, timeout: Optional[float] = None):
        ident = next(self.ids)
        self.send({"id": ident, "method": method,
                   **({} if params is None else {"params": params})})
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            message = self._next(deadline)
            if message.get("id") == ident and "method" not in message:
                if "error" in message:
                    raise ServerError(f"{method}: {message['error']}")
                return message.get("result")
            if "method" in message and "id" not in message:
                self.notifications.append(message)

    def wait_for(self, method: str, accept: Callable[[dict], bool] = lambda params: True,
                 timeout: Optional[float] = None) -> dict:
        """The params of the first notification ``method`` that ``accept`` takes (those
        received earlier first); the others stay for later waits."""
        for index, message in enumerate(self.notifications):
            if message["method"] == method and accept(message.get("params")):
                return self.notifications.pop(index)["params"]
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            message = self._next(deadline)
            if "method" not in message or "id" in message:
                continue
            if message["method"] == method and accept(message.get("params")):
                return message["params"]
            self.notifications.append(message)

    def diagnostics(self, uri: str, version: Optional[int] = None,
                    timeout: Optional[float] = None) -> list[dict]:
        """The next diagnostics published for ``uri`` (for ``version`` when given)."""
        params = self.wait_for(
            "textDocument/publishDiagnostics",
            lambda p: p["uri"] == uri and (version is None or p.get("version") == version),
            timeout)
        return params["diagnostics"]

    # ----------------------------------------------------------------- life cycle
    def initialize(self, root: Path, capabilities: Optional[dict] = None) -> dict:
        result = self.request("initialize", {
            "processId": None,
            "rootUri": root.as_uri(),
            "workspaceFolders": [{"uri": root.as_uri(), "name": root.name}],
            "capabilities": capabilities if capabilities is not None else {
                "workspace": {"workspaceEdit": {"documentChanges": True}},
                "textDocument": {"codeAction": {"codeActionLiteralSupport": {
                    "codeActionKind": {"valueSet": ["quickfix", "source.fixAll"]}}}},
            },
        })
        self.notify("initialized", {})
        return result

    def open(self, uri: str, text: str, version: int = 1) -> None:
        self.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "python", "version": version, "text": text}})

    def change(self, uri: str, text: str, version: int) -> None:
        self.send(change(uri, text, version))

    def open_notebook(self, uri: str, cells: Sequence[tuple[str, str]], version: int = 1
                      ) -> list[str]:
        """Open a notebook document of ``cells`` (``("code" or "markdown", text)``), as
        an LSP 3.17 client syncs one; returns the cells' URIs."""
        uris = [f"{uri}#cell{number}" for number in range(len(cells))]
        self.notify("notebookDocument/didOpen", {
            "notebookDocument": {"uri": uri, "notebookType": "jupyter-notebook",
                                 "version": version,
                                 "cells": [{"kind": 2 if kind == "code" else 1, "document": cell}
                                           for cell, (kind, _) in zip(uris, cells)]},
            "cellTextDocuments": [{"uri": cell, "version": 1, "text": text,
                                   "languageId": "python" if kind == "code" else "markdown"}
                                  for cell, (kind, text) in zip(uris, cells)]})
        return uris

    def change_cell(self, notebook: str, version: int, cell: str, text: str,
                    cell_version: int) -> None:
        """A notebook change that replaces one cell's text."""
        self.notify("notebookDocument/didChange", {
            "notebookDocument": {"uri": notebook, "version": version},
            "change": {"cells": {"textContent": [{
                "document": {"uri": cell, "version": cell_version},
                "changes": [{"text": text}]}]}}})

    def close(self, timeout: Optional[float] = None) -> int:
        """shutdown, exit, and the server's exit status."""
        self.request("shutdown", timeout=timeout)
        self.notify("exit")
        try:
            return self.process.wait(timeout or self.timeout)
        finally:
            self.kill()

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
            try:
                stream.close()
            except OSError:
                pass


def change(uri: str, text: str, version: int) -> dict:
    """A didChange notification that replaces the whole text."""
    return {"method": "textDocument/didChange",
            "params": {"textDocument": {"uri": uri, "version": version},
                       "contentChanges": [{"text": text}]}}
