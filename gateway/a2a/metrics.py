"""Every A2A call the gateway forwards is counted as MCP calls are (`tool_execution`): the agent's path as
the server, the method by its family (v1.0 `SendMessage` and v0.3 `message/send` are one), success,
duration and sizes. Never raises: metrics must not break traffic."""

from __future__ import annotations

import logging
import time

from core.metric_choices import MetricType, ToolMethod
from core.metrics_client import emit

logger = logging.getLogger(__name__)

CLIENT_NAME = "a2a"
FAMILIES = {
    "SendMessage": ToolMethod.A2A_SEND,
    "message/send": ToolMethod.A2A_SEND,
    "SendStreamingMessage": ToolMethod.A2A_STREAM,
    "message/stream": ToolMethod.A2A_STREAM,
    "GetTask": ToolMethod.A2A_GET,
    "tasks/get": ToolMethod.A2A_GET,
    "ListTasks": ToolMethod.A2A_LIST,
    "CancelTask": ToolMethod.A2A_CANCEL,
    "tasks/cancel": ToolMethod.A2A_CANCEL,
    "SubscribeToTask": ToolMethod.A2A_SUBSCRIBE,
    "tasks/resubscribe": ToolMethod.A2A_SUBSCRIBE,
    "GetExtendedAgentCard": ToolMethod.A2A_EXTENDED_CARD,
    "agent/getAuthenticatedExtendedCard": ToolMethod.A2A_EXTENDED_CARD,
}


def family(method: str) -> str | None:
    if method in FAMILIES:
        return FAMILIES[method]
    if "PushNotificationConfig" in method:
        return ToolMethod.A2A_PUSH_CONFIG
    return None  # a method A2A does not define is forwarded but not counted


def report(agent_path: str, method: str, *, success: bool, started: float, sent: int, received: int) -> None:
    try:
        counted = family(method)
        if counted is None:
            return
        emit(
            MetricType.TOOL_EXECUTION,
            duration_ms=(time.perf_counter() - started) * 1000,
            dimensions={
                "server": agent_path,
                "method": str(counted),
                "tool_name": "",
                "client_name": CLIENT_NAME,
                "success": success,
                "input_size_bytes": sent,
                "output_size_bytes": received,
            },
        )
    except Exception:
        logger.exception("A2A metrics not reported")
