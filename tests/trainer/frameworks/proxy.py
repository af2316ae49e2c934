"""A loopback TCP relay that lets only its first client through: a deterministic partial outage.

Each trainer worker process keeps one gRPC connection to the gateway. Through this relay the
first worker to connect reaches the gateway and every later connection is closed at once, so
one batch holds both real answers and outage fallbacks, whichever worker came first.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from types import TracebackType


class FirstClientOnly:
    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        self.accepted = 0
        self._threads: list[threading.Thread] = []
        self._sockets: list[socket.socket] = []
        self._closed = False

    def __enter__(self) -> FirstClientOnly:
        thread = threading.Thread(target=self._accept, daemon=True)
        thread.start()
        self._threads.append(thread)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._closed = True
        self._server.close()
        for sock in self._sockets:
            sock.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            self.accepted += 1
            if self.accepted > 1:
                client.close()  # everyone but the first: the gateway is "down"
                continue
            upstream = socket.create_connection(self.upstream)
            self._sockets += [client, upstream]
            for source, target in ((client, upstream), (upstream, client)):
                thread = threading.Thread(target=self._pipe, args=(source, target), daemon=True)
                thread.start()
                self._threads.append(thread)

    @staticmethod
    def _pipe(source: socket.socket, target: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                target.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, target):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
