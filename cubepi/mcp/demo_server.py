"""A small example MCP server shipped with cubepi, for ``cubepi demo``.

Run it alone with ``python -m cubepi.mcp.demo_server``.

It speaks stdio, in both protocol eras (2026-07-28 and the ``initialize`` handshake), and needs nothing but
the ``mcp`` extra: no network, no API key. The SDK is imported only when the server runs, so importing this
module is free. (No ``from __future__ import annotations`` here: MCPServer reads the tools' annotations at
runtime, and the models are local to `build_server`.)
"""

from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

__all__ = ["build_server", "main"]

_FORECASTS = {
    "paris": ("light rain", 14.0),
    "lyon": ("sunny", 19.5),
    "tokyo": ("cloudy", 22.0),
}


def build_server() -> "MCPServer":
    """The demo server: `add`, `greet` and `forecast` (which returns structured content)."""
    from mcp.server.mcpserver import MCPServer
    from pydantic import BaseModel, Field

    server = MCPServer("cubepi-demo", log_level="WARNING")

    class DayForecast(BaseModel):
        day: int
        conditions: str
        high_c: float

    class Forecast(BaseModel):
        city: str
        days: list[DayForecast]

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool()
    def greet(name: str, style: Literal["plain", "excited"] = "plain") -> str:
        """Greet someone by name."""
        return f"Hello, {name}!" if style == "excited" else f"Hello, {name}."

    @server.tool()
    def forecast(
        city: str = Field(description="A city name, e.g. Paris."),
        days: int = Field(default=2, ge=1, le=5, description="How many days ahead."),
    ) -> Forecast:
        """A made-up weather forecast (deterministic, offline)."""
        conditions, high = _FORECASTS.get(city.lower(), ("clear", 20.0))
        ahead = [DayForecast(day=day, conditions=conditions, high_c=high + day) for day in range(1, days + 1)]
        return Forecast(city=city, days=ahead)

    return server


def main() -> None:
    """Run the demo server over stdio."""
    build_server().run("stdio")


if __name__ == "__main__":
    main()
