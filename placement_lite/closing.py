"""An application's answer that runs something once the server has
closed it: after its last byte is written (PEP 3333), or when the
client went away."""


class Answer:
    """``answer``, iterated as it is; closing it calls ``then()``."""

    def __init__(self, answer, then):
        self._answer = answer
        self._then = then

    def __iter__(self):
        return iter(self._answer)

    def close(self):
        try:
            close = getattr(self._answer, 'close', None)
            if close is not None:
                close()
        finally:
            self._then()
