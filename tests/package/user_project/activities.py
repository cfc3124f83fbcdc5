"""The application's own activity. The project has Temporal's samples' layout (``activities``,
``workflows``, ``worker`` at its top level) and imports toolcalls only from its facade."""

from temporalio import activity


@activity.defn
async def summarize(lines: list[str]) -> str:
    return "; ".join(lines)
