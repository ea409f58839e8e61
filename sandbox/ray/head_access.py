"""What a client needs to reach a head's dashboard, the same for a real head and a simulated one: its URL (the
head's `host` and its "dashboard" port) and the bearer token header when the head env turned token auth on
(`real_params.auth_token`)."""

from __future__ import annotations


class HeadAccess:
    """A head's dashboard address and auth headers, from its `host`, `ports` and `_token`."""

    host: str
    _token: str | None

    @property
    def ports(self) -> dict[str, int]:
        raise NotImplementedError(f"{type(self).__name__} does not say its ports")

    @property
    def dashboard_url(self) -> str:
        return f"http://{self.host}:{self.ports['dashboard']}"

    @property
    def auth_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._token}"} if self._token else {}
